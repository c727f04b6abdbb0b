"""Errors the CLI turns into exit codes: 1 for errors, 75 when something is temporarily unavailable."""

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 75


class DistillError(Exception):
    """A failure to report to the user in one clear sentence, without a traceback."""

    exit_code = EXIT_ERROR


class Unavailable(DistillError):
    """Another process holds the run lock or the database; trying again later will work."""

    exit_code = EXIT_UNAVAILABLE
