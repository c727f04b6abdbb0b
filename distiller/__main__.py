"""`python -m distiller` and the `distill` script: signals are routed to the stop flag before anything heavy is
imported, so an early Ctrl-C is one line too, never a traceback; and every file distill creates (state dir,
database and its .wal, batch files, exports) is private to the user: umask 077."""

import os

from distiller import stop


def main() -> None:
    os.umask(os.umask(0o077) | 0o077)
    stop.install()
    try:
        from distiller.cli import main as cli_main
    except stop.Interrupted as exc:
        stop.report(exc)
    except Exception:  # a signal inside an extension's initialisation surfaces as its ImportError
        if not stop.requested():
            raise
        try:
            stop.check()
        except stop.Interrupted as exc:
            stop.report(exc)
    cli_main()


if __name__ == "__main__":
    main()
