"""The Anthropic extractor: one structured-output Messages call per request, or many at half price as a batch.

Every SDK failure is translated at this boundary into the pipeline's three outcomes: try again later
(ExtractionUnavailable), split or give up on this request (BadRequest), or fix the key (AuthenticationFailed).
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import anthropic
import orjson
from anthropic.types.messages import (
    MessageBatchIndividualResponse,
    MessageBatchSucceededResult,
)

if TYPE_CHECKING:
    import httpx2  # the SDK's own HTTP client library: only the type of a response hook's argument

from distiller import prices
from distiller.errors import DistillError
from distiller.extract.base import (
    AuthenticationFailed,
    BadRequest,
    BatchOutcome,
    Candidate,
    Extraction,
    ExtractionUnavailable,
    ExtractRequest,
    OverloadListener,
    SubmitUncertain,
    Truncated,
    Usage,
)
from distiller.extract.candidates import parse_candidates
from distiller.extract.prompt import (
    OUTPUT_SCHEMA,
    PROMPT_VERSION,
    STATIC_PREFIX_TOKENS,
    SYSTEM_PROMPT,
    render_request,
)
from distiller.extract.replies import count, retry_after

DEFAULT_MODEL = "claude-haiku-5-5"
MAX_TOKENS_CEILING = 16_000  # the most a truncated reply is retried with: the SDK wants streaming above ~21k
CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
OVERLOADED = (429, 529)

_OUTPUT_CONFIG = {"format": {"type": "json_schema", "schema": OUTPUT_SCHEMA}}


class AnthropicExtractor:
    """Billed, online; retries a truncated answer with more room, caches the static prefix where the model caches
    one that long, and submits Message Batches."""

    name = "anthropic"
    prompt_version = PROMPT_VERSION
    offline = False
    billed = True

    def __init__(self, model: str = DEFAULT_MODEL, *, api_key: str | None = None, base_url: str | None = None,
                 max_tokens: int = 4096, allow_expensive_model: bool = False, max_retries: int = 2,
                 timeout: float = 60.0) -> None:
        if prices.is_expensive(model) and not allow_expensive_model:
            raise DistillError(f"model {model!r} is Opus-class and expensive; "
                               "pass --allow-expensive-model (or set allow_expensive_model) to use it")
        prices.rates(model)  # an unpriced model fails here, before any money is spent
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise DistillError("no Anthropic API key: set ANTHROPIC_API_KEY")
        self.model = model
        self.rates = prices.rates(model)
        self.max_tokens = max_tokens
        self._system = system_blocks(model)
        self.caches_prefix = "cache_control" in self._system[0]  # every request reads the prefix the first wrote
        # The listener of the call this thread is making (extract's `on_overload`): the SDK's response hook runs in
        # the calling thread, for every response, the ones it retries itself included.
        self._listening = threading.local()
        http_client = anthropic.DefaultHttpxClient(event_hooks={"response": [self._observe]})
        self._client = anthropic.Anthropic(api_key=key, base_url=base_url, max_retries=max_retries, timeout=timeout,
                                           http_client=http_client)

    def _observe(self, response: httpx2.Response) -> None:
        listener: OverloadListener | None = getattr(self._listening, "listener", None)
        if listener is not None and response.status_code in OVERLOADED:
            listener(response.status_code, retry_after(response.headers))

    def extract(self, request: ExtractRequest, *, max_tokens: int | None = None,
                on_overload: OverloadListener | None = None) -> Extraction:
        """One call. Whatever the reply, its usage is counted: a refused, truncated or malformed reply raises a
        BadRequest (Truncated) that carries it, and a 400, which reports none, carries an estimate."""
        max_tokens = max_tokens or self.max_tokens
        started = time.monotonic()
        self._listening.listener = on_overload
        try:
            raw = self._client.messages.with_raw_response.create(**self._params(request, max_tokens))
            message = raw.parse()
        except anthropic.APIStatusError as exc:
            error = _translate(exc)
            if isinstance(error, BadRequest):
                raise BadRequest(str(error), (self.estimated_usage(request),)) from exc
            raise error from exc
        except anthropic.AnthropicError as exc:
            raise _translate(exc) from exc
        finally:
            self._listening.listener = None
        latency_ms = round((time.monotonic() - started) * 1000)
        usage = (self._usage(_reported_usage(_body(raw.http_response)),
                             self._fallback(request, max_tokens), latency_ms, batch=False, retries=raw.retries_taken),)
        try:
            candidates = parse_message(message)
        except BadRequest as exc:
            if message.stop_reason == "max_tokens":
                raise Truncated(str(exc), usage, max_tokens=max_tokens) from None
            raise BadRequest(str(exc), usage) from None
        return Extraction(request.request_id, candidates, usage)

    def complete(self, system: str, user: str, max_tokens: int) -> tuple[str, Usage]:
        """One plain call outside extraction (the profile): the reply's text and its usage, counted as extract()
        counts it (an unreadable count as the estimated input and all the output allowed); errors raised as
        extract() raises them, a 400 carrying its estimate."""
        estimate = Usage(self.model, (len(system) + len(user)) // 4 + 1, 0, 0, 0, 0,
                         prices.cost_usd(self.model, (len(system) + len(user)) // 4 + 1, 0, 0, 0), estimated=True)
        started = time.monotonic()
        try:
            raw = self._client.messages.with_raw_response.create(
                model=self.model, max_tokens=max_tokens, system=system, messages=[{"role": "user", "content": user}])
            message = raw.parse()
        except anthropic.APIStatusError as exc:
            error = _translate(exc)
            if isinstance(error, BadRequest):
                raise BadRequest(str(error), (estimate,)) from exc
            raise error from exc
        except anthropic.AnthropicError as exc:
            raise _translate(exc) from exc
        usage = self._usage(_reported_usage(_body(raw.http_response)), replace(estimate, output_tokens=max_tokens),
                            round((time.monotonic() - started) * 1000), batch=False, retries=raw.retries_taken)
        return "".join(getattr(block, "text", "") for block in message.content), usage

    def more_room(self, max_tokens: int) -> int | None:
        """The max_tokens a reply truncated at max_tokens is retried with once, or None when there is no more."""
        return min(2 * max_tokens, MAX_TOKENS_CEILING) if max_tokens < MAX_TOKENS_CEILING else None

    def estimated_usage(self, request: ExtractRequest) -> Usage:
        """A refused call's cost as the budget must assume it: the request's estimated input, no output."""
        tokens = (len(SYSTEM_PROMPT) + len(render_request(request))) // 4 + 1
        return Usage(self.model, tokens, 0, 0, 0, 0, prices.cost_usd(self.model, tokens, 0, 0, 0), estimated=True)

    def _fallback(self, request: ExtractRequest | None, max_tokens: int) -> Usage:
        """What a reply's unreadable usage fields are counted as: the request's estimated input and all the output
        it was allowed, as the budget held for it (nothing for a result of no request we know)."""
        if request is None:
            return Usage(self.model, 0, 0, 0, 0, 0, 0.0, estimated=True)
        return replace(self.estimated_usage(request), output_tokens=max_tokens)

    def submit_batch(self, requests: Sequence[ExtractRequest]) -> str:
        """Submit requests as one Message Batch (half price, results within 24 h); returns the batch id."""
        if not requests:
            raise DistillError("cannot submit an empty batch")
        seen: set[str] = set()
        for request in requests:
            if not CUSTOM_ID.fullmatch(request.request_id):
                raise DistillError(f"request id {request.request_id!r} is not a valid batch custom_id "
                                   "(1-64 of a-z A-Z 0-9 _ -)")
            if request.request_id in seen:
                raise DistillError(f"request id {request.request_id!r} appears twice in one batch")
            seen.add(request.request_id)
        try:
            # No retries: the API takes no idempotency key, so a retry after a timeout could create a second batch.
            batch = self._client.with_options(max_retries=0).messages.batches.create(
                requests=[{"custom_id": r.request_id, "params": self._params(r)}  # type: ignore[typeddict-item]
                          for r in requests]
            )
        except anthropic.APIStatusError as exc:
            if exc.status_code >= 500:
                raise SubmitUncertain(f"{_translate(exc)}; the batch may have been created all the same") from exc
            raise _translate(exc) from exc  # a 4xx: refused, nothing was created
        except anthropic.AnthropicError as exc:
            raise SubmitUncertain(f"{_translate(exc)}; the batch may have been created all the same") from exc
        return batch.id

    def collect_batch(self, batch_id: str,
                      requests: Sequence[ExtractRequest] = ()) -> BatchOutcome | None:
        """The batch's results once it has ended; None while it is still in progress (or canceling).

        Costs are priced at this extractor's model with the batch discount, so collect with the model the batch
        was submitted with; latency_ms is 0, since a batch has no per-request latency. `requests` (the batch's)
        give the estimates that stand in for any usage the API reports unreadably.
        """
        by_id = {r.request_id: r for r in requests}
        try:
            batch = self._client.messages.batches.retrieve(batch_id)
            if batch.processing_status != "ended":
                return None
            if not batch.results_url:
                raise DistillError(f"batch {batch_id} has ended but the API gives no results URL")
            # The whole JSONL body is read inside the SDK's request, not streamed as `batches.results()` does: a
            # connection dropped mid-body is then retried by the SDK and surfaces as its APIConnectionError.
            body = self._client.get(batch.results_url, cast_to=bytes,
                                    options={"headers": {"Accept": "application/binary"}})
        except anthropic.AnthropicError as exc:
            raise _translate(exc) from exc
        if not isinstance(body, bytes):
            raise DistillError(f"unreadable results for batch {batch_id}: not a JSONL body")
        extractions: dict[str, Extraction] = {}
        errors: dict[str, str] = {}
        unusable: dict[str, Usage] = {}
        for raw in body.splitlines():
            if not raw.strip():
                continue
            try:
                line = orjson.loads(raw)
                entry = MessageBatchIndividualResponse.construct(**line)
                custom_id, result = entry.custom_id, entry.result
                kind = result.type
            except (ValueError, TypeError, AttributeError) as exc:  # not JSON, not an object, not a result
                # One bad line costs only its own request (quarantined, and counted as billed if it names one):
                # failing the whole batch would leave it uncollectable, and every later run stuck behind it.
                named = _CUSTOM_ID.search(raw)
                request_id = named.group(1).decode("utf-8", "replace") if named else None
                if request_id in by_id:
                    errors[request_id] = f"unreadable result: {exc}"
                    unusable[request_id] = self._usage({}, self._fallback(by_id[request_id], self.max_tokens), 0,
                                                       batch=True)
                continue
            if isinstance(result, MessageBatchSucceededResult):
                fallback = self._fallback(by_id.get(custom_id), self.max_tokens)
                usage = self._usage(_reported_usage(line.get("result", {}).get("message")), fallback, 0, batch=True)
                try:
                    candidates = parse_message(result.message)
                except BadRequest as exc:
                    errors[custom_id] = f"bad_request: {exc}"
                    unusable[custom_id] = usage
                    continue
                extractions[custom_id] = Extraction(custom_id, candidates, (usage,))
            elif kind == "errored":
                error = getattr(getattr(result, "error", None), "error", None)
                errors[custom_id] = f"errored: {getattr(error, 'type', '?')}: {getattr(error, 'message', '?')}"
            else:
                errors[custom_id] = str(kind)
        return BatchOutcome(batch_id, extractions, errors, unusable)

    def _params(self, request: ExtractRequest, max_tokens: int | None = None) -> dict[str, Any]:
        """Static, cached system prompt first; the rendered request last. No sampling parameters, no tools."""
        return {
            "model": self.model,
            "max_tokens": max_tokens or self.max_tokens,
            "system": self._system,
            "output_config": _OUTPUT_CONFIG,
            "messages": [{"role": "user", "content": render_request(request)}],
        }

    def _usage(self, usage: Mapping[str, object], fallback: Usage, latency_ms: int, *, batch: bool,
               retries: int = 0) -> Usage:
        """The reply's usage, trusted only as far as it is a plausible count: any field that is not a non-negative
        int (a negative, a null, a string, a float, a bool, an absurd size) is taken from `fallback`, and the usage
        is then marked estimated, so the budget is never credited nor a paid answer lost to a TypeError. `usage` is
        the reply's JSON as sent, not the SDK's model of it, which coerces some fields and passes others through."""
        input_tokens = count(usage.get("input_tokens"))
        output_tokens = count(usage.get("output_tokens"))
        # absent or null cache fields are the API's way of saying none: only a present, unreadable one is suspect
        cache_read = count(_or_zero(usage.get("cache_read_input_tokens")))
        cache_write = count(_or_zero(usage.get("cache_creation_input_tokens")))
        estimated = None in (input_tokens, output_tokens, cache_read, cache_write)
        input_tokens = fallback.input_tokens if input_tokens is None else input_tokens
        output_tokens = fallback.output_tokens if output_tokens is None else output_tokens
        cache_read = fallback.cache_read_tokens if cache_read is None else cache_read
        cache_write = fallback.cache_write_tokens if cache_write is None else cache_write
        return Usage(
            model=self.model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
            latency_ms=latency_ms,
            cost_usd=prices.cost_usd(self.model, input_tokens, output_tokens, cache_read, cache_write, batch=batch),
            retries=retries,
            estimated=estimated,
        )


_CUSTOM_ID = re.compile(rb'"custom_id"\s*:\s*"([^"\\]{1,200})"')


def _body(response: httpx2.Response) -> object:
    """The reply's JSON, parsed as the SDK parsed it (so a figure it could read, such as 1e400, parses here too)."""
    try:
        return response.json()
    except ValueError:
        return None


def _reported_usage(message: object) -> Mapping[str, object]:
    """The `usage` object of a message as the API sent it (empty when there is none to read)."""
    usage = message.get("usage") if isinstance(message, dict) else None
    return usage if isinstance(usage, dict) else {}


def _or_zero(value: object) -> object:
    return 0 if value is None else value


def system_blocks(model: str, prefix_tokens: int = STATIC_PREFIX_TOKENS) -> list[dict[str, Any]]:
    """The static system prompt, with a cache_control marker only where the model caches a prefix this long.
    Below a model's minimum the API ignores the marker without a word; leaving it off then keeps the request, the
    estimates (which price the prefix as cached only where it can be) and the fake API's emulation truthful."""
    block: dict[str, Any] = {"type": "text", "text": SYSTEM_PROMPT}
    if prices.caches(model, prefix_tokens):
        block["cache_control"] = {"type": "ephemeral"}
    return [block]


def _translate(exc: anthropic.AnthropicError) -> DistillError:
    """Map an SDK error (after its own retries) onto what the pipeline should do next."""
    if isinstance(exc, anthropic.APIConnectionError):
        return ExtractionUnavailable(f"Anthropic API unreachable: {exc.message}")
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        detail = exc.api_message or exc.message
        if status in (408, 409, 429) or status >= 500:
            return ExtractionUnavailable(f"Anthropic API unavailable ({status} {exc.type or 'error'}): {detail}")
        if status in (401, 403):
            return AuthenticationFailed(f"Anthropic API rejected the key ({status}): {detail}; check ANTHROPIC_API_KEY")
        if status in (400, 413, 422):
            return BadRequest(f"Anthropic API refused the request ({status}): {detail}")
        return DistillError(f"Anthropic API error ({status} {exc.type or 'error'}): {detail}")
    if isinstance(exc, anthropic.APIResponseValidationError):
        return BadRequest(f"unexpected response from the Anthropic API: {exc.message}")
    return DistillError(f"Anthropic SDK error: {exc}")


def parse_message(message: anthropic.types.Message) -> tuple[Candidate, ...]:
    """Candidates from a structured-output reply; a refusal, a truncated or an unparseable reply is a BadRequest."""
    if message.stop_reason == "refusal":
        raise BadRequest("the model refused the request")
    if message.stop_reason in ("max_tokens", "model_context_window_exceeded"):
        raise BadRequest(f"the reply was truncated ({message.stop_reason})")
    text = "".join(block.text for block in message.content if block.type == "text")
    return parse_candidates(text)
