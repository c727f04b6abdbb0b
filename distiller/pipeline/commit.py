"""The one commit transaction, used by run, resume, reprocess, `distill commit` and `batches retry`.

The exactly-once rule: a batch's messages (in the ingested ledger), its verified beliefs, its cursor moves (each
only if it still holds the offset the batch started from: compare-and-set), its batch record and the run's
counters are committed in one DuckDB transaction, after which its file is removed. A crash leaves either an unread
tail or a resumable batch file; never half of a commit, and replaying a batch is harmless.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import duckdb

from distiller.batches import files
from distiller.batches.model import Batch, quarantine_json
from distiller.config import Settings
from distiller.events import Committed, Tally
from distiller.records import Belief
from distiller.store import batch_rows, clock, cursors, lifecycle, messages, runs
from distiller.store import writes as belief_store
from distiller.store.db import Store, connect_for, transaction
from distiller.track import save_cursors
from distiller.verify import verify


def verified_beliefs(batch: Batch) -> tuple[list[Belief], Counter[str], Counter[str], int]:
    """Each extraction is verified against the items of the request it answers; an external agent's single
    extraction for the whole batch (its id is the batch's) answers every request."""
    sources = batch.sources()
    scopes: dict[str, set[str]] = {}
    for item in batch.items:
        scopes.setdefault(item.request_id, set()).add(item.item.item_id)
    beliefs: list[Belief] = []
    rejected: Counter[str] = Counter()
    sanitized: Counter[str] = Counter()
    candidates = 0
    for extraction in batch.results:
        candidates += len(extraction.candidates)
        whole = extraction.request_id not in scopes
        checked = verify(extraction, sources, extractor=batch.extractor, model=batch.model,
                         prompt_version=batch.prompt_version, scope=None if whole else scopes[extraction.request_id])
        beliefs.extend(checked.beliefs)
        rejected.update(dict(checked.rejected))
        sanitized.update(dict(checked.sanitized))
    return beliefs, rejected, sanitized, candidates


def apply(con: duckdb.DuckDBPyConnection, batch: Batch, run_id: str) -> Committed:
    """Everything a batch covers, in the caller's transaction."""
    beliefs, rejected, sanitized, candidates = verified_beliefs(batch)
    ledger = batch.ledger
    messages.record(con, [row.verdict.message for row in ledger], [row.verdict.decision for row in ledger],
                    [row.verdict.reason for row in ledger], [row.file_id for row in ledger], run_id)
    clock.advance(con, clock.newest_by_scope(row.verdict.message for row in batch.ledger))
    result = belief_store.upsert(con, beliefs, run_id)
    save_cursors(con, batch.cursors)
    if batch.requests:
        batch_rows.record(
            con, batch.batch_id, run_id, status="quarantined" if batch.failed else "committed",
            extractor=batch.extractor, model=batch.model, requests=len(batch.requests), items=len(batch.items),
            candidates=candidates, rejected=dict(rejected),
            usage=[u for extraction in batch.results for u in extraction.usage],
            error="; ".join(dict.fromkeys(error for _, error in batch.failed)) or None,  # each reason once
            quarantine=quarantine_json(batch))
    return Committed(result, candidates, tuple(sorted(rejected.items())), len(batch.failed),
                     tuple(sorted(sanitized.items())))


def commit_batch(settings: Settings, batch: Batch, run_id: str, tally: Tally, *, final: bool = False,
                 status: str | None = None, error: str | None = None, gone: Sequence[str] = (),
                 batch_dir: Path | None = None,
                 require: Callable[[Committed], None] | None = None,
                 also: Callable[[duckdb.DuckDBPyConnection, Committed], object] | None = None,
                 store: Store | None = None) -> None:
    """One transaction: ledger, beliefs, cursors, batch record, the run's counters (as `status`: "ok" after the
    final batch, else "running"; with `error`, the reason it is not "ok") and `also` (a reprocess job's progress, a retried batch settled); the final batch
    of a run also fades old beliefs. Then the batch file is dropped. `require` may refuse what the commit did by
    raising, which rolls all of it back. Through the run's `store` when given (held, checkpointed once)."""
    with (connect_for(settings) if store is None else store.connect()) as con, transaction(con):
        done = apply(con, batch, run_id)
        if require is not None:
            require(done)
        tally.committed(batch, done)
        cursors.mark_gone(con, list(gone))
        if also is not None:
            also(con, done)
        if final:
            lifecycle.fade(con)
        runs.update(con, run_id, tally.as_dict(), status or ("ok" if final else "running"), error)
    files.remove(batch_dir or settings.state_dir, batch.batch_id)
