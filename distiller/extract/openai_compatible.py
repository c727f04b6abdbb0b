"""The OpenAI-compatible extractor: one Chat Completions call per request, to any server that speaks the protocol
(Ollama, vLLM, llama.cpp's server, LM Studio, a gateway), through the `openai` client and its retries.

The same prompt, caps, verification, journal, budgets and pace as the Anthropic extractor; what differs is that
such servers honour structured output unevenly and local models break JSON often. So:

- The strictest output mode the server takes is used: `response_format` json_schema (the prompt's schema), else
  json_object, else plain text. The first request tries them in that order, one call per `extract` (a refusal
  is ModeRefused, and the pipeline holds the next call against the budget before asking again); a 400/422 in one
  mode followed by a success in the next settles the run on the next (`mode`, with why in `mode_note`), so the
  detection happens once per run, not per request. When every mode is refused the request itself is at fault:
  nothing is settled and the request is split like any refused one.
- Whatever the mode, the reply is parsed leniently (a code fence, prose or a <think> block around the JSON object)
  and validated strictly afterwards (verify.py). A reply that still does not parse is Unparsed: the pipeline asks
  once more (a fresh sample: no sampling parameters are sent, so the server's defaults apply), held against the
  budget like any call; a second failure splits the request and, at the bottom, quarantines it with the reason.
  Nothing is ever silently empty.
- A reply cut at max_tokens (finish_reason "length") is Truncated: retried once with more room (RetriesTruncated).
- Usage comes from the reply's `usage`; a missing or unbelievable count is estimated (4 characters a token) and
  the Usage marked so. The cost is $0 unless a price is configured (prices.configured).

Every client failure is translated here into the pipeline's outcomes, as anthropic.py does: try later
(ExtractionUnavailable), split or give up (BadRequest), fix the key (AuthenticationFailed).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import openai

from distiller import prices
from distiller.errors import DistillError
from distiller.extract.base import (
    AuthenticationFailed,
    BadRequest,
    Candidate,
    Extraction,
    ExtractionUnavailable,
    ExtractorSettings,
    ExtractRequest,
    ModeRefused,
    OverloadListener,
    Truncated,
    Unparsed,
    Usage,
)
from distiller.extract.candidates import parse_candidates
from distiller.extract.prompt import (
    OUTPUT_SCHEMA,
    PROMPT_VERSION,
    SYSTEM_PROMPT,
    render_request,
)
from distiller.extract.replies import count, embedded_object, retry_after, without_thinking

if TYPE_CHECKING:
    import httpx2


NAME = "openai-compatible"
BASE_URL_ENV = "OPENAI_BASE_URL"
KEY_ENV = "OPENAI_API_KEY"
NO_KEY = "unused"  # the client insists on a key; local servers ignore it
MODES = ("json_schema", "json_object", "text")
MAX_TOKENS_CEILING = 16_000
# 429 is rate limiting everywhere; 503 is how vLLM, llama.cpp and most gateways say "overloaded" (Anthropic's 529).
OVERLOADED = (429, 503, 529)
CHARS_PER_TOKEN = 4
# A local model on a modest GPU reads the ≈11k-token request in seconds, but on a CPU in minutes: ten minutes is
# generous for the first and still ends a hopeless wait (the run stops with 75 and the batch stays pending).
REQUEST_TIMEOUT_SECONDS = 600.0
_RESPONSE_FORMATS: dict[str, dict[str, Any]] = {
    "json_schema": {"type": "json_schema",
                    "json_schema": {"name": "beliefs", "schema": OUTPUT_SCHEMA, "strict": True}},
    "json_object": {"type": "json_object"},
}


@dataclass(frozen=True, slots=True)
class _Reply:
    """One completion as it came back: its text, why it stopped, and what it cost."""

    text: str
    finish_reason: str | None
    usage: Usage


class OpenAICompatibleExtractor:
    """Billed (metered, $0 unless priced), online; retries a truncated answer with more room."""

    name = NAME
    prompt_version = PROMPT_VERSION
    offline = False
    billed = True

    def __init__(self, model: str, *, base_url: str, api_key: str | None = None, rates: prices.Rates = prices.FREE,
                 max_tokens: int = 4096, max_retries: int = 2, timeout: float = REQUEST_TIMEOUT_SECONDS) -> None:
        self.model = model
        self.rates = rates
        self.max_tokens = max_tokens
        self.base_url = base_url
        self._mode_lock = threading.Lock()
        self._probing = threading.Lock()  # held by the request finding the mode
        self._mode_index = 0
        self._refusals: list[str] = []  # the modes refused while finding one, in the server's words
        self.mode_settled = False  # a reply has come back in `mode`
        self.mode_note: str | None = None  # why a stricter mode was given up, in the server's words
        # The listener and the count of responses of the call this thread is making: the client's response hook
        # runs in the calling thread, for every response, the ones it retries itself included.
        self._calls = threading.local()
        http_client = openai.DefaultHttpxClient(event_hooks={"response": [self._observe]})
        self._client = openai.OpenAI(api_key=api_key or NO_KEY, base_url=base_url, max_retries=max_retries,
                                     timeout=timeout, http_client=http_client)

    @property
    def mode(self) -> str:
        """The output mode requests are sent in now: json_schema, json_object or text."""
        return MODES[self._mode_index]

    def _observe(self, response: httpx2.Response) -> None:
        self._calls.responses = getattr(self._calls, "responses", 0) + 1
        listener: OverloadListener | None = getattr(self._calls, "listener", None)
        if listener is not None and response.status_code in OVERLOADED:
            listener(response.status_code, retry_after(response.headers))

    def more_room(self, max_tokens: int) -> int | None:
        """The max_tokens a reply truncated at max_tokens is retried with once, or None when there is no more."""
        return min(2 * max_tokens, MAX_TOKENS_CEILING) if max_tokens < MAX_TOKENS_CEILING else None

    def extract(self, request: ExtractRequest, *, max_tokens: int | None = None,
                on_overload: OverloadListener | None = None) -> Extraction:
        """One request: the reply parsed into candidates. A reply with no answer that parses is Unparsed (the
        pipeline asks once more, then splits), one cut at max_tokens Truncated; every call's usage is in the
        Extraction or in the error raised, so the budget sees each."""
        room = max_tokens or self.max_tokens
        spent: list[Usage] = []
        reply = self._complete(request, room, on_overload, spent)
        return Extraction(request.request_id, self._candidates(reply, room, spent), tuple(spent))

    def _candidates(self, reply: _Reply, room: int, spent: list[Usage]) -> tuple[Candidate, ...]:
        if reply.finish_reason == "length":
            raise Truncated(f"the reply was cut at max_tokens {room}", tuple(spent), max_tokens=room)
        if reply.finish_reason == "content_filter":
            raise BadRequest("the server's content filter stopped the reply", tuple(spent))
        try:
            return parse_reply(reply.text)
        except BadRequest as exc:
            raise Unparsed(f"the reply did not parse: {exc}", tuple(spent)) from None

    def _complete(self, request: ExtractRequest, room: int, on_overload: OverloadListener | None,
                  spent: list[Usage]) -> _Reply:
        """One completion in the run's mode. Until a reply has settled the mode, one request at a time finds it
        (the others wait, then follow it), so a server that refuses json_schema is asked in it once, not once per
        request in flight."""
        with self._probing:
            if not self.mode_settled:
                return self._probe(request, room, on_overload, spent)
        try:
            reply = self._call(request, room, self.mode, on_overload)
        except BadRequest as exc:
            raise BadRequest(str(exc), (*spent, *exc.usage)) from None
        spent.append(reply.usage)
        return reply

    def _probe(self, request: ExtractRequest, room: int, on_overload: OverloadListener | None,
               spent: list[Usage]) -> _Reply:
        """One call in the mode being tried, from the strictest down. The first reply settles the run's mode. A
        refusal (400/422) steps down to the next mode and raises ModeRefused, so the pipeline holds the next call
        against the budget before it is sent (a probe that made its own calls let up to two escape the hold). A
        refusal in the last mode means every mode was refused: the request is at fault, not the mode, so nothing
        is settled (the next request starts again from the strictest) and the BadRequest says what each refusal
        was."""
        mode = self.mode
        try:
            reply = self._call(request, room, mode, on_overload)
        except BadRequest as exc:
            spent.extend(exc.usage)
            with self._mode_lock:
                self._refusals.append(f"{mode} refused: {exc}")
                if self._mode_index + 1 < len(MODES):
                    self._mode_index += 1
                    raise ModeRefused(f"{mode} refused: {exc}; asking in {self.mode}", tuple(spent)) from None
                refusals, self._refusals, self._mode_index = self._refusals, [], 0
            raise BadRequest("every output mode was refused: " + "; ".join(refusals), tuple(spent)) from None
        spent.append(reply.usage)
        with self._mode_lock:
            self.mode_settled = True
            self.mode_note = "; ".join(self._refusals) or None
        return reply

    def _call(self, request: ExtractRequest, room: int, mode: str, on_overload: OverloadListener | None) -> _Reply:
        # No sampling parameters: the server's own defaults, so a reply asked for again is a fresh sample.
        return self._send(SYSTEM_PROMPT, render_request(request), room, _RESPONSE_FORMATS.get(mode), on_overload)

    def complete(self, system: str, user: str, max_tokens: int) -> tuple[str, Usage]:
        """One plain-text call outside extraction (the profile, CompletesText): the reply's text and its usage;
        errors raised as extract() raises them, a refusal carrying its estimate. No response_format: every server
        takes plain text, and the caller parses and verifies what comes back."""
        reply = self._send(system, user, max_tokens, None, None)
        return reply.text, reply.usage

    def _send(self, system: str, user: str, room: int, response_format: dict[str, Any] | None,
              on_overload: OverloadListener | None) -> _Reply:
        params: dict[str, Any] = {"model": self.model, "max_tokens": room,
                                  "messages": [{"role": "system", "content": system},
                                               {"role": "user", "content": user}]}
        if response_format is not None:
            params["response_format"] = response_format
        estimate = (len(system) + len(user)) // CHARS_PER_TOKEN + 1
        self._calls.listener, self._calls.responses = on_overload, 0
        started = time.monotonic()
        try:
            raw = self._client.chat.completions.with_raw_response.create(**params)
            body = _body(raw.http_response)
        except openai.APIStatusError as exc:
            error = _translate(exc, self.model)
            if isinstance(error, BadRequest):
                raise BadRequest(str(error), (self._usage({}, estimate, 0, 0),)) from exc
            raise error from exc
        except openai.OpenAIError as exc:
            raise _translate(exc, self.model) from exc
        finally:
            retries = max(0, getattr(self._calls, "responses", 1) - 1)
            self._calls.listener = None
        latency_ms = round((time.monotonic() - started) * 1000)
        text, finish_reason = _choice(body)
        reported = body.get("usage") if isinstance(body, dict) else None
        usage = self._usage(reported if isinstance(reported, dict) else {}, estimate,
                            len(text) // CHARS_PER_TOKEN + 1, latency_ms, retries=retries)
        return _Reply(text, finish_reason, usage)

    def _usage(self, reported: dict[str, object], input_estimate: int, output_estimate: int, latency_ms: int,
               *, retries: int = 0) -> Usage:
        """The reply's usage as far as it is a plausible count; a missing or unreadable field is the estimate,
        and the usage is then marked estimated."""
        input_tokens = count(reported.get("prompt_tokens"))
        output_tokens = count(reported.get("completion_tokens"))
        estimated = input_tokens is None or output_tokens is None
        input_tokens = input_estimate if input_tokens is None else input_tokens
        output_tokens = output_estimate if output_tokens is None else output_tokens
        return Usage(self.model, input_tokens, output_tokens, 0, 0, latency_ms,
                     prices.cost(self.rates, input_tokens, output_tokens, 0, 0), retries=retries, estimated=estimated)


def parse_reply(text: str) -> tuple[Candidate, ...]:
    """The candidates of a reply: the JSON object as sent, else the first {"candidates": …} object found inside a
    code fence or among prose (a reasoning model's <think> block skipped). Validation is verify.py's; this only
    finds the object, and a reply with none is a BadRequest naming what came back."""
    stripped = without_thinking(text)
    try:
        return parse_candidates(stripped)
    except BadRequest as exc:
        first = exc
    found = embedded_object(stripped, "candidates")
    if found is not None:
        return parse_candidates(found)
    shown = stripped[:80] + ("…" if len(stripped) > 80 else "")
    raise BadRequest(f"{first} ({len(text)} characters: {shown!r})" if stripped else "the reply is empty")


def _body(response: httpx2.Response) -> object:
    try:
        return response.json()
    except ValueError:
        return None


def _choice(body: object) -> tuple[str, str | None]:
    """The first choice's text and finish reason; a body that has none reads as an empty reply."""
    choices = body.get("choices") if isinstance(body, dict) else None
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    message = first.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    reason = first.get("finish_reason")
    return (content if isinstance(content, str) else ""), (reason if isinstance(reason, str) else None)


def _translate(exc: openai.OpenAIError, model: str) -> DistillError:
    """Map a client error (after its own retries) onto what the pipeline should do next."""
    if isinstance(exc, openai.APIConnectionError):  # a timeout included
        return ExtractionUnavailable(f"OpenAI-compatible server unreachable: {exc.message}")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        detail = _detail(exc)
        if status in (408, 409, 429) or status >= 500:
            return ExtractionUnavailable(f"OpenAI-compatible server unavailable ({status}): {detail}")
        if status in (401, 403):
            return AuthenticationFailed(f"the OpenAI-compatible server rejected the key ({status}): {detail}; "
                                        f"check {KEY_ENV}")
        if status == 404:
            return DistillError(f"the OpenAI-compatible server does not serve model {model!r} (404): {detail}; "
                                f"pull or load it (e.g. `ollama pull {model}`) or fix --model and base_url")
        if status in (400, 413, 422):
            return BadRequest(f"the server refused the request ({status}): {detail}")
        return DistillError(f"OpenAI-compatible server error ({status}): {detail}")
    if isinstance(exc, openai.APIResponseValidationError):
        return BadRequest(f"unexpected response from the server: {exc.message}")
    return DistillError(f"OpenAI client error: {exc}")


def _detail(exc: openai.APIStatusError) -> str:
    """The server's own words: the client's `body` is the error object (OpenAI, vLLM) or the whole body, whose
    `error` is an object or, for some servers (Ollama, llama.cpp), a string."""
    body = exc.body
    error = body.get("error", body) if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    return (message if isinstance(message, str) and message else exc.message)[:300]


def base_url(settings: ExtractorSettings) -> str | None:
    """Where the server is: the base_url setting (flag, DISTILL_BASE_URL, distill.toml), else OPENAI_BASE_URL."""
    return settings.base_url or os.environ.get(BASE_URL_ENV) or None


def from_settings(settings: ExtractorSettings) -> OpenAICompatibleExtractor:
    """The extractor the settings describe; what it cannot run with is refused here, before any call."""
    url = base_url(settings)
    if not url:
        raise DistillError(f"the openai-compatible extractor needs a server: pass --base-url (e.g. "
                           f"http://localhost:11434/v1 for Ollama), or set base_url or {BASE_URL_ENV}")
    if settings.origin("model") == "default":
        raise DistillError("the openai-compatible extractor needs a model name: pass --model (e.g. llama3.1:8b), "
                           "or set model")
    if settings.batch_api:
        raise DistillError(f"--batch-api needs the Anthropic extractor; {NAME} has no batch API "
                           f"(batch_api from {settings.origin('batch_api')})")
    rates = prices.configured(settings.price_input_per_mtok, settings.price_output_per_mtok)
    return OpenAICompatibleExtractor(settings.model, base_url=url, api_key=os.environ.get(KEY_ENV) or None,
                                     rates=rates)


@dataclass(frozen=True, slots=True)
class Probe:
    """What `distill doctor` found at the server: whether it answered, and whether it serves the model."""

    reachable: bool
    serves_model: bool | None  # None: it lists no models (some gateways do not)
    detail: str


def probe(url: str, model: str, *, timeout: float = 3.0) -> Probe:
    """Ask the server for its models (GET /models: free, and every compatible server we know serves it)."""
    client = openai.OpenAI(api_key=os.environ.get(KEY_ENV) or NO_KEY, base_url=url, max_retries=0, timeout=timeout)
    try:
        names = [m.id for m in client.models.list()]
    except openai.APIStatusError as exc:
        if exc.status_code in (401, 403):
            return Probe(True, None, f"{url} rejected the key ({exc.status_code}); check {KEY_ENV}")
        return Probe(True, None, f"{url} answered {exc.status_code} to GET /models: {_detail(exc)}")
    except openai.OpenAIError as exc:
        return Probe(False, None, f"{url} did not answer: {exc}")
    finally:
        client.close()
    if not names:
        return Probe(True, None, f"{url} answers but lists no models")
    if model in names or f"{model}:latest" in names:  # Ollama lists an untagged model as :latest
        return Probe(True, True, f"{url} serves {model}")
    shown = ", ".join(sorted(names)[:8]) + ("…" if len(names) > 8 else "")
    return Probe(True, False, f"{url} answers but does not serve {model} (it serves: {shown})")
