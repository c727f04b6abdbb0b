"""What becomes of a screened chunk, one dispatcher per mode.

- dry run: packed and counted, nothing sent or recorded;
- synchronous: extracted request by request (within the budgets), then committed at once;
- Batches API: submitted at half price, collected and committed by a later run;
- external: staged as a batch file for an external agent, committed by `distill commit`.

A chunk with nothing to extract is committed at once in every mode but the dry run (unless, when staging, it must
follow a staged one), so nothing new never waits on an API or an agent, nor holds up the batches after it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from distiller.batches import files, model
from distiller.batches.model import Batch
from distiller.config import Settings
from distiller.errors import DistillError
from distiller.events import Tally, log
from distiller.extract import EXTERNAL
from distiller.extract.base import Extractor
from distiller.extract.select import estimate, prompt_tokens
from distiller.pipeline import budget, distill, pace
from distiller.pipeline.commit import commit_batch
from distiller.progress import Progress
from distiller.records import Cursor
from distiller.screen import Decision, Screened
from distiller.store import runs
from distiller.store.db import Store

ShowDecision = Callable[[Decision], None]
Fresh = list[tuple[Screened, str]]  # the screened messages of a chunk not already ingested, with their file ids
# How a batch is committed: the run's commit_batch, or a reprocess job's.
CommitBatch = Callable[[Batch, bool, Sequence[str]], None]


@dataclass
class Dispatcher:
    """Sends each chunk on; every mode counts what it sends (and shows its decisions when asked)."""

    settings: Settings
    run_id: str
    tally: Tally
    extractor: Extractor
    show: ShowDecision | None = None
    spent_today: tuple[int, float] = (0, 0.0)
    progress: Progress | None = None
    batch_dir: Path | None = None  # where its batch files live: the state dir unless reprocessing
    commit: CommitBatch | None = None  # how a batch is committed: the run's commit_batch unless reprocessing
    made: int = 0  # the batches made (and planned) so far: the sequence in each batch id
    pacer: pace.Pace = field(default_factory=lambda: pace.Pace(1))  # one per run: what a 429 taught carries over
    store: Store | None = None  # the run's store: its commits and lookups go through it (see run.py)
    # How the run ends when its final batch commits: ("ok", None), or ("failed", why) for a run that will exit 1
    # (a source not found). Recorded in that batch's own transaction, so no kill after it leaves a wrong status.
    ending: tuple[str, str | None] = ("ok", None)

    @property
    def files_dir(self) -> Path:
        return self.batch_dir or self.settings.state_dir

    def quick(self) -> AbstractContextManager[None]:
        """The span of one chunk's dedup and dispatch: the store held open across it where nothing slow (a model
        call, an upload) happens in between, so its lookups and its commit open the database once."""
        return nullcontext()

    def let_go_of_start(self) -> None:
        """The store held since the run started is let go: after the first chunk, before workers fork, or before a
        model call (other processes may read it meanwhile)."""
        if self.store is not None:
            self.store.let_go()

    def send(self, fresh: Fresh, moves: list[tuple[Cursor, int | None]], *, final: bool = False,
             gone: Sequence[str] = ()) -> None:
        self.made += 1
        self.deliver(self.build(fresh, moves), fresh, final=final, gone=gone)

    def build(self, fresh: Fresh, moves: list[tuple[Cursor, int | None]]) -> Batch:
        return model.build(
            f"{self.run_id[:12]}-{self.made:04d}",
            self.run_id,
            self.extractor,
            fresh,
            moves,
            request_budget_tokens=self.settings.request_budget_tokens,
            prompt_tokens=prompt_tokens(self.extractor),
        )

    def deliver(self, built: Batch, fresh: Fresh, *, final: bool, gone: Sequence[str]) -> None:
        raise NotImplementedError

    def counted(self, fresh: Fresh) -> None:
        for screened, _ in fresh:
            self.tally.screened(screened)
            if self.show is not None:
                for decision in screened.decisions:
                    self.show(decision)

    def check_budget(self, batch: Batch) -> distill.Allowance:
        return budget.check(self.settings, self.tally, self.spent_today, self.extractor, batch)

    def commit_batch(self, built: Batch, *, final: bool, gone: Sequence[str]) -> None:
        if self.commit is not None:
            self.commit(built, final, gone)
        else:
            status, error = self.ending if final else ("running", None)
            # The last commit and the checkpoint after it open the database once.
            with nullcontext() if self.store is None else self.store.hold():
                commit_batch(self.settings, built, self.run_id, self.tally, final=final, gone=gone, status=status,
                             error=error, store=self.store)
                if final and self.store is not None:
                    try:
                        self.store.checkpoint()
                    except (DistillError, duckdb.Error) as exc:  # committed all the same: the WAL keeps it
                        log.warning("the store was not checkpointed: %s", exc)

    def record_end(self, status: str) -> None:
        """The run's record when its final batch is not committed by this run (staged, submitted): `status`, or
        how it ends when that is not ok."""
        ended, error = self.ending if self.ending[0] != "ok" else (status, None)
        if self.store is not None:
            self.store.open()  # held until the run closes it, whose checkpoint then needs no open of its own
        with (self.store or Store.of(self.settings)).connect() as con:
            runs.update(con, self.run_id, self.tally.as_dict(), ended, error)


class DryRun(Dispatcher):
    """Packs a chunk as a batch would be, and counts it: nothing is sent, written or recorded."""

    def send(self, fresh: Fresh, moves: list[tuple[Cursor, int | None]], *, final: bool = False,
             gone: Sequence[str] = ()) -> None:
        self.made += 1
        planned = model.plan(fresh, request_budget_tokens=self.settings.request_budget_tokens,
                             prompt_tokens=prompt_tokens(self.extractor))
        self.counted(fresh)
        self.tally.planned(planned, estimate(self.extractor, planned.estimated_tokens, planned.requests,
                                             warm=self.tally.requests > 0,
                                             every_request_writes=self.settings.batch_api))


class Synchronous(Dispatcher):
    """Extracts the batch now (its file is pending first), within what the budgets leave, and commits it."""

    def quick(self) -> AbstractContextManager[None]:
        return self.store.hold() if self.extractor.offline and self.store is not None else nullcontext()

    def deliver(self, built: Batch, fresh: Fresh, *, final: bool, gone: Sequence[str]) -> None:
        allowance = distill.Allowance()
        if built.requests:
            allowance = self.check_budget(built)
            if not self.extractor.offline:
                self.let_go_of_start()
            built = distill.extract(self.files_dir, built, self.extractor, allowance,  # pending first
                                    pacer=self.pacer)
            distill.note_pace(self.tally, self.pacer, self.extractor)
        self.counted(fresh)
        self.commit_batch(built, final=final, gone=gone)
        if self.progress is not None:
            self.progress.tick()
        if allowance.stopped:
            raise budget.stopped(allowance)


class BatchApi(Synchronous):
    """Submits the batch to the Message Batches API (its file `submitting` first, see distill.submit); later runs
    collect and commit submitted batches in order."""

    def quick(self) -> AbstractContextManager[None]:
        return nullcontext()

    def deliver(self, built: Batch, fresh: Fresh, *, final: bool, gone: Sequence[str]) -> None:
        if not built.requests:
            super().deliver(built, fresh, final=final, gone=gone)
            return
        self.check_budget(built)
        self.let_go_of_start()  # an upload
        self.tally.submitted.append(distill.submit(self.files_dir, built, self.extractor).batch_id)
        self.counted(fresh)
        if final:
            self.record_end("ok")


class External(Synchronous):
    """Stages the batch for an external agent: committed later, in order, by `distill commit`."""

    def deliver(self, built: Batch, fresh: Fresh, *, final: bool, gone: Sequence[str]) -> None:
        if not (built.requests or self.tally.staged):
            super().deliver(built, fresh, final=final, gone=gone)
            return
        self.tally.staged.append(str(files.write(self.settings.state_dir, built)))
        self.counted(fresh)
        if final:
            self.record_end("staged")


def mode(settings: Settings, extractor: Extractor, *, dry_run: bool) -> type[Dispatcher]:
    """The dispatcher of a run: a dry run, an external agent, the Batches API, or synchronous calls."""
    if dry_run:
        return DryRun
    if extractor.name == EXTERNAL:
        return External
    if settings.batch_api:
        return BatchApi
    return Synchronous
