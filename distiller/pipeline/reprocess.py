"""`distill reprocess`: distill a whole history again, with a better model or prompt, through the path `run` uses.

Whole files are read (archives too when asked), independent of the live cursors, which it never moves; messages
already recorded are extracted again. A job is identified by what it reprocesses and with which extractor, model
and prompt: its batch files live under `<state-dir>/reprocess/<job>/` (a live run never picks them up) and each
batch commits the job's progress in its own transaction, so a killed job resumes where it stopped and pays for
nothing twice, and a finished one is not paid for again. At the end, beliefs that only older extractors, models
or prompts drew from the reprocessed messages, and that this pass did not draw again, are archived (`reprocessed`).
"""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import orjson

from distiller import extract, prices, stop
from distiller import sources as registry
from distiller.batches import files as batches
from distiller.batches.model import PENDING, SUBMITTED, SUBMITTING, Batch
from distiller.config import Settings
from distiller.errors import DistillError
from distiller.events import Tally, log
from distiller.extract.base import Extractor, SubmitsBatches
from distiller.extract.select import check_options, estimator, make_extractor, planned
from distiller.lock import run_lock
from distiller.pipeline import budget, distill, pace
from distiller.pipeline.budget import BudgetReached
from distiller.pipeline.chunk import Chunk, Window
from distiller.pipeline.commit import commit_batch
from distiller.pipeline.dispatch import Fresh, mode
from distiller.pipeline.run import (
    distill_plans,
    echo_index,
    ended_as,
    resolve_sources,
)
from distiller.progress import Progress
from distiller.records import Cursor
from distiller.screen import Screened, echo
from distiller.screen.prefilter import KEEP
from distiller.store import batch_rows, jobs, runs
from distiller.store.db import Store, connect_for, transaction
from distiller.tail import complete_lines_end, open_regular
from distiller.track import ReadPlan, observe


@dataclass(frozen=True)
class Scope:
    """What to reprocess: sources, a time window on the messages, agents, and whether archives count."""

    sources: tuple[str, ...]
    since: datetime | None = None
    until: datetime | None = None
    agents: tuple[str, ...] = ()
    include_archives: bool = False

    def as_dict(self) -> dict[str, object]:
        return {"sources": list(self.sources), "since": self.since.isoformat() if self.since else None,
                "until": self.until.isoformat() if self.until else None, "agents": list(self.agents),
                "include_archives": self.include_archives}


@dataclass(frozen=True)
class Estimate:
    """What the job would send, priced at the model from the same packer and price table as a run."""

    files: int
    bytes: int
    messages: int
    requests: int
    tokens: int
    cost_usd: float
    model: str
    cache_read_tokens: int = 0  # of `tokens`, the prefix expected to be read from the prompt cache
    extractor: str = extract.AUTO_WITH_KEY  # the extractor that will run: only a billed one's estimate is a price

    @property
    def paid(self) -> bool:
        return extract.named(self.extractor).billed if self.extractor in extract.names() else False

    def as_dict(self) -> dict[str, object]:
        return {"files": self.files, "bytes": self.bytes, "messages": self.messages, "requests": self.requests,
                "estimated_tokens": self.tokens, "estimated_cost_usd": round(self.cost_usd, 6), "model": self.model,
                "estimated_cache_read_tokens": self.cache_read_tokens, "extractor": self.extractor}


@dataclass
class Collected:
    """The job's batches at the Message Batches API: submitted by this invocation, ended and collected by it,
    committed by it, and still waiting there when it stopped."""

    submitted: int = 0
    ended: int = 0
    committed: int = 0
    waiting: int = 0

    def as_dict(self) -> dict[str, object]:
        return {"submitted": self.submitted, "ended": self.ended, "committed": self.committed,
                "waiting": self.waiting}


@dataclass(frozen=True)
class ReprocessSummary:
    job_id: str
    # dry-run | cancelled | already-done | budget (resumable) | submitted (collect later) | partial | done
    status: str
    estimate: Estimate | None
    resumed: bool
    retired: int
    run_id: str | None
    tally: Tally = field(default_factory=Tally)
    batch_api: Collected = field(default_factory=Collected)

    def as_dict(self) -> dict[str, object]:
        return {"job_id": self.job_id, "status": self.status, "resumed": self.resumed, "retired": self.retired,
                "run_id": self.run_id, "estimate": self.estimate.as_dict() if self.estimate else None,
                "batch_api": self.batch_api.as_dict(), **self.tally.as_dict()}


