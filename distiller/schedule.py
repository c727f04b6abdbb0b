"""`distill schedule`: `run` in-process on an APScheduler 3.11 BlockingScheduler, for hosts without cron or systemd.

One run at a time (max_instances=1; a fire that finds the last run still going is skipped, and fires missed while
busy coalesce into one). The run lock still applies, so a cron run and the scheduler never overlap: a run that
finds the lock held is reported as skipped. SIGTERM/SIGINT stop the scheduler; the run in progress reaches its
next safe point first, then the process exits 0.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from apscheduler.schedulers.blocking import BlockingScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from distiller import pipeline, stop
from distiller.config import Settings
from distiller.errors import DistillError, Unavailable, UsageError
from distiller.install import every_seconds

log = logging.getLogger("distiller")

_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
CRON_MISFIRE_GRACE = 300
JOB_ID = "distill-run"


def _weekdays(field: str) -> str:
    """Cron's numeric weekdays (0 or 7 = Sunday) as names: APScheduler 3.x reads 0 as Monday."""
    if field == "*" or not any(c.isdigit() for c in field):
        return field
    days: set[int] = set()
    for part in field.split(","):
        if any(c.isalpha() for c in part):
            raise UsageError(f"cron weekday field {field!r}: use either numbers or names, not both")
        base, _, step = part.partition("/")
        if base == "*":
            low, high = 0, 6
        elif "-" in base:
            low, high = (int(x) for x in base.split("-", 1))
        else:
            low = high = int(base)
            if step:
                high = 6
        if not (0 <= low <= 7 and 0 <= high <= 7 and low <= high):
            raise UsageError(f"cron weekday field {field!r}: days are 0-7 (0 and 7 are Sunday)")
        days.update(d % 7 for d in range(low, high + 1, int(step) if step else 1))
    return ",".join(_DAYS[d] for d in sorted(days))


def cron_trigger(expr: str, jitter: int | None) -> CronTrigger:
    """A standard five-field crontab expression, read as cron reads it, in the local time zone."""
    fields = expr.split()
    if len(fields) != 5:
        raise UsageError(f"invalid cron expression {expr!r}: expected 5 fields (minute hour day month weekday)")
    minute, hour, day, month, weekday = fields
    try:
        return CronTrigger(minute=minute, hour=hour, day=day, month=month, day_of_week=_weekdays(weekday),
                           jitter=jitter)
    except ValueError as exc:
        raise UsageError(f"invalid cron expression {expr!r}: {exc}") from None


@dataclass(frozen=True, slots=True)
class Timing:
    trigger: BaseTrigger
    misfire_grace_time: int
    describe: str


def timing(cron: str | None, every: str | None, jitter: int | None) -> Timing:
    if cron and every:
        raise UsageError("pass --cron or --every, not both")
    if cron:
        return Timing(cron_trigger(cron, jitter), CRON_MISFIRE_GRACE, f"cron {cron!r} (local time)")
    seconds = every_seconds(every or "1h")
    # A fire missed by up to half an interval (a suspended laptop, a long run) still runs, once.
    return Timing(IntervalTrigger(seconds=seconds, jitter=jitter, timezone=UTC),
                  max(60, min(seconds // 2, 1800)), f"every {every or '1h'}")


@dataclass(frozen=True, slots=True)
class Outcome:
    """One scheduled run, as its summary line tells it."""

    at: str
    status: str  # ok | budget | skipped | interrupted | failed
    summary: dict[str, Any] | None
    error: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"at": self.at, "status": self.status, "error": self.error, **(self.summary or {})}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_one(settings: Settings, sources: Sequence[Path] | None) -> Outcome:
    """One run, whatever happens: a failed run is reported and the schedule goes on."""
    at = _now()
    try:
        summary = pipeline.run_once(settings, sources)
    except Unavailable as exc:
        return Outcome(at, "skipped", None, str(exc))
    except DistillError as exc:
        status = "interrupted" if 128 < exc.exit_code < 160 else "failed"
        return Outcome(at, status, None, str(exc))
    except Exception as exc:  # noqa: BLE001 - a bug must not end an unattended schedule: report it and keep the next fire
        return Outcome(at, "failed", None, f"internal error: {type(exc).__name__}: {exc}")
    d = summary.as_dict()
    return Outcome(at, "budget" if d.get("budget_stop") else "ok", d, None)


def make_scheduler(settings: Settings, sources: Sequence[Path] | None, when: Timing, *, run_now: bool,
                   report: Callable[[Outcome], None], stopping: threading.Event) -> BlockingScheduler:
    """The scheduler with its one job: never two runs at once, missed fires coalesced into one."""
    scheduler = BlockingScheduler()

    def job() -> None:
        if not stopping.is_set():
            report(run_one(settings, sources))

    options = {"next_run_time": datetime.now(UTC)} if run_now else {}
    scheduler.add_job(job, when.trigger, id=JOB_ID, name="distill run", max_instances=1, coalesce=True,
                      misfire_grace_time=when.misfire_grace_time, **options)
    return scheduler


def serve(settings: Settings, sources: Sequence[Path] | None, when: Timing, *, run_now: bool,
          report: Callable[[Outcome], None]) -> int:
    """Run until SIGTERM/SIGINT; returns the exit code (0 after a clean stop).

    The signal asks the run in progress to stop at its next safe point; the scheduler then waits for it."""
    stopping = threading.Event()
    scheduler = make_scheduler(settings, sources, when, run_now=run_now, report=report, stopping=stopping)

    def on_signal(signum: int, frame: object) -> None:
        if stopping.is_set():
            return
        stopping.set()
        log.warning("%s: stopping after the run in progress reaches a safe point", signal.Signals(signum).name)
        stop.request(signum)
        scheduler.shutdown(wait=True)  # waits for the run in progress; start() then returns

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        log.warning("scheduled: distill run %s; state dir %s", when.describe, settings.state_dir)
        scheduler.start()  # returns once shut down
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0
