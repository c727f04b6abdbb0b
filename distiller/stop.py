"""Stopping on SIGTERM and SIGINT at a safe point, so a signal never leaves half of anything behind.

`install()` (the CLI entry point does it first thing, before the heavy imports) makes both signals set one
flag. Work that knows its safe points runs inside `deferred()`: there the first signal only sets the flag, and the
work calls `check()` between steps (between lines, files, model requests and commits), which raises `Interrupted`
so the caller can record the run as interrupted. Outside `deferred()`, or on a second signal, `Interrupted` is
raised at once. A long-lived loop (the in-process scheduler) sleeps with `wait(seconds)`, which returns early when a
stop was asked for.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from distiller.errors import DistillError

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Interrupted(DistillError):
    """A stop was asked for by a signal; the exit code is the shell's 128 + the signal number."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.exit_code = 128 + signum
        super().__init__(f"interrupted by {signal.Signals(signum).name}: stopped at a safe point; what was "
                         f"committed is kept, the next run goes on from there")


_requested = threading.Event()
_signum: list[int] = []
_deferring = [0]


def request(signum: int) -> None:
    """Ask the work in progress to stop at its next safe point (for a loop with a signal handler of its own)."""
    _signum[:] = [signum]
    _requested.set()


def _handler(signum: int, frame: object) -> None:
    first = not _requested.is_set()
    request(signum)
    if first and _deferring[0]:
        return  # the work in progress stops at its next safe point
    raise Interrupted(signum)


def install() -> None:
    """Route SIGTERM and SIGINT to the stop flag (main thread only, as Python requires)."""
    for signum in SIGNALS:
        signal.signal(signum, _handler)


def requested() -> bool:
    return _requested.is_set()


def check() -> None:
    """A safe point: raise Interrupted if a stop was asked for."""
    if _requested.is_set():
        raise Interrupted(_signum[0] if _signum else signal.SIGTERM)


def wait(seconds: float) -> bool:
    """Sleep up to `seconds`; True as soon as a stop is asked for."""
    return _requested.wait(seconds)


@contextmanager
def deferred() -> Iterator[None]:
    """Within this block a first signal only asks for a stop; the block is expected to call check() often."""
    _deferring[0] += 1
    try:
        yield
    finally:
        _deferring[0] -= 1


def report(exc: Interrupted) -> None:
    """The one line a stopped command prints, and its exit (130 for SIGINT, 143 for SIGTERM)."""
    sys.stderr.write(f"Error: {exc}\n")
    sys.exit(exc.exit_code)