def _once(tally: Tally) -> Callable[[list[tuple[Screened, str]]], Fresh]:
    """What the ledger holds is extracted again; only a session copied into another file is left out."""
    seen: set[tuple[str, str]] = set()

    def fresh(screened_all: list[tuple[Screened, str]]) -> Fresh:
        kept = []
        for screened, file_id in screened_all:
            message = screened.decisions[0].message
            key = (message.session_id, message.message_id)
            if key in seen:  # the same session copied into another file
                tally.line_skipped("already_reprocessed", message.file, message.byte_start)
                continue
            seen.add(key)
            kept.append((screened, file_id))
        return kept

    return fresh


def commit_job_batch(settings: Settings, job_id: str, built: Batch, run_id: str, tally: Tally, batch_dir: Path,
                     *, final: bool = False, store: Store | None = None) -> None:
    """The batch's cursor moves are the job's progress: recorded with it, never applied to the live cursors."""
    moves = [(cursor.file_id, cursor.path, cursor.offset) for cursor, _ in built.cursors]
    kept = [(row.verdict.message.session_id, row.verdict.message.message_id) for row in built.ledger
            if row.verdict.decision == KEEP]
    commit_batch(settings, replace(built, cursors=()), run_id, tally, final=final, batch_dir=batch_dir,
                 also=lambda con, done: jobs.record_batch(con, job_id, moves, kept, done.beliefs.belief_ids),
                 store=store)


def job_id_of(scope: Scope, extractor: Extractor) -> str:
    key = orjson.dumps({**scope.as_dict(), "extractor": extractor.name, "model": extractor.model,
                        "prompt_version": extractor.prompt_version}, option=orjson.OPT_SORT_KEYS)
    return "rp-" + hashlib.blake2b(key, digest_size=8).hexdigest()


def _plans(settings: Settings, scope: Scope, done: dict[str, int], tally: Tally) -> tuple[list[ReadPlan], dict[str, str]]:
    """Every file in scope, whole (from the job's progress on), each session once."""
    discovery = registry.discover([Path(s) for s in scope.sources], settings.excluded_agents,
                                  subagents=settings.read_subagents, state_dir=settings.state_dir,
                                  overrides=settings.format_overrides)
    tally.files_skipped.update(discovery.skipped)
    for missing in discovery.missing:
        tally.file_skipped("missing_source", missing)
    candidates = discovery.live + (discovery.archives if scope.include_archives else [])
    plans, keys = [], set()
    for candidate in sorted(candidates, key=lambda c: c.path):
        if scope.agents and candidate.agent not in scope.agents:
            continue
        seen = observe(candidate.path, candidate.agent, candidate.format, tally, candidate.forced)
        if seen is None:
            continue
        # A first line without an id cannot tell files apart: such files are keyed by device and inode too.
        key = seen.fingerprint if seen.distinctive else seen.by_inode
        if key in keys:
            continue
        keys.add(key)
        with open_regular(seen.path) as f:
            end = complete_lines_end(f, seen.stat.size)
        start = min(done.get(key, 0), end)
        if start >= end:
            continue
        target = Cursor(key, seen.path, seen.agent, seen.session_id, seen.stat.dev, seen.stat.inode,
                        seen.stat.size, seen.stat.mtime_ns, start, "")
        plans.append(ReadPlan(target, start, end, None, "reprocess", seen.format))
    return plans, discovery.session_keys


def _pass(settings: Settings, scope: Scope, extractor: Extractor, *, dry_run: bool, job_id: str, run_id: str,
          done: dict[str, int], tally: Tally, progress: Progress | None = None,
          pacer: pace.Pace | None = None, spent_today: tuple[int, float] = (0, 0.0), label: str = "",
          store: Store | None = None) -> None:
    """Read, screen and dispatch everything in scope; through the job's `store` (None for an estimate)."""
    plans, session_keys = _plans(settings, scope, done, tally)
    batch_dir = _job_dir(settings, job_id)

    def commit(built: Batch, final: bool, gone: Sequence[str]) -> None:
        commit_job_batch(settings, job_id, built, run_id, tally, batch_dir, final=final, store=store)

    dispatcher = mode(settings, extractor, dry_run=dry_run)(settings, run_id, tally, extractor, batch_dir=batch_dir,
                                                            spent_today=spent_today, progress=progress,
                                                            commit=commit, store=store,
                                                            pacer=pacer or pace.Pace(settings.concurrency))
    if progress is not None:
        progress.begin(tally, sum(plan.stop - plan.start for plan in plans), label)
    window = Window(scope.since, scope.until) if scope.since or scope.until else None
    echoes = echo.EMPTY
    if store is not None or settings.db_path.exists():
        with (connect_for(settings, read_only=True) if store is None else store.connect(read_only=True)) as con:
            echoes = echo_index(con)  # as run loads them: a recall line pasted back is never evidence again
    distill_plans(plans, session_keys, settings, tally, Chunk(settings, echoes), _once(tally), dispatcher,
                  window=window)


