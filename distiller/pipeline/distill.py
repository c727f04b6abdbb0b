"""Extraction of batches: pay once, and keep every paid answer.

The protocol (README, "What gets read, and the guarantees"): a batch file is `pending` before any model call; each
request's result is appended to its journal as it returns (several requests in flight at once, see pace.py), and
the batch file is written again, `distilled`, with all of them; `commit.py` then commits it in one transaction. A
refused request is split and retried; what still fails is quarantined in the database with its items, for
`distill batches retry|discard`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path

from distiller import prices, stop
from distiller.batches import files as batches
from distiller.batches import journal, model
from distiller.batches.model import DISTILLED, PENDING, SUBMITTED, SUBMITTING, Batch
from distiller.errors import DistillError
from distiller.events import Tally
from distiller.extract.base import (
    MAX_CANDIDATES,
    MAX_MODE_STEPS,
    BadRequest,
    CachesPrefix,
    Candidate,
    Extraction,
    Extractor,
    ExtractRequest,
    ModeRefused,
    NegotiatesOutputMode,
    OverloadListener,
    RetriesTruncated,
    SubmitsBatches,
    SubmitUncertain,
    Truncated,
    Unparsed,
    Usage,
)
from distiller.extract.select import estimated_output_tokens, prompt_tokens
from distiller.pipeline import pace

MAX_SPLIT_DEPTH = 3
log = logging.getLogger("distiller")


@dataclass
class Allowance:
    """What the run may still spend (None: no limit). Before each call its worst case (its estimated input and
    all the output it is allowed) is held, and the call is made only if what is left after every call in flight
    covers it; when it returns, the hold is released and the real usage charged. So concurrent calls, or a storm
    of refusals splitting its way down, cannot pass a budget. `stopped` says why a call was not made. Thread-safe."""

    tokens: float | None = None
    usd: float | None = None
    stopped: str | None = None
    held_tokens: float = 0.0
    held_usd: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def limited(self) -> bool:
        return self.tokens is not None or self.usd is not None

    def _charge(self, usage: Iterable[Usage]) -> None:
        for u in usage:
            if self.tokens is not None:
                self.tokens -= u.tokens
            if self.usd is not None:
                self.usd -= u.cost_usd

    def hold(self, extractor: Extractor, request: ExtractRequest, max_tokens: int | None = None) -> Hold | None:
        """Hold the worst case of one call for request (None, and `stopped` set, when it does not fit): its
        estimated input and `max_tokens` of output (the extractor's own limit when not given)."""
        if not extractor.billed or not self.limited:
            return Hold(0, 0.0)
        prefix = prompt_tokens(extractor)
        estimate = prefix + sum(model.estimate_tokens(i.text) + model.ITEM_OVERHEAD_TOKENS for i in request.items)
        if max_tokens is not None:
            output = max_tokens
        elif isinstance(extractor, RetriesTruncated):
            output = extractor.max_tokens
        else:
            output = estimated_output_tokens(estimate)
        tokens = estimate + output
        # priced as if it wrote the cache (the dearest case) and used all the output it may
        usd = prices.cost(extractor.rates, estimate - prefix, output, 0, prefix)
        with self._lock:
            if self.tokens is not None and tokens > self.tokens - self.held_tokens:
                self.stopped = f"the token budget would be passed by request {request.request_id} (≈{tokens})"
            elif self.usd is not None and usd > self.usd - self.held_usd:
                self.stopped = f"the dollar budget would be passed by request {request.request_id}"
            else:
                self.held_tokens += tokens
                self.held_usd += usd
                return Hold(tokens, usd)
        return None

    def settle(self, hold: Hold, usage: Iterable[Usage]) -> None:
        """The call held for has returned (or failed): release its hold and charge what it really cost."""
        with self._lock:
            self.held_tokens -= hold.tokens
            self.held_usd -= hold.usd
            self._charge(usage)


@dataclass(frozen=True, slots=True)
class Hold:
    tokens: int
    usd: float


def extract_splitting(extractor: Extractor, request: ExtractRequest, depth: int = 0,
                      allowance: Allowance | None = None, on_overload: OverloadListener | None = None
                      ) -> tuple[Extraction, list[tuple[ExtractRequest, str]]]:
    """Extract; a truncated reply is retried once with more room, and a refused request is halved and the halves
    tried, down to MAX_SPLIT_DEPTH. A model's answer over the prompt's cap (MAX_CANDIDATES) is not cut: the request
    is halved and asked again, down to a single evidence item, so an honest model that found many facts loses none.
    Every call is held against the allowance first; what it does not cover is given up (quarantined) with the
    reason.

    The answers of the parts are joined, each part's first MAX_CANDIDATES candidates before any part's overflow,
    so verification's cap (MAX_CANDIDATES per evidence item, verify.py) cuts only the overflow of a single item
    that is still over it. A hostile flood costs at most two calls per evidence item, each held against the
    allowance. `on_overload` is told of every 429/529 any of the calls meets."""
    parts, usage, failed = _extract_parts(extractor, request, depth, allowance or Allowance(), on_overload)
    ordered = [c for part in parts for c in part[:MAX_CANDIDATES]] + [c for part in parts for c in part[MAX_CANDIDATES:]]
    return Extraction(request.request_id, tuple(ordered), tuple(usage)), failed


def _extract_parts(extractor: Extractor, request: ExtractRequest, depth: int, allowance: Allowance,
                   on_overload: OverloadListener | None
                   ) -> tuple[list[tuple[Candidate, ...]], list[Usage], list[tuple[ExtractRequest, str]]]:
    """extract_splitting's recursion: the candidates of each part answered, their usage, and what failed."""
    hold = allowance.hold(extractor, request)
    if hold is None:
        return [], [], [(request, f"not sent: {allowance.stopped}")]
    usage: list[Usage] = []
    try:
        extraction = _extract_with_room(extractor, request, allowance, hold, usage, on_overload)
    except BadRequest as exc:
        halves = model.split(request) if depth < MAX_SPLIT_DEPTH else ()
        if not halves:
            return [], usage, [(request, str(exc))]
        return _extract_halves(extractor, halves, depth + 1, allowance, usage, on_overload)
    if not extractor.offline and len(extraction.candidates) > MAX_CANDIDATES:
        halves = tuple(h for h in model.split(request) if any(i.evidence for i in h.items))
        if sum(i.evidence for i in request.items) > 1 and halves:
            log.info("request %s: %d candidates, over the cap of %d: split and asked again",
                     request.request_id, len(extraction.candidates), MAX_CANDIDATES)
            return _extract_halves(extractor, halves, depth, allowance, usage, on_overload)  # not a refusal
    return [extraction.candidates], usage, []


def _extract_halves(extractor: Extractor, halves: Sequence[ExtractRequest], depth: int, allowance: Allowance,
                    usage: list[Usage], on_overload: OverloadListener | None
                    ) -> tuple[list[tuple[Candidate, ...]], list[Usage], list[tuple[ExtractRequest, str]]]:
    parts: list[tuple[Candidate, ...]] = []
    failed: list[tuple[ExtractRequest, str]] = []
    for half in halves:
        more, spent, failures = _extract_parts(extractor, half, depth, allowance, on_overload)
        parts.extend(more)
        usage.extend(spent)
        failed.extend(failures)
    return parts, usage, failed


def _extract_with_room(extractor: Extractor, request: ExtractRequest, allowance: Allowance, hold: Hold,
                       usage: list[Usage], on_overload: OverloadListener | None) -> Extraction:
    """One call (held for by `hold`), and one more after a reply that did not parse (Unparsed) or, for an extractor
    that retries a truncated answer, after a truncated reply with a larger max_tokens; before that, up to
    MAX_MODE_STEPS more while an extractor finding its output mode steps down from a refused one (ModeRefused).
    Every call is held for first, and its usage recorded and charged as it returns, whether it succeeded or not:
    no call is made that the allowance did not cover."""
    room: int | None = None  # None: the extractor's own max_tokens
    asked_again = False
    mode_steps = 0
    current = hold
    while True:
        try:
            extraction = extractor.extract(request, max_tokens=room, on_overload=on_overload)
        except BadRequest as exc:
            usage.extend(exc.usage)
            allowance.settle(current, exc.usage)
            if isinstance(exc, ModeRefused) and mode_steps < MAX_MODE_STEPS:
                mode_steps += 1
            elif asked_again:
                raise
            elif isinstance(exc, Truncated) and isinstance(extractor, RetriesTruncated):
                room = extractor.more_room(exc.max_tokens)
                if room is None:
                    raise
                asked_again = True
            elif isinstance(exc, Unparsed):
                asked_again = True
            else:
                raise
            again = allowance.hold(extractor, request, max_tokens=room)
            if again is None:
                raise
            current = again
            continue
        except BaseException:
            allowance.settle(current, ())
            raise
        usage.extend(extraction.usage)
        allowance.settle(current, extraction.usage)
        return extraction


def extract(state_dir: Path, batch: Batch, extractor: Extractor, allowance: Allowance | None = None, *,
            pacer: pace.Pace | None = None) -> Batch:
    """Run every request not yet extracted, as many at a time as `pacer` allows (one without it; fewer while the
    API pushes back, see pace.py), each answered request appended to the batch's journal as it returns, so no paid
    answer is ever lost; the batch file itself is written when it starts (pending) and when it ends (distilled),
    its results in request order whatever order they came back in. A new batch for an offline extractor has
    nothing to pay for and is answered in memory, with no file.

    A stop, ExtractionUnavailable or AuthenticationFailed sends nothing more, waits for the calls in flight (their
    answers are journaled) and propagates: the batch stays pending with what it has."""
    allowance = allowance or Allowance()
    if extractor.offline and not batches.path_of(state_dir, batch.batch_id).exists():
        return _extract_offline(batch, extractor, allowance)
    finished: dict[str, tuple[Extraction, tuple[tuple[ExtractRequest, str], ...]]] = {}
    if _provenance(batch) != _provenance(extractor):
        # Answers already paid for keep the extractor, model and prompt that drew them; one batch has one
        # provenance, so the rest is not sent with another but quarantined, for `distill batches retry`. So is a
        # batch nothing was answered for yet: a model batch is never finished by the offline rules (a run without
        # the key) or another model behind the user's back.
        why = (f"not sent: batch {batch.batch_id} was started with {_named(batch)}, this run uses "
               f"{_named(extractor)}")
        log.warning("%s; its %d unanswered request(s) are quarantined (`distill batches retry %s` sends them)",
                    why, len(batch.todo), batch.batch_id)
        finished = {r.request_id: (Extraction(r.request_id, (), ()), ((r, why),)) for r in batch.todo}
        batch = replace(batch, attempts=batch.attempts + 1)
    else:
        batch = replace(batch, attempts=batch.attempts + 1, extractor=extractor.name, model=extractor.model,
                        prompt_version=extractor.prompt_version)
    path = batches.write(state_dir, batch)
    if batch.todo and not finished:
        if extractor.offline:
            _answer_offline(batch.todo, extractor, allowance, finished)
        else:
            with journal.Journal(path) as answers:
                _dispatch(extractor, batch.todo, allowance, pacer or pace.Pace(1), answers, finished)
    order = {r.request_id: n for n, r in enumerate(batch.requests)}
    results = sorted((*batch.results, *(x for x, _ in finished.values())),
                     key=lambda x: order.get(x.request_id, len(order)))
    failed = (*batch.failed, *(f for r in batch.requests if r.request_id in finished
                               for f in finished[r.request_id][1]))
    batch = replace(batch, status=DISTILLED, results=tuple(results), failed=failed)
    batches.write(state_dir, batch)
    journal.remove(path)  # the batch file holds all of it now
    return batch


def _extract_offline(batch: Batch, extractor: Extractor, allowance: Allowance) -> Batch:
    """A batch not on disk (built by this run) for an offline extractor is answered in memory, never written:
    its answers cost nothing to redo, so a crash before the commit loses nothing the next run does not read and
    answer again (and a large first run does not write every batch to disk twice)."""
    finished: dict[str, tuple[Extraction, tuple[tuple[ExtractRequest, str], ...]]] = {}
    _answer_offline(batch.requests, extractor, allowance, finished)
    return replace(batch, status=DISTILLED, attempts=1, extractor=extractor.name, model=extractor.model,
                   prompt_version=extractor.prompt_version,
                   results=tuple(finished[r.request_id][0] for r in batch.requests),
                   failed=tuple(f for r in batch.requests for f in finished[r.request_id][1]))


Finished = dict[str, tuple[Extraction, tuple[tuple[ExtractRequest, str], ...]]]  # request_id -> answer, failures


def _answer_offline(todo: Sequence[ExtractRequest], extractor: Extractor, allowance: Allowance,
                    finished: Finished) -> None:
    """One request after the other (an offline answer is local work), each split and retried as need be."""
    for request in todo:
        stop.check()
        extraction, failures = extract_splitting(extractor, request, allowance=allowance)
        finished[request.request_id] = (extraction, tuple(failures))


def _provenance(source: Batch | Extractor) -> tuple[str, str | None, str]:
    name = source.extractor if isinstance(source, Batch) else source.name
    return name, source.model, source.prompt_version


def _named(source: Batch | Extractor) -> str:
    name, model_name, prompt_version = _provenance(source)
    return f"{name}" + (f" model {model_name}" if model_name else "") + f" prompt {prompt_version}"


def _dispatch(extractor: Extractor, todo: Sequence[ExtractRequest], allowance: Allowance, pacer: pace.Pace,
              log: journal.Journal, finished: Finished) -> None:
    """The request loop: hand requests to worker threads while the pace allows (each journals its answer before
    it is done); on a stop or an error, send nothing more, wait for what is in flight, then raise.

    Where requests share a cached prefix, the first goes alone: the API caches it only once a reply to it has
    begun, so requests sent beside it would each pay to write the cache again."""
    queue = deque(todo)
    in_flight: dict[Future[tuple[Extraction, tuple[tuple[ExtractRequest, str], ...]]], ExtractRequest] = {}
    error: BaseException | None = None
    warming = isinstance(extractor, CachesPrefix) and extractor.caches_prefix
    with ThreadPoolExecutor(max_workers=pacer.ceiling, thread_name_prefix="distill-request") as pool:
        while queue or in_flight:
            timeout = None
            while queue and error is None and not stop.requested() and not (warming and in_flight):
                wait_for = pacer.wait_seconds(len(in_flight))
                if wait_for != 0:
                    timeout = wait_for
                    break
                request = queue.popleft()
                in_flight[pool.submit(_answered, extractor, request, allowance, log, pacer.overloaded)] = request
            if not in_flight:
                if error is not None or stop.requested() or not queue:
                    break
                time.sleep(min(timeout or 0.05, 1.0))  # paused by a retry-after, nothing in flight
                continue
            done, _ = wait(in_flight, timeout=min(timeout, 1.0) if timeout else 1.0, return_when=FIRST_COMPLETED)
            for future in done:
                request = in_flight.pop(future)
                try:
                    extraction, failures = future.result()
                except BaseException as exc:  # noqa: BLE001 - re-raised once the calls in flight are saved
                    error = error or exc
                    continue
                finished[request.request_id] = (extraction, tuple(failures))
                pacer.succeeded()
                warming = False
    if error is not None:
        raise error
    stop.check()  # a safe point: the journal holds every answer so far, the next run resumes the batch


def _answered(extractor: Extractor, request: ExtractRequest, allowance: Allowance, log: journal.Journal,
              on_overload: OverloadListener) -> tuple[Extraction, tuple[tuple[ExtractRequest, str], ...]]:
    """One request in a worker thread: extracted (split and retried as need be), then journaled, so the fsync of
    one answer overlaps the calls of the others."""
    extraction, failures = extract_splitting(extractor, request, allowance=allowance, on_overload=on_overload)
    log.append(extraction, tuple(failures))
    return extraction, tuple(failures)


def note_pace(tally: Tally, pacer: pace.Pace, extractor: Extractor) -> None:
    """The run's counters of how the API pushed back, and the output mode the server took."""
    tally.overloaded = pacer.overloads
    tally.concurrency_lowest = pacer.lowest if pacer.overloads else None
    if isinstance(extractor, NegotiatesOutputMode):
        tally.output_mode, tally.output_mode_note = extractor.mode, extractor.mode_note


def submit(state_dir: Path, batch: Batch, extractor: Extractor) -> Batch:
    """Hand the requests to the Message Batches API (half price); the batch file remembers its id.

    The file says `submitting` while the API is asked, so a kill, or a failure that leaves open whether the API
    accepted the batch, never lets a later run send it again on its own (see `set_aside_unsubmitted`). Only a
    definite refusal puts it back to `pending`."""
    if not isinstance(extractor, SubmitsBatches):
        raise DistillError(f"--batch-api needs an extractor with a batch API (anthropic), not {extractor.name}")
    batch = replace(batch, status=SUBMITTING, extractor=extractor.name, model=extractor.model,
                    prompt_version=extractor.prompt_version)
    batches.write(state_dir, batch)
    try:
        remote_id = extractor.submit_batch(batch.requests)
    except SubmitUncertain:
        raise
    except DistillError:
        batches.write(state_dir, replace(batch, status=PENDING))
        raise
    batch = replace(batch, status=SUBMITTED, remote_id=remote_id)
    batches.write(state_dir, batch)
    return batch


def may_be_billed(batch_id: str) -> str:
    return (f"batch {batch_id} may already be billed: the Message Batches API was asked to create it but its id "
            f"was never recorded; `distill batches retry {batch_id}` sends it again (paying again if the API ran "
            f"it), `distill batches discard {batch_id}` gives it up")


def set_aside_unsubmitted(batch: Batch) -> Batch:
    """A `submitting` batch a run left: every request quarantined, none sent again, so it is committed as such
    (its messages recorded, its cursors moved) and the user decides with `distill batches retry|discard`.

    The API cannot be asked about it instead: it lists batches without their requests' custom_ids, so there is no
    reliable way to tell which batch, if any, is this one."""
    why = may_be_billed(batch.batch_id)
    return replace(batch, status=DISTILLED, results=(), failed=tuple((r, why) for r in batch.requests))


def collect(state_dir: Path, batch: Batch, extractor: Extractor) -> Batch | None:
    """The results of a submitted batch once the API has ended it (None while it is still running).

    Failed requests are quarantined as they are: `distill batches retry` sends them again, one by one."""
    if not isinstance(extractor, SubmitsBatches):
        raise DistillError(f"batch {batch.batch_id} was submitted to a batch API {extractor.name} cannot collect")
    if batch.remote_id is None:
        raise DistillError(f"batch {batch.batch_id} is marked submitted but names no remote batch")
    outcome = extractor.collect_batch(batch.remote_id, batch.requests)
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
