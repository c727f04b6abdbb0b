"""Extraction of batches: pay once, and keep every paid answer.

The protocol (design.md): a batch file is `pending` before any model call; results are saved into it
(`distilled`) as each request returns; `commit.py` then commits it in one transaction. A refused request is split
and retried; what still fails is quarantined in the database with its items, for `distill batches retry|discard`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from distiller.batches import files as batches
from distiller.batches import model
from distiller import stop
from distiller.batches.model import DISTILLED, SUBMITTED, Batch
from distiller.errors import DistillError
from distiller.extract.base import BadRequest, Extraction, Extractor, ExtractRequest, Truncated, Usage
from distiller.extract.select import estimate as estimate_cost
from distiller.extract.select import prompt_tokens

MAX_SPLIT_DEPTH = 3


@dataclass
class Allowance:
    """What the run may still spend (None: no limit), charged with every billed call as it returns, so a storm
    of refusals cannot split its way past a budget. `stopped` says why a call was not made."""

    tokens: float | None = None
    usd: float | None = None
    stopped: str | None = None

    def charge(self, usage: Iterable[Usage]) -> None:
        for u in usage:
            if self.tokens is not None:
                self.tokens -= u.tokens
            if self.usd is not None:
                self.usd -= u.cost_usd

    def covers(self, extractor: Extractor, request: ExtractRequest, max_tokens: int | None = None) -> bool:
        """Whether one more call for request fits, by the same estimate as the run's budget check; a call allowed
        `max_tokens` of output is judged as if it used them all."""
        if extractor.model is None or (self.tokens is None and self.usd is None):
            return True
        estimate = prompt_tokens(extractor) + sum(model.estimate_tokens(i.text) + model.ITEM_OVERHEAD_TOKENS
                                                  for i in request.items)
        expected = estimate_cost(extractor.model, estimate)  # priced as if it wrote the cache: the dearest case
        tokens = estimate + max_tokens if max_tokens is not None else expected.tokens
        if self.tokens is not None and tokens > self.tokens:
            self.stopped = f"the token budget would be passed by request {request.request_id} (≈{tokens})"
        elif self.usd is not None and expected.usd > self.usd:
            self.stopped = f"the dollar budget would be passed by request {request.request_id}"
        else:
            return True
        return False


def extract_splitting(extractor: Extractor, request: ExtractRequest, depth: int = 0,
                      allowance: Allowance | None = None) -> tuple[Extraction, list[tuple[ExtractRequest, str]]]:
    """Extract; a truncated reply is retried once with more room, and a refused request is halved and the halves
    tried, down to MAX_SPLIT_DEPTH. Every call is charged to the allowance first checked to cover it; what it does
    not cover is given up (quarantined) with the reason."""
    allowance = allowance or Allowance()
    if not allowance.covers(extractor, request):
        return Extraction(request.request_id, (), ()), [(request, f"not sent: {allowance.stopped}")]
    usage: list[Usage] = []
    try:
        extraction = _extract_with_room(extractor, request, allowance, usage)
    except BadRequest as exc:
        halves = model.split(request) if depth < MAX_SPLIT_DEPTH else ()
        if not halves:
            return Extraction(request.request_id, (), tuple(usage)), [(request, str(exc))]
        candidates, failed = [], []
        for half in halves:
            extraction, failures = extract_splitting(extractor, half, depth + 1, allowance)
            candidates.extend(extraction.candidates)
            usage.extend(extraction.usage)
            failed.extend(failures)
        return Extraction(request.request_id, tuple(candidates), tuple(usage)), failed
    return replace(extraction, usage=tuple(usage)), []


def _extract_with_room(extractor: Extractor, request: ExtractRequest, allowance: Allowance,
                       usage: list[Usage]) -> Extraction:
    """One call, and one more with a larger max_tokens after a truncated reply; each call's usage is recorded and
    charged as it returns, whether it succeeded or not."""
    try:
        extraction = extractor.extract(request)
    except BadRequest as exc:
        usage.extend(exc.usage)
        allowance.charge(exc.usage)
        room = extractor.more_room(exc.max_tokens) if isinstance(exc, Truncated) else None  # type: ignore[attr-defined]
        if room is None or not allowance.covers(extractor, request, max_tokens=room):
            raise
        try:
            extraction = extractor.extract(request, max_tokens=room)  # type: ignore[call-arg]
        except BadRequest as again:
            usage.extend(again.usage)
            allowance.charge(again.usage)
            raise
    usage.extend(extraction.usage)
    allowance.charge(extraction.usage)
    return extraction


def extract(state_dir: Path, batch: Batch, extractor: Extractor, allowance: Allowance | None = None) -> Batch:
    """Run every request not yet extracted, saving the batch after each paid one so no paid answer is ever lost.

    ExtractionUnavailable and AuthenticationFailed propagate: the batch stays pending with what it has."""
    allowance = allowance or Allowance()
    batch = replace(batch, attempts=batch.attempts + 1, extractor=extractor.name, model=extractor.model,
                    prompt_version=extractor.prompt_version)
    batches.write(state_dir, batch)
    for request in batch.todo:
        stop.check()  # a safe point: the batch file holds every answer so far, the next run resumes it
        extraction, failures = extract_splitting(extractor, request, allowance=allowance)
        batch = replace(batch, results=(*batch.results, extraction), failed=(*batch.failed, *failures))
        if extractor.model is not None:  # a paid answer is saved at once; an offline one costs nothing to redo
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
    results = tuple(outcome.extractions[r.request_id] if r.request_id in outcome.extractions
                    else Extraction(r.request_id, (), (outcome.unusable[r.request_id],))
                    for r in batch.requests if r.request_id in outcome.extractions or r.request_id in outcome.unusable)
    failed = tuple((r, outcome.errors.get(r.request_id, "missing from the batch results"))
                   for r in batch.requests if r.request_id not in outcome.extractions)
    batch = replace(batch, status=DISTILLED, results=results, failed=failed)
    batches.write(state_dir, batch)
    return batch
