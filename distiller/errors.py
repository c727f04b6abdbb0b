"""Errors the CLI turns into exit codes: 1 for errors, 75 when something is temporarily unavailable.

DistillError is deliberately not a click.ClickException. This module is imported by `distiller.stop` before the
signal handlers are installed, and importing click takes ~75 ms on this machine against ~22 ms for
`distiller.stop` as it is: a subclass would more than quadruple the start-up window in which a Ctrl-C is a
traceback. It would also pull the CLI toolkit into every library module (store, extractors, pipeline), and
ClickException.show() prints the message unescaped, while DistillGroup.main escapes control characters (a
message can carry a transcript's path). The CLI keeps the one translation: one escaped line, `exit_code`.
"""

import errno

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 75


class DistillError(Exception):
    """A failure to report to the user in one clear sentence, without a traceback."""

    exit_code = EXIT_ERROR


class UsageError(DistillError):
    """A command line that asks for something impossible (a bad flag value, missing arguments): exit 2, as click's
    own usage errors, before anything is read or written."""

    exit_code = EXIT_USAGE


class Unavailable(DistillError):
    """Another process holds the run lock or the database; trying again later will work."""

    exit_code = EXIT_UNAVAILABLE


_NO_SPACE = "free space on that file system, then run again"
_NOT_WRITABLE = ("make it writable by you, or choose another state dir (--state-dir or DISTILL_STATE_DIR)")
_ADVICE = {errno.ENOSPC: _NO_SPACE, errno.EDQUOT: _NO_SPACE, errno.EFBIG: _NO_SPACE,
           errno.EACCES: _NOT_WRITABLE, errno.EPERM: _NOT_WRITABLE, errno.EROFS: _NOT_WRITABLE}


def os_fault(action: str, path: object, exc: OSError, note: str = "") -> DistillError:
    """One line for a fault of the machine (a full disk, a read-only or foreign state dir): what failed, where,
    and what to do, instead of an internal error."""
    advice = _ADVICE.get(exc.errno or 0, "check the disk and its file system, then run again")
    return DistillError(f"cannot {action} {path}: {exc.strerror or exc}; {advice}{f' ({note})' if note else ''}")


def db_fault(path: object, detail: str) -> DistillError | None:
    """The same for DuckDB, which reports faults as text: None when `detail` is not a fault of the machine."""
    lower = detail.lower()
    if "no space left" in lower or "disk quota" in lower or "file too large" in lower:
        advice = _NO_SPACE
    elif "permission denied" in lower or "read-only file system" in lower:
        advice = _NOT_WRITABLE
    elif "invalidated" in lower:
        advice = "check free space and permissions, then run again"
    elif any(marker in lower for marker in _DAMAGED):
        return DistillError(
            f"database {path} is damaged ({detail.splitlines()[0][:200]}): move it aside (keep it for recovery) and "
            f"restore a backup, or let the next run start a new one (every transcript is then read again)"
        )
    else:
        return None
    return DistillError(f"cannot write database {path}: {detail.splitlines()[0][:200]}; {advice}")


_DAMAGED = ("corrupt", "could not read enough bytes", "not a valid duckdb database", "checksum")