def _job_dir(settings: Settings, job_id: str) -> Path:
    return settings.state_dir / "reprocess" / job_id


def estimate(settings: Settings, scope: Scope, extractor: Extractor, done: dict[str, int] | None = None,
             progress: Progress | None = None) -> Estimate:
    """Read and screen everything in scope and pack it as the job would, without sending or recording anything
    (a whole history takes seconds: `progress` shows it, labelled `estimating`, and is cleared at the end)."""
    priced = estimator(settings, extractor)
    model = priced.model or settings.model
    tally = Tally(extractor="estimate", model=model)
    try:
        _pass(settings, scope, priced, dry_run=True, job_id="estimate", run_id="dry-run",
              done=done or {}, tally=tally, progress=progress, label="estimating")
    finally:
        if progress is not None:
            progress.done()
    cost = tally.estimated_cost_usd * (prices.BATCH_DISCOUNT if settings.batch_api else 1)
    return Estimate(tally.files, tally.bytes_read, tally.messages, tally.requests, tally.estimated_tokens, cost,
                    model, tally.estimated_cache_read_tokens, extractor.name)


Confirm = Callable[[Estimate], bool]


def reprocess(settings: Settings, sources: Sequence[Path] | None = None, *, since: datetime | None = None,
              until: datetime | None = None, agents: Sequence[str] = (), include_archives: bool = False,
              dry_run: bool = False, keep_old: bool = False, confirm: Confirm | None = None,
              extractor: Extractor | None = None, progress: Progress | None = None,
              collect: bool = False) -> ReprocessSummary:
    """Reprocess a history (see the module docstring); `confirm` sees the estimate first and may decline.

    With `settings.batch_api` the requests are submitted through the Message Batches API (half price) and the job
    stays `submitted`; every later invocation of the same job (or `collect`, which only collects) commits the
    batches the API has ended, in order, and reads on only once none is waiting there."""
    scope = Scope(tuple(resolve_sources(sources, settings)), since, until, tuple(agents), include_archives)
    missing = [source for source in scope.sources if not Path(source).exists()]
    if missing:
        raise DistillError(f"source not found: {', '.join(missing)}")
    if since and until and since >= until:
        raise DistillError(f"--since {since.isoformat()} is not before --until {until.isoformat()}")
    extractor = extractor or make_extractor(settings)
    if dry_run and extractor.offline and settings.origin("model").startswith("flag"):
        extractor = planned(settings)  # no key: estimate the job `--model` asks for, as run --dry-run does
    check_options(settings, extractor)
    if settings.batch_api and not isinstance(extractor, SubmitsBatches):
        raise DistillError(f"--batch-api needs the Anthropic extractor, not {extractor.name}: set ANTHROPIC_API_KEY "
                           f"or drop --batch-api")
    job_id = job_id_of(scope, extractor)
    job, done = None, {}
    if settings.db_path.exists():
        with connect_for(settings, read_only=True) as con:
            job = jobs.find(con, job_id)
            done = jobs.progress(con, job_id) if job else {}
    if collect and job is None:
        raise DistillError(f"no reprocess job {job_id} to collect: give the same sources, window, agents and model "
                           f"as when it was submitted")
    if job is not None and job.status == jobs.DONE:
        return ReprocessSummary(job_id, "already-done", None, False, job.retired or 0, None)
    if collect:
        confirm = None  # what is collected was estimated, confirmed and paid for when it was submitted
    plan = None
    if dry_run or confirm is not None:
        plan = estimate(settings, scope, extractor, done, progress)
        if dry_run:
            return ReprocessSummary(job_id, "dry-run", plan, job is not None, 0, None)
        if confirm is not None and not confirm(plan):
            return ReprocessSummary(job_id, "cancelled", plan, job is not None, 0, None)
    try:
        with stop.deferred(), run_lock(settings.lock_path):
            return _run_job(settings, scope, extractor, job_id, plan, keep_old=keep_old, progress=progress,
                            collect=collect)
    finally:
        if progress is not None:
            progress.done()


def _run_job(settings: Settings, scope: Scope, extractor: Extractor, job_id: str, plan: Estimate | None, *,
             keep_old: bool, progress: Progress | None, collect: bool = False) -> ReprocessSummary:
    """The job, through one `Store`, as a run uses its own: held from the start and across quick steps, let go
    before a model call or a fork, checkpointed once at the end."""
    store = Store.of(settings, defer_checkpoints=True)
    store.open()
    try:
        return _job(settings, store, scope, extractor, job_id, plan, keep_old=keep_old, progress=progress,
                    collect=collect)
    finally:
        try:
            store.close()
        except (DistillError, duckdb.Error, OSError) as exc:  # the WAL keeps it all: the next open replays it
            log.warning("the store was not checkpointed: %s", exc)


