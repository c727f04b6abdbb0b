"""Progress of long work on stderr: a line redrawn in place on a terminal, one summary line a minute otherwise.

It reads the run's own counters (bytes, messages, requests, beliefs), so it shows what the summary will say."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import TextIO

from distiller.events import Tally

TTY_INTERVAL = 0.2
LOG_INTERVAL = 60.0


def _mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


def _eta(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def on_stderr(as_json: bool) -> Progress | None:
    """The CLI's progress display, hidden by --json and -q (which silences warnings)."""
    if as_json or not logging.getLogger("distiller").isEnabledFor(logging.WARNING):
        return None
    return Progress(sys.stderr)


class Progress:
    def __init__(self, stream: TextIO, *, tty: bool | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.interval = TTY_INTERVAL if self.tty else LOG_INTERVAL
        self.clock = clock
        self.tally = Tally()
        self.total_bytes = 0
        self.started = self.last = clock()
        self.drawn = False
        self.label = ""

    def begin(self, tally: Tally, total_bytes: int, label: str = "") -> None:
        """Start showing `tally`'s counters against `total_bytes`; `label` names the phase (`estimating`)."""
        self.tally, self.total_bytes, self.label = tally, total_bytes, label
        self.started = self.last = self.clock()

    def line(self) -> str:
        t = self.tally
        elapsed = max(self.clock() - self.started, 1e-9)
        rate = t.bytes_read / elapsed
        beliefs = sum(v for k, v in t.beliefs.items() if k != "replayed")
        replayed = t.beliefs.get("replayed", 0)  # drawn again, already stored (a reprocess): said, not hidden
        parts = [f"{_mb(t.bytes_read)} of {_mb(self.total_bytes)}", f"{t.messages:,} messages",
                 f"{t.requests:,} requests",
                 f"{beliefs:,} beliefs" + (f" (+{replayed:,} already stored)" if replayed else ""),
                 f"{rate / 1e6:,.1f} MB/s"]
        left = self.total_bytes - t.bytes_read
        if rate > 0 and left > 0:
            parts.append(f"ETA {_eta(left / rate)}")
        return (f"{self.label}: " if self.label else "") + " · ".join(parts)

    def tick(self) -> None:
        now = self.clock()
        if now - self.last < self.interval:
            return
        self.last = now
        if self.tty:
            self.stream.write("\r\x1b[K" + self.line())
            self.drawn = True
        else:
            self.stream.write(f"distill: progress: {self.line()}\n")
        self.stream.flush()

    def done(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.drawn = False
