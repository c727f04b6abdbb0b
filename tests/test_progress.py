"""Progress on stderr: redrawn on a terminal, a line a minute otherwise, from the run's own counters."""

from __future__ import annotations

import io

from conftest import new_session

from distiller import pipeline
from distiller.config import Settings
from distiller.events import Tally
from distiller.progress import LOG_INTERVAL, Progress


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_log_gets_one_line_a_minute_with_rate_and_eta():
    stream, clock, tally = io.StringIO(), Clock(), Tally()
    progress = Progress(stream, tty=False, clock=clock)
    progress.begin(tally, 100_000_000)
    tally.bytes_read, tally.messages, tally.requests = 25_000_000, 1200, 3
    tally.beliefs.update(inserted=7, replayed=5)
    clock.now += 30
    progress.tick()
    assert stream.getvalue() == ""
    clock.now += LOG_INTERVAL - 30
    progress.tick()
    progress.tick()
    assert stream.getvalue() == ("distill: progress: 25.0 MB of 100.0 MB · 1,200 messages · 3 requests · 7 beliefs"
                                 " (+5 already stored) · 0.4 MB/s · ETA 0:03:00\n")


def test_a_phase_is_named_and_a_replay_is_not_zero_beliefs():
    tally = Tally()
    progress = Progress(io.StringIO(), tty=True, clock=Clock())
    progress.begin(tally, 10, "estimating")
    tally.beliefs.update(replayed=12)
    assert progress.line().startswith("estimating: 0.0 MB of 0.0 MB") and "0 beliefs (+12 already stored)" in (
        progress.line())


def test_a_terminal_line_is_redrawn_and_cleared_at_the_end():
    stream, clock, tally = io.StringIO(), Clock(), Tally()
    progress = Progress(stream, tty=True, clock=clock)
    progress.begin(tally, 10)
    for _ in range(3):
        clock.now += 1
        tally.bytes_read += 2
        progress.tick()
    progress.done()
    assert stream.getvalue().count("\r\x1b[K") == 4 and "\n" not in stream.getvalue()


def test_a_run_reports_its_progress(agents, tmp_path):
    for _ in range(3):
        new_session(agents, n_messages=400)
    stream = io.StringIO()
    progress = Progress(stream, tty=True, clock=iter(range(0, 10**6, 10)).__next__)
    pipeline.run_once(Settings(state_dir=tmp_path / "state", extractor="rules"), [agents], progress=progress)
    shown = stream.getvalue()
    assert "messages" in shown and "MB/s" in shown and shown.endswith("\r\x1b[K")
