"""Orchestration of `run`, `init` and `status`: the library functions the CLI commands call.

The exactly-once rule: a chunk of what was read becomes a batch; its messages (in the ingested ledger), its
verified beliefs and its cursor moves are committed in one DuckDB transaction, each cursor only if it still holds
the offset the batch started from (compare-and-set). A crash leaves either an unread tail or a resumable batch
file; never half of a commit.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import duckdb
import orjson

from distiller.batches import files as batches
from distiller import stop
from distiller.pipeline import distill
from distiller.batches.files import Batch
from distiller.config import Settings
from distiller.errors import DistillError, Unavailable
from distiller.events import Tally, log
from distiller.extract.base import Extractor
from distiller.extract.select import (
    EXTERNAL,
    Estimator,
    estimated_cost_usd,
    estimated_output_tokens,
    make_extractor,
    prompt_tokens,
)
from distiller.lock import run_lock
from distiller.progress import Progress
from distiller.records import Message
from distiller.screen import Decision, Screened, screen
from distiller.sources.openclaw import parse as openclaw
from distiller.sources import sniff as formats
from distiller.sources.openclaw.discover import Discovery, default_source, discover, session_skip
from distiller.store import batch_rows
from distiller.store import writes as belief_store
from distiller.store import cursors, messages, runs
from distiller.store.cursors import Cursor
from distiller.store.db import connect_for, transaction
from distiller.tail import (
    CHUNK_BYTES,
    complete_lines_end,
    open_regular,
    read_lines,
    skip_reason,
    stat_of,
    tail_digest,
)
from distiller.track import ReadPlan, identity, observe, plan_reads

# What a pending message costs in memory beyond its text (record, ids, ledger lists): a chunk of many short
# messages is bounded too, not only one of a few long ones.
MESSAGE_OVERHEAD_BYTES = 512


@dataclass(frozen=True)
class RunSummary:
    run_id: str | None
    dry_run: bool
    sources: tuple[str, ...]
    tally: Tally

    def as_dict(self) -> dict:
        return {"run_id": self.run_id, "dry_run": self.dry_run, "sources": list(self.sources), **self.tally.as_dict()}


def resolve_sources(sources: Sequence[Path] | None) -> list[str]:
    chosen = list(sources) if sources else [default_source()]
    return [os.path.abspath(Path(s).expanduser()) for s in chosen]


ShowDecision = Callable[[Decision], None]


class BudgetReached(Exception):
    """The next batch would pass a token or dollar budget: the run stops cleanly before it."""


@dataclass
class _FileRead:
    """One reading of a file: screening a message needs the last user text read before it in the same file."""

    previous_user_text: str | None = None


# A message as read, waiting for its chunk to be screened: the message, the session skip it was read under, the
# file's id and reading.
_Pending = tuple[Message, str | None, str, _FileRead]


@dataclass
class _Committer:
    """Collects read messages and cursor moves; each full chunk is screened and becomes a batch that is extracted,
    verified and committed with its cursors in one transaction."""

    settings: Settings
    run_id: str
    dry_run: bool
    tally: Tally
    extractor: Extractor
    show: ShowDecision | None = None
    spent_today: tuple[int, float] = (0, 0.0)
    pending: list[_Pending] = field(default_factory=list)
    pending_bytes: int = 0
    moves: dict[str, Cursor] = field(default_factory=dict)
    expected: dict[str, int | None] = field(default_factory=dict)
    batches_made: int = 0
    batch_dir: Path | None = None  # where its batch files live: the state dir unless reprocessing
    progress: Progress | None = None

    @property
    def files_dir(self) -> Path:
        return self.batch_dir or self.settings.state_dir

    def begin(self, plan: ReadPlan) -> None:
        self.expected.setdefault(plan.target.file_id, plan.expected_offset)

    def add(self, message: Message, skip: str | None, file_id: str, read: _FileRead) -> None:
        self.pending.append((message, skip, file_id, read))
        # Ids and paths are held (and committed) per message as well: they count, not only the text.
        self.pending_bytes += (len(message.text) + len(message.message_id) + len(message.parent_id or "")
                               + len(message.session_id) + len(message.file) + MESSAGE_OVERHEAD_BYTES)

    @property
    def full(self) -> bool:
        return self.pending_bytes >= self.settings.commit_every_bytes

    def move(self, cursor: Cursor) -> None:
        self.moves[cursor.file_id] = cursor

    def _screened(self) -> list[tuple[Screened, str]]:
        """Screen the chunk in reading order, in one run: screening message after message keeps its code and
        patterns in the CPU caches, which reading the large tool results in between would evict."""
        settings = self.settings
        screened_all = []
        for message, skip, file_id, read in self.pending:
            screened = screen(
                message,
                session_skip=skip,
                previous_user_text=read.previous_user_text,
                assistant_decision=settings.assistant_decision,
                extra_blocks=settings.extra_injected_blocks,
            )
            if message.role == "user":
                read.previous_user_text = screened.decisions[-1].text or read.previous_user_text
            screened_all.append((screened, file_id))
        return screened_all

    def _fresh(self, screened_all: list[tuple[Screened, str]]) -> list[tuple[Screened, str]]:
        """Drop what the ledger already holds (a reread after truncation or replacement)."""
        if not screened_all:
            return []
        if self.settings.db_path.exists():
            messages_read = [screened.decisions[0].message for screened, _ in screened_all]
            with connect_for(self.settings, read_only=True) as con:
                known = messages.already_ingested(con, messages_read)
        else:
            known = set()
        fresh = []
        for screened, file_id in screened_all:
            message = screened.decisions[0].message
            key = (message.session_id, message.message_id)
            if key in known:
                self.tally.line_skipped("already_ingested", message.file, message.byte_start)
                continue
            known.add(key)
            fresh.append((screened, file_id))
        return fresh

    def _counted(self, fresh: list[tuple[Screened, str]]) -> None:
        for screened, _ in fresh:
            self.tally.screened(screened)
            if self.show is not None:
                for decision in screened.decisions:
                    self.show(decision)

    def _check_budget(self, batch: Batch) -> distill.Allowance:
        """Stop before a batch whose estimate would pass a budget; else what its calls may spend, splits and
        retries included."""
        if self.extractor.model is None or not batch.requests:
            return distill.Allowance()
        tokens = batch.estimated_tokens + estimated_output_tokens(batch.estimated_tokens)
        cost = estimated_cost_usd(self.extractor.model, batch.estimated_tokens)
        for limit, spent, name, in_tokens in _budgets(self.settings, self.tally, self.spent_today):
            would_be = spent + (tokens if in_tokens else cost)
            if would_be > limit:
                raise BudgetReached(f"{name} {limit:g} would be passed by the next batch (≈{would_be:.4g})")
        return _allowance(self.settings, self.tally, self.spent_today)

    def flush(self, *, final: bool = False, gone: Sequence[str] = ()) -> None:
        stop.check()
        fresh = self._fresh(self._screened())
        self.batches_made += 1
        if self.dry_run:
            planned = batches.plan(fresh, request_budget_tokens=self.settings.request_budget_tokens,
                                   prompt_tokens=prompt_tokens(self.extractor))
            self._counted(fresh)
            self.tally.planned(planned, estimated_cost_usd(self.extractor.model, planned.estimated_tokens))
            self._advance()
            return
        built = batches.build(
            f"{self.run_id[:12]}-{self.batches_made:04d}",
            self.run_id,
            self.extractor,
            fresh,
            [(cursor, self.expected[fid]) for fid, cursor in self.moves.items()],
            request_budget_tokens=self.settings.request_budget_tokens,
            prompt_tokens=prompt_tokens(self.extractor),
        )
        if self.extractor.name == EXTERNAL and (built.requests or self.tally.staged):
            # Staged for an external agent: committed later, in order, by `distill commit`. A batch with nothing
            # to extract is committed at once instead (unless it must follow a staged one), so nothing new never
            # stages an empty batch that would hold up every later run.
            self.tally.staged.append(str(batches.write(self.settings.state_dir, built)))
            self._counted(fresh)
            if final:
                with connect_for(self.settings) as con:
                    runs.update(con, self.run_id, self.tally.as_dict(), "staged")
        elif self.settings.batch_api and built.requests:
            # Submitted batches are collected and committed, in order, by later runs.
            self._check_budget(built)
            batches.write(self.settings.state_dir, built)
            self.tally.submitted.append(distill.submit(self.settings.state_dir, built, self.extractor).batch_id)
            self._counted(fresh)
        else:
            allowance = distill.Allowance()
            if built.requests:
                allowance = self._check_budget(built)
                built = distill.extract(self.files_dir, built, self.extractor, allowance)  # pending first
            self._counted(fresh)
            self._commit(built, final=final, gone=gone)
            if self.progress is not None:
                self.progress.tick()
            if allowance.stopped:
                self._advance()
                raise BudgetReached(f"{allowance.stopped}; the requests not sent are quarantined "
                                    "(`distill batches retry`)")
        self._advance()

    def _commit(self, built: Batch, *, final: bool, gone: Sequence[str]) -> None:
        commit_batch(self.settings, built, self.run_id, self.tally, final=final, gone=gone)

    def _advance(self) -> None:
        """The next batch's cursors start where this one ends, whether it was committed, staged, submitted or only
        planned."""
        for file_id, cursor in self.moves.items():
            self.expected[file_id] = cursor.offset
        self.pending.clear()
        self.pending_bytes = 0
        self.moves.clear()


def _budgets(settings: Settings, tally: Tally, spent_today: tuple[int, float]) -> list[tuple[float, float, str, bool]]:
    """(limit, spent so far, name, whether in tokens) of every budget set."""
    day_tokens, day_cost = spent_today
    limits = [
        (settings.budget_tokens, tally.tokens, "--budget-tokens", True),
        (settings.budget_usd, tally.cost_usd, "--budget-usd", False),
        (settings.budget_tokens_per_day, day_tokens + tally.tokens, "budget_tokens_per_day", True),
        (settings.budget_usd_per_day, day_cost + tally.cost_usd, "budget_usd_per_day", False),
    ]
    return [limit for limit in limits if limit[0]]


def _allowance(settings: Settings, tally: Tally, spent_today: tuple[int, float]) -> distill.Allowance:
    """What is left of the tightest token and dollar budgets, for the calls of one batch."""
    budgets = _budgets(settings, tally, spent_today)
    return distill.Allowance(min((limit - spent for limit, spent, _, tokens in budgets if tokens), default=None),
                             min((limit - spent for limit, spent, _, tokens in budgets if not tokens), default=None))


def commit_batch(settings: Settings, batch: Batch, run_id: str, tally: Tally, *, final: bool = False,
                 gone: Sequence[str] = (), batch_dir: Path | None = None,
                 require: Callable[[distill.Committed], None] | None = None,
                 also: Callable[[duckdb.DuckDBPyConnection, distill.Committed], None] | None = None) -> None:
    """One transaction: ledger, beliefs, cursors, batch record, the run's counters and `also` (a reprocess job's
    progress); then drop the batch file. `require` may refuse what the commit did by raising, which rolls all of
    it back."""
    with connect_for(settings) as con, transaction(con):
        done = distill.commit(con, batch, run_id)
        if require is not None:
            require(done)
        tally.committed(batch, done)
        cursors.mark_gone(con, list(gone))
        if also is not None:
            also(con, done)
        if final:
            belief_store.fade(con)
        runs.update(con, run_id, tally.as_dict(), "ok" if final else "running")
    batches.remove(batch_dir or settings.state_dir, batch.batch_id)


def resume_batches(settings: Settings, run_id: str, extractor: Extractor, tally: Tally,
                   waiting: list[Batch], spent_today: tuple[int, float] = (0, 0.0)) -> None:
    """Finish what an earlier run left: commit distilled batches, extract pending ones (within the budgets),
    before reading anything."""
    for batch in waiting:
        stop.check()
        with connect_for(settings, read_only=True) as con:
            done = batch_rows.is_committed(con, batch.batch_id)
        if done:
            batches.remove(settings.state_dir, batch.batch_id)
            continue
        if batch.status == batches.PENDING and batch.extractor == EXTERNAL:
            raise Unavailable(
                f"batch {batch.batch_id} is staged for an external agent: commit it with "
                f"`distill commit {batch.batch_id} --beliefs FILE` (or unstage it with "
                f"`distill batches discard {batch.batch_id}`) before the next run"
            )
        log.warning("resuming %s batch %s", batch.status, batch.batch_id)
        if batch.status == batches.SUBMITTED:
            collector = extractor if extractor.model == batch.model else make_extractor(
                replace(settings, extractor="anthropic", model=batch.model))
            collected = distill.collect(settings.state_dir, batch, collector)
            if collected is None:
                raise Unavailable(f"batch {batch.batch_id} is still being processed by the Message Batches API "
                                  f"({batch.remote_id}); the next run collects it")
            batch = collected
        allowance = _allowance(settings, tally, spent_today)
        if batch.status == batches.PENDING:
            batch = distill.extract(settings.state_dir, batch, extractor, allowance)
        tally.resumed += 1
        try:
            commit_batch(settings, batch, run_id, tally)
        except duckdb.OutOfMemoryException:
            # Too big to commit within the memory limit (written by a version that did not bound ids): failing
            # again every run would stop ingestion for good, so it is set aside and its messages are read again.
            tally.set_aside.append(batches.set_aside(settings.state_dir, batch.batch_id))
            log.warning("set aside batch %s: too big to commit within the memory limit; its messages are read "
                        "again", batch.batch_id)
            continue
        if allowance.stopped:
            raise BudgetReached(f"{allowance.stopped}; the requests not sent are quarantined "
                                "(`distill batches retry`)")


def _decode_failure(data: bytes) -> str:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "invalid_utf8"
    return "malformed_json"


# How far back a read that starts mid-file looks for the user turn before it (tool results can be long).
LOOKBACK_BYTES = 16 * 1024 * 1024


def _lines_before(f, offset: int) -> Iterator[bytes]:
    """The complete lines that end at or before `offset`, last first, within LOOKBACK_BYTES."""
    end, floor = offset, max(0, offset - LOOKBACK_BYTES)
    while end > floor:
        start = max(floor, end - CHUNK_BYTES)
        f.seek(start)
        block = f.read(end - start)
        cut = 0 if start == 0 else block.find(b"\n") + 1
        if cut == 0 and start > 0:
            if start == floor:
                return
            end = start  # a line longer than the block: look further back for its start
            continue
        for line in reversed(block[cut:].split(b"\n")):
            yield line
        end = start + cut
        if start == 0:
            return


def _previous_user_text(f, plan: ReadPlan, settings: Settings, skip: str | None) -> str | None:
    """The screened text of the last user turn before `plan.start`, as a read from the top would have carried it:
    screening a message depends on it (echoes), so where a run starts must not change what it keeps."""
    if plan.start == 0 or skip is not None:
        return None
    target = plan.target
    for data in _lines_before(f, plan.start):
        if openclaw.is_tool_result_line(data) or b'"user"' not in data:
            continue
        try:
            entry = orjson.loads(data)
        except orjson.JSONDecodeError:
            continue
        result = openclaw.to_message(entry, agent=target.agent, session_id=target.session_id, file=target.path,
                                     byte_start=0, byte_end=0)
        if isinstance(result, str) or result.role != "user":
            continue
        text = screen(result, assistant_decision=settings.assistant_decision,
                      extra_blocks=settings.extra_injected_blocks).decisions[-1].text
        if text:
            return text
    return None


def _read(plan: ReadPlan, settings: Settings, session_keys: dict[str, str], tally: Tally, committer: _Committer) -> None:
    target = plan.target
    try:
        f = open_regular(target.path)
    except OSError as exc:
        tally.file_skipped(skip_reason(exc), target.path, exc.strerror or str(exc))
        return
    with f:
        now = stat_of(os.fstat(f.fileno()))
        if (now.dev, now.inode) != (target.dev, target.inode) or now.size < plan.stop:
            tally.file_skipped("changed_during_read", target.path)
            return
        committer.begin(plan)
        tally.files += 1
        skip = target.session_skip or session_skip(
            session_keys.get(target.session_id) or session_keys.get(Path(target.path).name.split(".jsonl")[0])
        )
        read = _FileRead(_previous_user_text(f, plan, settings, skip))
        offset = plan.start
        stopping = stop.requested
        for line in read_lines(f, plan.start, plan.stop, max_line_bytes=settings.max_line_bytes):
            if stopping():
                stop.check()  # a safe point: what was read but not committed is simply read again next run
            tally.lines += 1
            tally.bytes_read += line.end - line.start
            if committer.progress is not None and not tally.lines & 1023:
                committer.progress.tick()
            offset = line.end
            data = line.data
            if data is None:
                tally.line_skipped("oversized_line", target.path, line.start)
            elif not data or data.isspace():
                tally.line_skipped("blank", target.path, line.start)
            elif openclaw.is_tool_result_line(data):
                tally.line_skipped("tool_result", target.path, line.start)
            else:
                try:
                    entry = orjson.loads(data)
                except orjson.JSONDecodeError:
                    tally.line_skipped(_decode_failure(data), target.path, line.start)
                else:
                    result = openclaw.to_message(
                        entry,
                        agent=target.agent,
                        session_id=target.session_id,
                        file=target.path,
                        byte_start=line.start,
                        byte_end=line.end,
                    )
                    if isinstance(result, str):
                        tally.line_skipped(result, target.path, line.start)
                        if result == "non_message" and skip is None and openclaw.marks_dreaming(entry):
                            skip = "dreaming-session"
                    else:
                        committer.add(result, skip, target.file_id, read)
            if committer.full:
                # Mid-file progress stores size = offset so the unchanged-file shortcut cannot skip the rest.
                committer.move(replace(target, offset=offset, size=offset, tail_digest=tail_digest(f, offset),
                                       session_skip=skip))
                committer.flush()
        committer.move(replace(target, offset=offset, tail_digest=tail_digest(f, offset), session_skip=skip))


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
    roots = resolve_sources(sources)
    extractor = extractor or (Estimator(settings.model) if dry_run else make_extractor(settings))
    _check_options(settings, extractor)
    try:
        if dry_run:
            with stop.deferred():
                return _run(settings, roots, extractor, dry_run=True, show=show, progress=progress)
        with stop.deferred(), run_lock(settings.lock_path):
            return _run(settings, roots, extractor, dry_run=False, show=show, progress=progress)
    finally:
        if progress is not None:
            progress.done()


def _check_options(settings: Settings, extractor: Extractor) -> None:
    """Options that only the Anthropic extractor honours are errors when another one runs, not silently ignored."""
    if extractor.name != "rules":
        return
    why = ("ANTHROPIC_API_KEY is not set" if settings.extractor == "auto" else
           f"extractor = rules ({settings.origin('extractor')})")
    if settings.batch_api:
        raise DistillError(f"the Message Batches API needs the Anthropic extractor, but the offline rules run ({why}): "
                           f"set ANTHROPIC_API_KEY, or drop batch_api ({settings.origin('batch_api')})")
    if settings.origin("model").startswith("flag"):
        raise DistillError(f"--model {settings.model} would be ignored: the offline rules extractor runs ({why}); "
                           f"set ANTHROPIC_API_KEY, or drop --model")


def _run(settings: Settings, roots: list[str], extractor: Extractor, *, dry_run: bool,
         show: ShowDecision | None, progress: Progress | None) -> RunSummary:
    tally = Tally(extractor=extractor.name, model=extractor.model)
    run_id = "dry-run" if dry_run else uuid.uuid4().hex
    spent = (0, 0.0)
    tracked: list[Cursor] = []
    if not dry_run:
        tally.set_aside = batches.tidy(settings.state_dir)
        for name in tally.set_aside:
            log.warning("set aside batch file %s (it does not parse; its messages are read again)",
                        batches.batches_dir(settings.state_dir) / name)
    waiting = [] if dry_run else batches.load_all(settings.state_dir)
    if not dry_run:
        with connect_for(settings) as con:
            runs.start(con, run_id, roots)
            spent = batch_rows.spent_today(con)
            tracked = cursors.load(con)
    elif settings.db_path.exists():
        with connect_for(settings, read_only=True) as con:
            tracked = cursors.load(con)
    try:
        if waiting:
            resume_batches(settings, run_id, extractor, tally, waiting, spent)
            with connect_for(settings, read_only=True) as con:
                tracked = cursors.load(con)  # the resumed batches moved them
        discovery = discover([Path(r) for r in roots], settings.excluded_agents)
        tally.files_skipped.update(discovery.skipped)
        for missing in discovery.missing:
            tally.file_skipped("missing_source", missing)
            log.warning("source not found: %s", missing)
        _name_unrecognised(roots, discovery, tally)
        plans, gone = plan_reads(discovery, tracked, roots, settings.excluded_agents, tally)
        committer = _Committer(settings, run_id, dry_run, tally, extractor, show, spent, progress=progress)
        if progress is not None:
            progress.begin(tally, sum(plan.stop - plan.start for plan in plans))
        for plan in plans:
            stop.check()
            _read(plan, settings, discovery.session_keys, tally, committer)
        committer.flush(final=True, gone=gone)
    except BudgetReached as reached:
        tally.budget_stop = str(reached)
        log.warning("budget reached: %s; the rest stays ahead of the cursors for the next run", reached)
        if not dry_run:
            _finish(settings, run_id, tally, "budget")
    except BaseException as exc:
        if not dry_run:
            _finish(settings, run_id, tally, _ended_as(exc), f"{type(exc).__name__}: {exc}")
        raise
    return RunSummary(None if dry_run else run_id, dry_run, tuple(roots), tally)


def _ended_as(exc: BaseException) -> str:
    if isinstance(exc, (stop.Interrupted, KeyboardInterrupt)):
        return "interrupted"
    return "unavailable" if isinstance(exc, Unavailable) else "failed"


def _name_unrecognised(roots: list[str], discovery: Discovery, tally: Tally) -> None:
    """A source given as a file of another assistant's format is not misread line by line as OpenClaw; a source
    dir with no OpenClaw transcript says what it holds instead."""
    found = [c.path for c in (*discovery.live, *discovery.archives)]
    for root in roots:
        if root in discovery.missing:
            continue
        if os.path.isfile(root):
            kind = formats.sniff(root)
            if kind not in (formats.OPENCLAW, formats.EMPTY):
                discovery.live[:] = [c for c in discovery.live if c.path != root]
                tally.file_skipped("unsupported_format", root)
                log.warning("not read: %s is a %s transcript, not an OpenClaw one (not supported yet)", root,
                            formats.LABELS[kind])
        elif not any(p.startswith(root.rstrip(os.sep) + os.sep) for p in found):
            kinds = formats.survey(Path(root))
            if kinds[formats.OPENCLAW]:
                continue  # there are some, only excluded or archived
            held = ", ".join(f"{n} {formats.LABELS[k]} file(s)" for k, n in kinds.most_common())
            tally.file_skipped("no_transcripts", root)
            log.warning("no OpenClaw transcripts under %s (expected <agent>/sessions/*.jsonl)%s", root,
                        f"; it holds {held}, which are not supported yet" if held else "")


def _finish(settings: Settings, run_id: str, tally: Tally, status: str, error: str | None = None) -> None:
    """Record how a run ended early; bookkeeping must never hide the error that ended it."""
    try:
        with connect_for(settings) as con:
            runs.update(con, run_id, tally.as_dict(), status, error)
    except Exception as inner:  # the fault that ended the run is likely this one too: the error says it once
        log.info("could not record the end of the run: %s", inner)


@dataclass(frozen=True)
class InitSummary:
    db_path: str
    mode: str
    files_marked: int
    files_reset: int

    def as_dict(self) -> dict:
        return {"db": self.db_path, "mode": self.mode, "files_marked": self.files_marked, "files_reset": self.files_reset}


def _present_ends(roots: list[str], settings: Settings, known: dict[str, Cursor]) -> list[tuple[Cursor, int | None]]:
    """A cursor at the last complete line of every live file, with the offset it replaces (None when new)."""
    marks: dict[str, tuple[Cursor, int | None]] = {}
    by_path = {c.path: c for c in known.values() if c.state == "active"}
    for candidate in discover([Path(r) for r in roots], settings.excluded_agents).live:
        seen = observe(candidate.path, candidate.agent, Tally())
        if seen is None:
            continue
        file_id = identity(seen, known, by_path, set(marks))
        if file_id in marks:
            continue
        try:
            with open_regular(seen.path) as f:
                end = complete_lines_end(f, seen.stat.size)
                digest = tail_digest(f, end)
        except OSError:
            continue  # gone or changed since it was observed: the next run reads it
        cursor = Cursor(file_id, seen.path, seen.agent, seen.session_id, seen.stat.dev, seen.stat.inode,
                        seen.stat.size, seen.stat.mtime_ns, end, digest)
        previous = known.get(file_id)
        marks[file_id] = (cursor, previous.offset if previous else None)
    return list(marks.values())


def init(settings: Settings, sources: Sequence[Path] | None = None, *, mode: str = "create") -> InitSummary:
    """Create the state; `from-now` marks every present complete line as read, `from-start` forgets all cursors."""
    roots = resolve_sources(sources)
    marks: list[tuple[Cursor, int | None]] = []
    reset = 0
    with run_lock(settings.lock_path):
        with connect_for(settings) as con:
            known = {c.file_id: c for c in cursors.load(con)}
        if mode == "from-now":
            marks = _present_ends(roots, settings, known)
        with connect_for(settings) as con, transaction(con):
            if mode == "from-start":
                reset = cursors.reset_all(con)
            cursors.save(con, marks)
    return InitSummary(str(settings.db_path), mode, len(marks), reset)


@dataclass(frozen=True)
class StatusReport:
    db_path: str
    files_tracked: int
    files_gone: int
    files_untracked: int
    bytes_behind: int
    messages_ingested: int
    last_run: runs.RunRecord | None

    def as_dict(self) -> dict:
        last = self.last_run
        return {
            "db": self.db_path,
            "files_tracked": self.files_tracked,
            "files_gone": self.files_gone,
            "files_untracked": self.files_untracked,
            "bytes_behind": self.bytes_behind,
            "messages_ingested": self.messages_ingested,
            "last_run": None
            if last is None
            else {
                "run_id": last.run_id,
                "started_at": last.started_at,
                "finished_at": last.finished_at,
                "status": last.status,
                "sources": list(last.sources),
                "error": last.error,
                **last.counters,
            },
        }


def status(settings: Settings, sources: Sequence[Path] | None = None) -> StatusReport:
    """What is tracked, how far behind the files are, and what the last run did (sources: the last run's)."""
    if not settings.db_path.exists():
        return StatusReport(str(settings.db_path), 0, 0, 0, 0, 0, None)
    with connect_for(settings, read_only=True) as con:
        tracked = cursors.load(con)
        recent = runs.recent(con, 1)
        ingested = messages.count(con)
    last = recent[0] if recent else None
    roots = resolve_sources(sources) if sources or last is None else list(last.sources)
    behind = 0
    active = [c for c in tracked if c.state == "active"]
    for cursor in active:
        try:
            behind += max(0, os.stat(cursor.path).st_size - cursor.offset)
        except OSError:
            continue
    known_paths = {c.path for c in active}
    untracked = 0
    for candidate in discover([Path(r) for r in roots], settings.excluded_agents).live:
        if candidate.path not in known_paths:
            try:
                behind += os.stat(candidate.path).st_size
                untracked += 1
            except OSError:
                continue
    return StatusReport(
        str(settings.db_path), len(active), len(tracked) - len(active), untracked, behind, ingested, last
    )
