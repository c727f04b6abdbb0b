"""`run`: read the new complete lines of every transcript, screen them, and distill them batch by batch.

The pieces: the reader (`read.py`) yields each file's messages with their cursor positions; a chunk (`chunk.py`)
collects them until a batch is full; each full chunk is screened, freed of what the ledger already holds, and
handed to the dispatcher of the run's mode (`dispatch.py`); every batch commits in the one transaction of
`commit.py`. Batches an earlier run left are finished first.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from distiller import recall, stop
from distiller import sources as registry
from distiller.batches import files as batches
from distiller.batches.model import PENDING, SUBMITTED, SUBMITTING, Batch
from distiller.config import Settings
from distiller.errors import DistillError, Unavailable
from distiller.events import Tally, log
from distiller.extract import EXTERNAL
from distiller.extract.base import Extractor
from distiller.extract.select import check_options, estimator, make_extractor
from distiller.lock import run_lock
from distiller.pipeline import budget, distill, pace, scan
from distiller.pipeline.budget import BudgetReached
from distiller.pipeline.chunk import Chunk, Window
from distiller.pipeline.commit import commit_batch
from distiller.pipeline.dispatch import Dispatcher, Fresh, ShowDecision, mode
from distiller.pipeline.read import open_reading
from distiller.progress import Progress
from distiller.records import Cursor
from distiller.screen import Screened, echo
from distiller.sources import sniff
from distiller.sources.base import Discovery
from distiller.store import batch_rows, messages, runs
from distiller.store import terms as store_terms
from distiller.store.db import Store
from distiller.track import ReadPlan, load_cursors, plan_reads

__all__ = ["BudgetReached", "RunSummary", "ShowDecision", "resolve_sources", "run_once"]


@dataclass(frozen=True)
class RunSummary:
    run_id: str | None
    dry_run: bool
    sources: tuple[str, ...]
    tally: Tally

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "dry_run": self.dry_run, "sources": list(self.sources), **self.tally.as_dict()}


def echo_index(con: duckdb.DuckDBPyConnection) -> echo.EchoIndex:
    """What a recall could have shown (the live statements, and the block's headers when pasted without it),
    loaded once per run: the spans of new messages that reproduce it are echoes, never evidence."""
    return echo.index([*store_terms.live_statements(con), *recall.HEADERS.values(), recall.PROFILE_HEADER])


def resolve_sources(sources: Sequence[Path] | None, settings: Settings) -> list[str]:
    """The sources given, else the default tree of every format present (less the settings' `skip_formats`): the
    one place that decides, for a run, the scheduler and the units `schedule install` writes alike."""
    chosen = list(sources) if sources else registry.default_sources(settings.skip_formats)
    return [os.path.abspath(Path(s).expanduser()) for s in chosen]


Dedup = Callable[[list[tuple[Screened, str]]], Fresh]


def unread(store: Store, tally: Tally) -> Dedup:
    """Drops what the ledger already holds (a reread after truncation or replacement), and repeats within a run."""

    def fresh(screened_all: list[tuple[Screened, str]]) -> Fresh:
        if not screened_all:
            return []
        if store.path.exists():
            messages_read = [screened.decisions[0].message for screened, _ in screened_all]
            with store.connect(read_only=True) as con:
                known = messages.already_ingested(con, messages_read)
        else:
            known = set()
        kept = []
        for screened, file_id in screened_all:
            message = screened.decisions[0].message
            key = (message.session_id, message.message_id)
            if key in known:
                tally.line_skipped("already_ingested", message.file, message.byte_start)
                continue
            known.add(key)
            kept.append((screened, file_id))
        return kept

    return fresh


def flush(chunk: Chunk, dedup: Dedup, dispatcher: Dispatcher, *, final: bool = False,
          gone: Sequence[str] = ()) -> None:
    """Screen the chunk, drop what was seen, dispatch the rest; the next chunk starts where this one ends."""
    stop.check()
    try:
        screened = chunk.screened()
        with dispatcher.quick():
            dispatcher.send(dedup(screened), chunk.moves(), final=final, gone=gone)
    finally:
        chunk.advance()
        dispatcher.let_go_of_start()


def distill_plans(plans: Sequence[ReadPlan], session_keys: dict[str, str], settings: Settings, tally: Tally,
                  chunk: Chunk, dedup: Dedup, dispatcher: Dispatcher, *, gone: Sequence[str] = (),
                  window: Window | None = None, started: scan.Scanner | None = None) -> None:
    """Read every plan in order into chunks, and dispatch each full chunk and the last one. A big scan has its small
    files read ahead by worker processes (scan.py; `started` early, or now), replayed here exactly as reading them
    here would be."""
    with scan.scanner(plans, session_keys, settings, window, started, dispatcher.let_go_of_start) as scanned:
        for index, plan in enumerate(plans):
            stop.check()
            found = scanned.result(index)
            if found is not None and chunk.pending_bytes + found.size < settings.commit_every_bytes:
                scan.replay(found, plan, chunk, tally, dispatcher.progress)
            else:
                read_plan(plan, session_keys, settings, tally, chunk, dedup, dispatcher, window)
    flush(chunk, dedup, dispatcher, final=True, gone=gone)


def read_plan(plan: ReadPlan, session_keys: dict[str, str], settings: Settings, tally: Tally, chunk: Chunk,
              dedup: Dedup, dispatcher: Dispatcher, window: Window | None = None) -> None:
    """Read one plan here, dispatching the chunk whenever it is full (with a mid-file cursor)."""
    reading = open_reading(plan, settings, session_keys, tally, dispatcher.progress)
    if reading is None:
        return
    with reading.file:
        chunk.begin(plan)
        offset = plan.start
        file_id = plan.target.file_id
        for message, offset in reading:
            if message is not None:
                if window is not None and (reason := window.excludes(message)) is not None:
                    tally.line_skipped(reason, message.file, message.byte_start)
                else:
                    chunk.add(message, reading.skip, file_id, reading.state)
            if chunk.full:
                chunk.move(reading.cursor(offset, mid_file=True))
                flush(chunk, dedup, dispatcher)
        chunk.move(reading.cursor(offset))


def resume_batches(settings: Settings, store: Store, run_id: str, extractor: Extractor, tally: Tally,
                   waiting: list[Batch], spent_today: tuple[int, float] = (0, 0.0),
                   pacer: pace.Pace | None = None) -> None:
    """Finish what an earlier run left: commit distilled batches, extract pending ones (within the budgets),
    quarantine the ones it may have submitted without recording it, before reading anything. The run's store is
    let go across each model call, and held again from each commit on."""
    for batch in waiting:
        stop.check()
        with store.connect(read_only=True) as con:
            done = batch_rows.is_committed(con, batch.batch_id)
        if done:
            batches.remove(settings.state_dir, batch.batch_id)
            continue
        if batch.status == PENDING and batch.extractor == EXTERNAL:
            raise Unavailable(
                f"batch {batch.batch_id} is staged for an external agent: commit it with "
                f"`distill commit {batch.batch_id} --beliefs FILE` (or unstage it with "
                f"`distill batches discard {batch.batch_id}`) before the next run"
            )
        if batch.status == SUBMITTING:
            log.warning("quarantined %s", distill.may_be_billed(batch.batch_id))
            batch = distill.set_aside_unsubmitted(batch)
        log.warning("resuming %s batch %s", batch.status, batch.batch_id)
        if batch.status == SUBMITTED:
            store.let_go()
            collector = extractor if extractor.model == batch.model else make_extractor(
                replace(settings, extractor="anthropic", model=batch.model or settings.model))
            collected = distill.collect(settings.state_dir, batch, collector)
            if collected is None:
                raise Unavailable(f"batch {batch.batch_id} is still being processed by the Message Batches API "
                                  f"({batch.remote_id}); the next run collects it")
            batch = collected
        allowance = budget.allowance(settings, tally, budget.with_journaled(spent_today, batch))
        if batch.status == PENDING:
            if not extractor.offline:
                store.let_go()
            pacer = pacer or pace.Pace(settings.concurrency)
            batch = distill.extract(settings.state_dir, batch, extractor, allowance, pacer=pacer)
            distill.note_pace(tally, pacer, extractor)
        tally.resumed += 1
        store.open()
        try:
            commit_batch(settings, batch, run_id, tally, store=store)
        except duckdb.OutOfMemoryException:
            # Too big to commit within the memory limit (written by a version that did not bound ids): failing
            # again every run would stop ingestion for good, so it is set aside and its messages are read again.
            tally.set_aside.append(batches.set_aside(settings.state_dir, batch.batch_id))
            log.warning("set aside batch %s: too big to commit within the memory limit; its messages are read "
                        "again", batch.batch_id)
            continue
        if allowance.stopped:
            raise budget.stopped(allowance)



def run_once(
    settings: Settings,
    sources: Sequence[Path] | None = None,
    *,
    dry_run: bool = False,
    show: ShowDecision | None = None,
    extractor: Extractor | None = None,
    progress: Progress | None = None,
) -> RunSummary:
    """Read the new complete lines of every transcript, screen them, distill the kept ones into verified beliefs,
    and commit beliefs, messages and cursors together, exactly once.

    `show` is called with every decision on a newly read message (the tool for tuning the filters); `progress`
    is shown while the run reads."""
    roots = resolve_sources(sources, settings)
    chosen = extractor or (estimator(settings) if dry_run else make_extractor(settings))
    check_options(settings, chosen)
    try:
        if dry_run:
            with stop.deferred():
                return _run(settings, roots, chosen, dry_run=True, show=show, progress=progress)
        with stop.deferred(), run_lock(settings.lock_path):
            summary = _run(settings, roots, chosen, dry_run=False, show=show, progress=progress)
            _refresh_recall(settings)
            return summary
    finally:
        if progress is not None:
            progress.done()


def _refresh_recall(settings: Settings) -> None:
    """The Claude Code hook's snapshot, rebuilt now rather than on the first prompt after the run (best effort:
    the hook rebuilds it itself when it finds it out of date)."""
    from distiller.recall import snapshot

    try:
        snapshot.refresh(settings.state_dir, settings.db_path, now=datetime.now(UTC))
    except (DistillError, duckdb.Error, OSError) as exc:
        log.warning("recall snapshot not refreshed: %s", exc)


def _run(settings: Settings, roots: list[str], extractor: Extractor, *, dry_run: bool,
         show: ShowDecision | None, progress: Progress | None) -> RunSummary:
    tally = Tally(extractor=extractor.name, model=extractor.model)
    run_id = "dry-run" if dry_run else uuid.uuid4().hex
    if not dry_run:
        tally.set_aside = batches.tidy(settings.state_dir)
        for name in tally.set_aside:
            log.warning("set aside batch file %s (it does not parse; its messages are read again)",
                        batches.batches_dir(settings.state_dir) / name)
    waiting = [] if dry_run else batches.load_all(settings.state_dir)
    store = Store.of(settings, defer_checkpoints=not dry_run)
    try:
        if not dry_run:
            # Held from the run's start through its first chunk: let go before a model call, a fork or a long scan.
            store.open()
        _read_and_distill(_Run(settings, store, roots, extractor, tally, run_id, dry_run, show, progress), waiting)
    finally:
        try:
            store.close()
        except (DistillError, duckdb.Error, OSError) as exc:  # the WAL keeps it all: the next open replays it
            log.warning("the store was not checkpointed: %s", exc)
    return RunSummary(None if dry_run else run_id, dry_run, tuple(roots), tally)


@dataclass(frozen=True)
class _Run:
    """What one run is made of, as `_run` set it up."""

    settings: Settings
    store: Store
    roots: list[str]
    extractor: Extractor
    tally: Tally
    run_id: str
    dry_run: bool
    show: ShowDecision | None
    progress: Progress | None


def _read_and_distill(run: _Run, waiting: list[Batch]) -> None:
    """Resume what an earlier run left, then read, screen, distill and commit every planned tail."""
    settings, store, roots, extractor, tally, run_id = (run.settings, run.store, run.roots, run.extractor, run.tally,
                                                         run.run_id)
    dry_run, show, progress = run.dry_run, run.show, run.progress
    pacer = pace.Pace(settings.concurrency)
    spent = (0, 0.0)
    tracked: list[Cursor] = []
    echoes = echo.EMPTY
    if not dry_run:
        with store.connect() as con:
            runs.start(con, run_id, roots)
            spent = batch_rows.spent_today(con)
            tracked = load_cursors(con)
            echoes = echo_index(con)
    elif store.path.exists():
        with store.connect(read_only=True) as con:
            tracked = load_cursors(con)
            echoes = echo_index(con)
    started = None
    try:
        if waiting:
            resume_batches(settings, store, run_id, extractor, tally, waiting, spent, pacer)
            with store.connect(read_only=True) as con:
                tracked = load_cursors(con)  # the resumed batches moved them
        discovery = registry.discover([Path(r) for r in roots], settings.excluded_agents,
                                      subagents=settings.read_subagents, state_dir=settings.state_dir,
                                      overrides=settings.format_overrides)
        if not tracked:  # a first run reads whole files: scan workers for them start now, and help plan them
            started = scan.early(settings, [found.path for found in discovery.live], store.let_go)
        tally.files_skipped.update(discovery.skipped)
        for missing in discovery.missing:
            tally.file_skipped("missing_source", missing)
            log.warning("source not found: %s", missing)
        _name_unrecognised(roots, discovery, tally)
        with scan.fewer_collections():
            plans, gone = plan_reads(discovery, tracked, roots, settings.excluded_agents, tally,
                                     None if started is None else started.looks(discovery.live))
            planned = sum(plan.stop - plan.start for plan in plans)
            if planned >= scan.MIN_SCAN_BYTES:
                store.let_go()  # its first chunk may be long in coming
            dispatcher = mode(settings, extractor, dry_run=dry_run)(settings, run_id, tally, extractor, show, spent,
                                                                    progress=progress, pacer=pacer, store=store)
            if discovery.missing:  # everything else is read, but the run exits 1: its final commit says so
                dispatcher.ending = ("failed", f"source(s) not found: {', '.join(discovery.missing)}")
            if progress is not None:
                progress.begin(tally, planned)
            distill_plans(plans, discovery.session_keys, settings, tally, Chunk(settings, echoes),
                          unread(store, tally), dispatcher, gone=gone, started=started)
    except BudgetReached as reached:
        tally.budget_stop = str(reached)
        log.warning("budget reached: %s; the rest stays ahead of the cursors for the next run", reached)
        if not dry_run:
            _finish(store, run_id, tally, "budget")
    except BaseException as exc:
        if not dry_run:
            _finish(store, run_id, tally, ended_as(exc), f"{type(exc).__name__}: {exc}")
        raise
    finally:
        if started is not None:
            started.close()


def ended_as(exc: BaseException) -> str:
    """How a run or job that raised is recorded: `interrupted` (a signal), `unavailable` or `failed`."""
    if isinstance(exc, (stop.Interrupted, KeyboardInterrupt)):
        return "interrupted"
    return "unavailable" if isinstance(exc, Unavailable) else "failed"


def _name_unrecognised(roots: list[str], discovery: Discovery, tally: Tally) -> None:
    """A source given as a file of another assistant's format is not misread line by line as a supported one; a
    source dir with no transcript of a supported format says what it holds instead."""
    found = [c.path for c in (*discovery.live, *discovery.archives)]
    known = registry.formats()
    labels = " or ".join(fmt.label for fmt in known)
    forced = {c.path for c in discovery.live if c.forced}  # an override's: its first line is judged by `track.look`
    for root in roots:
        if root in discovery.missing or root in forced:
            continue
        if os.path.isfile(root):
            kind = sniff.sniff(root)
            if sniff.supported(kind):
                # Only the format it is in reads it (each format's discovery takes a file given as a source).
                discovery.live[:] = [c for c in discovery.live if c.path != root or c.format == kind]
            elif kind != sniff.EMPTY:
                discovery.live[:] = [c for c in discovery.live if c.path != root]
                tally.file_skipped("unsupported_format", root)
                log.warning("not read: %s is %s, not a transcript of %s", root,
                            "an unrecognised JSONL file" if kind == sniff.UNKNOWN else f"a {sniff.label(kind)} file",
                            labels)
        elif not any(p.startswith(root.rstrip(os.sep) + os.sep) for p in found):
            kinds = sniff.survey(Path(root))
            if any(kinds[fmt.name] for fmt in known):
                continue  # there are some, only excluded or archived
            held = ", ".join(f"{n} {sniff.label(k)} file(s)" for k, n in kinds.most_common())
            layouts = ", ".join(fmt.layout for fmt in known if fmt.layout)
            tally.file_skipped("no_transcripts", root)
            log.warning("no %s transcripts under %s (expected %s)%s", labels, root, layouts,
                        f"; it holds {held}" if held else "")


def _finish(store: Store, run_id: str, tally: Tally, status: str, error: str | None = None) -> None:
    """Record how a run ended early; bookkeeping must never hide the error that ended it."""
    try:
        store.open()  # held until the run closes it, whose checkpoint then needs no open of its own
        with store.connect() as con:
            runs.update(con, run_id, tally.as_dict(), status, error)
    except Exception as inner:  # noqa: BLE001  the fault that ended the run is likely this one too: said once
        log.info("could not record the end of the run: %s", inner)
