"""`python -m distiller` and the `distill` script: signals are routed to the stop flag before anything heavy is
imported, so an early Ctrl-C is one line too, never a traceback; and every file distill creates (state dir,
database and its .wal, batch files, exports) is private to the user: umask 077."""

import os
import sys

from distiller import stop


def main() -> None:
    if sys.argv[1:3] == ["hook", "claude-code"]:  # on every prompt: straight to the hook, without the CLI's imports
        from distiller.recall.hook import main as hook_main

        sys.exit(hook_main(sys.argv[3:]))
    os.umask(os.umask(0o077) | 0o077)
    stop.install()
    try:
        # A first signal during the imports only sets the flag: an exception raised inside an extension's
        # initialisation (DuckDB's) can leave it half made, and the process may then crash instead of exiting.
        with stop.deferred():
            from distiller.cli import main as cli_main
        stop.check()
    except stop.Interrupted as exc:
        stop.report(exc)
    except Exception:  # a second signal inside an extension's initialisation surfaces as its ImportError
        if not stop.requested():
            raise
        try:
            stop.check()
        except stop.Interrupted as exc:
            stop.report(exc)
    cli_main()


if __name__ == "__main__":
    main()
