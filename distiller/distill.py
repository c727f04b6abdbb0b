"""Extraction and commit of batches: pay once, verify everything, and commit beliefs with the cursors they cover.

The protocol (design.md): a batch file is `pending` before any model call; results are saved into it
(`distilled`) as each request returns; one DuckDB transaction then records the messages, upserts the verified
beliefs, advances the cursors by compare-and-set and records the batch, after which the file is removed. A refused
request is split and retried; what still fails is quarantined in the database with its items, for
`distill batches retry|discard`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import duckdb

from distiller import batch as batches
from distiller.batch import DISTILLED, SUBMITTED, Batch
from distiller.errors import DistillError
from distiller.extract.base import BadRequest, Extraction, Extractor, ExtractRequest
from distiller.records import Belief
from distiller.store import batches as batch_rows
from distiller.store import beliefs as belief_store
from distiller.store import clock, cursors, messages
from distiller.verify import verify

MAX_SPLIT_DEPTH = 3


@dataclass(frozen=True, slots=True)
class Committed:
    """What one batch commit did, for the run's counters."""

    beliefs: belief_store.UpsertResult
    candidates: int
    rejected: tuple[tuple[str, int], ...]
    quarantined_requests: int


def extract_splitting(extractor: Extractor, request: ExtractRequest, depth: int = 0
                       ) -> tuple[Extraction, list[tuple[ExtractRequest, str]]]:
    """Extract; on a refused request, halve it and try the halves, down to MAX_SPLIT_DEPTH."""
    try:
        return extractor.extract(request), []
    except BadRequest as exc:
        halves = batches.split(request) if depth < MAX_SPLIT_DEPTH else ()
        if not halves:
            return Extraction(request.request_id, (), ()), [(request, str(exc))]
        candidates, usage, failed = [], [], []
        for half in halves:
            extraction, failures = extract_splitting(extractor, half, depth + 1)
            candidates.extend(extraction.candidates)
            usage.extend(extraction.usage)
            failed.extend(failures)
        return Extraction(request.request_id, tuple(candidates), tuple(usage)), failed


def extract(state_dir: Path, batch: Batch, extractor: Extractor) -> Batch:
    """Run every request not yet extracted, saving the batch after each so no paid answer is ever lost.

    ExtractionUnavailable and AuthenticationFailed propagate: the batch stays pending with what it has."""
    batch = replace(batch, attempts=batch.attempts + 1, extractor=extractor.name, model=extractor.model,
                    prompt_version=extractor.prompt_version)
    batches.write(state_dir, batch)
    for request in batch.todo:
        extraction, failures = extract_splitting(extractor, request)
        batch = replace(batch, results=(*batch.results, extraction), failed=(*batch.failed, *failures))
        batches.write(state_dir, batch)
    batch = replace(batch, status=DISTILLED)
    batches.write(state_dir, batch)
    return batch


def submit(state_dir: Path, batch: Batch, extractor: Extractor) -> Batch:
    """Hand the requests to the Message Batches API (half price); the batch file remembers its id."""
    submit_batch = getattr(extractor, "submit_batch", None)
    if submit_batch is None:
        raise DistillError(f"--batch-api needs the anthropic extractor, not {extractor.name}")
    batch = replace(batch, status=SUBMITTED, remote_id=submit_batch(batch.requests), extractor=extractor.name,
                    model=extractor.model, prompt_version=extractor.prompt_version)
    batches.write(state_dir, batch)
    return batch


def collect(state_dir: Path, batch: Batch, extractor: Extractor) -> Batch | None:
    """The results of a submitted batch once the API has ended it (None while it is still running).

    Failed requests are quarantined as they are: `distill batches retry` sends them again, one by one."""
    outcome = extractor.collect_batch(batch.remote_id)
    if outcome is None:
        return None
    results = tuple(outcome.extractions[r.request_id] for r in batch.requests if r.request_id in outcome.extractions)
    failed = tuple((r, outcome.errors.get(r.request_id, "missing from the batch results"))
                   for r in batch.requests if r.request_id not in outcome.extractions)
    batch = replace(batch, status=DISTILLED, results=results, failed=failed)
    batches.write(state_dir, batch)
    return batch


def verified_beliefs(batch: Batch) -> tuple[list[Belief], Counter[str], int]:
    sources = batch.sources()
    beliefs: list[Belief] = []
    rejected: Counter[str] = Counter()
    candidates = 0
    for extraction in batch.results:
        candidates += len(extraction.candidates)
        checked = verify(extraction, sources, extractor=batch.extractor, model=batch.model,
                         prompt_version=batch.prompt_version)
        beliefs.extend(checked.beliefs)
        rejected.update(dict(checked.rejected))
    return beliefs, rejected, candidates


def commit(con: duckdb.DuckDBPyConnection, batch: Batch, run_id: str) -> Committed:
    """Everything a batch covers, in the caller's transaction."""
    beliefs, rejected, candidates = verified_beliefs(batch)
    messages.record(con, [row.verdict for row in batch.ledger], [row.file_id for row in batch.ledger], run_id)
    clock.advance(con, clock.newest_by_scope(row.verdict.message for row in batch.ledger))
    result = belief_store.upsert(con, beliefs, run_id)
    cursors.save(con, list(batch.cursors))
    if batch.requests:
        batch_rows.record(con, batch, run_id, candidates, dict(rejected))
    return Committed(result, candidates, tuple(sorted(rejected.items())), len(batch.failed))