def _job(settings: Settings, store: Store, scope: Scope, extractor: Extractor, job_id: str, plan: Estimate | None,
         *, keep_old: bool, progress: Progress | None, collect: bool) -> ReprocessSummary:
    run_id = uuid.uuid4().hex
    tally = Tally(extractor=extractor.name, model=extractor.model)
    with store.connect() as con:
        resumed = jobs.find(con, job_id) is not None
        spent = batch_rows.spent_today(con)  # the day budgets count what every run and job spent today
        with transaction(con):
            jobs.start(con, job_id, scope.as_dict(), extractor.name, extractor.model, extractor.prompt_version)
            runs.start(con, run_id, [f"reprocess:{job_id}", *scope.sources])
    try:
        pacer = pace.Pace(settings.concurrency)
        collected = Collected()
        try:
            _resume(settings, store, job_id, run_id, extractor, tally, pacer, collected, spent)
            with store.connect(read_only=True) as con:
                done = jobs.progress(con, job_id)
            unread = collect and bool(_plans(settings, scope, done, Tally())[0])  # only collecting: never read
            if not collected.waiting and not unread:
                _pass(settings, scope, extractor, dry_run=False, job_id=job_id, run_id=run_id, done=done,
                      tally=tally, progress=progress, pacer=pacer, spent_today=spent, store=store)
                collected.submitted = len(tally.submitted)
                collected.waiting += len(tally.submitted)
        except BudgetReached as reached:
            tally.budget_stop = str(reached)
            store.open()  # held until the job closes it, whose checkpoint then needs no open of its own
            with store.connect() as con:
                runs.update(con, run_id, tally.as_dict(), "budget")
            return ReprocessSummary(job_id, "budget", plan, resumed, 0, run_id, tally, collected)
        if collected.waiting or unread:
            # Batches still at the API, or (only collecting) files not read to the end: the job goes on later.
            status = "submitted" if collected.waiting else "partial"
            store.open()
            with store.connect() as con:
                runs.update(con, run_id, tally.as_dict(), status)
            return ReprocessSummary(job_id, status, plan, resumed, 0, run_id, tally, collected)
        store.open()
        with store.connect() as con, transaction(con):
            retired = 0 if keep_old else jobs.retire(con, job_id, extractor.name, extractor.model,
                                                      extractor.prompt_version, datetime.now(UTC))
            jobs.finish(con, job_id, retired)
            runs.update(con, run_id, tally.as_dict(), "ok")
    except BaseException as exc:
        # bookkeeping must never hide the error that ended the job
        with contextlib.suppress(Exception):
            store.open()
            with store.connect() as con:
                runs.update(con, run_id, tally.as_dict(), ended_as(exc), f"{type(exc).__name__}: {exc}")
        raise
    return ReprocessSummary(job_id, "done", plan, resumed, retired, run_id, tally, collected)


def _resume(settings: Settings, store: Store, job_id: str, run_id: str, extractor: Extractor, tally: Tally,
            pacer: pace.Pace, collected: Collected, spent_today: tuple[int, float]) -> None:
    """Finish the batches a killed job left (what was paid for is in them) and those submitted to the Message
    Batches API, in order, up to the first the API has not ended yet, counting into `collected`. A pending batch
    spends only what the budgets leave: BudgetReached once it has been committed with what its calls could pay."""
    batch_dir = _job_dir(settings, job_id)
    left = batches.load_all(batch_dir)
    for n, waiting in enumerate(left):
        stop.check()
        with store.connect(read_only=True) as con:
            committed = batch_rows.is_committed(con, waiting.batch_id)
        if committed:
            batches.remove(batch_dir, waiting.batch_id)
            continue
        if waiting.status == SUBMITTED:
            store.let_go()
            ended = distill.collect(batch_dir, waiting, extractor)
            if ended is None:  # still being processed: it and every later batch wait for the next invocation
                collected.waiting = sum(b.status == SUBMITTED for b in left[n:])
                break
            collected.ended += 1
            waiting = ended
        allowance = budget.allowance(settings, tally, spent_today)
        if waiting.status == SUBMITTING:
            log.warning("quarantined %s", distill.may_be_billed(waiting.batch_id))
            waiting = distill.set_aside_unsubmitted(waiting)
        elif waiting.status == PENDING:
            if not extractor.offline:
                store.let_go()
            waiting = distill.extract(batch_dir, waiting, extractor, allowance, pacer=pacer)
            distill.note_pace(tally, pacer, extractor)
        tally.resumed += 1
        store.open()
        commit_job_batch(settings, job_id, waiting, run_id, tally, batch_dir, store=store)
        collected.committed += 1
        if allowance.stopped:
            raise budget.stopped(allowance)
