"""The contract between the pipeline and any extractor: a request of screened items in, candidates out.

An extractor is any object with the members of `Extractor`. What only some can do is a capability of its own,
a small protocol the pipeline asks with `isinstance` (never `getattr`, never by setting attributes on the object):
`RetriesTruncated` (a reply cut at its output limit is worth one call with more room), `CachesPrefix` (requests
share a cached prefix the first must write, so it goes alone), `SubmitsBatches` (a provider's batch API) and
`CompletesText` (answers a free-text prompt: the profile is written by the backend that has it, else by the rules'
template). Which
extractors exist, and what they need, is the registry's business (`distiller/extract/__init__.py`).

The caps every reply is held to live here, below both the prompt that states them and the verification that
enforces them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from distiller.errors import DistillError, Unavailable
from distiller.prices import Rates

MAX_CANDIDATES = 20  # candidates one reply may propose (the prompt says so; verify.py cuts the rest, counted)
MAX_PER_ITEM = 5  # candidates citing one item: a message states a few facts, not dozens

# Told of every 429 (rate limited) and 529/503 (overloaded) answer, retried ones included, with the retry-after it
# named in seconds (None: none): the pipeline's pace (pipeline/pace.py) listens.
OverloadListener = Callable[[int, float | None], None]

CATEGORIES = ("identity", "goal", "preference", "decision", "fact", "implicit_inference")
EVIDENCE_TYPES = ("explicit", "implied")
DECAY_SENSITIVITIES = ("low", "medium", "high")
MAX_STATEMENT_CHARS = 200



class ExtractorSettings(Protocol):
    """The settings a backend reads to be made, priced and checked: `config.Settings` has them all. Written here so
    that the extractors never import the config module, which validates the `extractor` setting against this
    package's registry (config imports extract, never the other way)."""

    @property
    def extractor(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def base_url(self) -> str: ...
    @property
    def price_input_per_mtok(self) -> float: ...
    @property
    def price_output_per_mtok(self) -> float: ...
    @property
    def allow_expensive_model(self) -> bool: ...
    @property
    def batch_api(self) -> bool: ...

    def origin(self, name: str) -> str:
        """Where the setting's value came from ("default", "file PATH", "env NAME", "flag --name")."""
        ...

@dataclass(frozen=True, slots=True)
class Item:
    """One screened message sent to an extractor. Only `evidence` items may be cited; the rest is context."""

    item_id: str  # short and stable within the request: "m1", "m2", …
    role: str
    ts: str | None
    text: str  # cleaned and redacted
    evidence: bool


@dataclass(frozen=True, slots=True)
class ExtractRequest:
    request_id: str  # matches ^[a-zA-Z0-9_-]{1,64}$ (usable as a Message Batches custom_id)
    agent: str
    items: tuple[Item, ...]


@dataclass(frozen=True, slots=True)
class EvidenceRef:
    item_id: str
    quote: str


@dataclass(frozen=True, slots=True)
class Candidate:
    """A belief as an extractor proposes it: nothing here is trusted until verify.py has checked it."""

    statement: str
    category: str
    subject: str
    attribute: str
    confidence: float
    evidence_type: str
    importance: int
    decay_sensitivity: str
    valid_from: str | None
    evidence: tuple[EvidenceRef, ...]


@dataclass(frozen=True, slots=True)
class Usage:
    """One model call: what it cost, from the one price table."""

    model: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    latency_ms: int
    cost_usd: float
    retries: int = 0  # attempts the SDK made before this reply: each may have been billed, unseen
    estimated: bool = False  # a refused call reports no usage: its input tokens are estimated, to be safe

    @property
    def tokens(self) -> int:
        """Every token the call was billed for: uncached input, cache writes, cache reads and output."""
        return self.input_tokens + self.cache_write_tokens + self.cache_read_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class Extraction:
    request_id: str
    candidates: tuple[Candidate, ...]
    usage: tuple[Usage, ...]  # empty for offline extractors


@runtime_checkable
class Extractor(Protocol):
    """What every extractor has.

    - `name`, `model` and `prompt_version` are the provenance a batch and every belief record: a batch started
      with one is never finished with another.
    - `offline`: answers are local work (the rules): a batch is answered in memory, one request after the other,
      never journaled, never split for proposing too much. Otherwise each request is a call that may fail, be
      retried, split, paced and journaled as it returns.
    - `billed`: each call is metered: its worst case is held against the token and dollar budgets before it is
      made, and a dry run estimates it at `rates` (prices.FREE for a model no price is configured for, whose
      tokens are budgeted all the same).
    - `extract` answers one request. `max_tokens` is the room for the reply (for a `RetriesTruncated` extractor;
      others ignore it); `on_overload` is told of every 429/529 the call met. Errors are the ones below: try later
      (ExtractionUnavailable), split or give up (BadRequest, Truncated), fix the key (AuthenticationFailed)."""

    @property
    def name(self) -> str: ...
    @property
    def model(self) -> str | None: ...
    @property
    def prompt_version(self) -> str: ...
    @property
    def offline(self) -> bool: ...
    @property
    def billed(self) -> bool: ...
    @property
    def rates(self) -> Rates: ...

    def extract(self, request: ExtractRequest, *, max_tokens: int | None = None,
                on_overload: OverloadListener | None = None) -> Extraction: ...


@runtime_checkable
class RetriesTruncated(Protocol):
    """A reply cut at `max_tokens` is worth one more call with `more_room(max_tokens)` (None: no more room)."""

    @property
    def max_tokens(self) -> int: ...

    def more_room(self, max_tokens: int) -> int | None: ...


@runtime_checkable
class CachesPrefix(Protocol):
    """Requests share a static prefix the provider caches once a first reply has begun: when `caches_prefix`, the
    first request goes alone, and estimates price the prefix as written once and read after."""

    @property
    def caches_prefix(self) -> bool: ...


@runtime_checkable
class NegotiatesOutputMode(Protocol):
    """The structured-output mode is found per run (json_schema, json_object or text, as the server allows):
    `mode` is the one requests go in, `mode_note` why a stricter one was given up (None: it was not). The run
    records both in its counters."""

    @property
    def mode(self) -> str: ...
    @property
    def mode_note(self) -> str | None: ...


@runtime_checkable
class CompletesText(Protocol):
    """Answers a free-text prompt outside extraction (the profile, recall/profile.py): one call, the reply's text
    and its usage, counted as `extract` counts it (an unreadable count estimated and marked so). Errors are raised
    as `extract` raises them: a refused call is a BadRequest carrying its estimated usage, so the caller records
    what it cost. What the text says is not trusted: the caller verifies it."""

    def complete(self, system: str, user: str, max_tokens: int) -> tuple[str, Usage]: ...


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    """An ended provider batch: each request_id has an extraction or a short error.

    Errors start with the result type: "errored: <api error type>: …" and "expired" are worth resubmitting;
    "bad_request: …" (refusal, truncation, unparseable output) calls for a split; "canceled" was asked for.
    """

    batch_id: str
    extractions: dict[str, Extraction]
    errors: dict[str, str]
    unusable: dict[str, Usage] = field(default_factory=dict)  # what a refused, truncated or garbled reply cost


@runtime_checkable
class SubmitsBatches(Protocol):
    """A provider batch API (`--batch-api`): submit now, collect in a later run."""

    def submit_batch(self, requests: Sequence[ExtractRequest]) -> str: ...

    def collect_batch(self, batch_id: str, requests: Sequence[ExtractRequest] = ()) -> BatchOutcome | None: ...


class ExtractionUnavailable(Unavailable):
    """Rate-limited, overloaded or unreachable after the SDK's retries: stop the run, keep the batch pending."""


class SubmitUncertain(ExtractionUnavailable):
    """A batch create that failed in a way that leaves open whether the API accepted it (a timeout, a dropped
    connection, a 5xx): sending it again could pay for it twice."""


class BadRequest(DistillError):
    """The service refused or garbled this request (400, invalid JSON, refusal, max_tokens): split and retry.

    `usage` is what the failed calls cost: a refusal or a malformed reply is billed like any other."""

    def __init__(self, message: str, usage: tuple[Usage, ...] = ()) -> None:
        super().__init__(message)
        self.usage = usage


class Truncated(BadRequest):
    """The reply hit `max_tokens`: worth one retry with more room (extract(request, max_tokens=…)) before a split."""

    def __init__(self, message: str, usage: tuple[Usage, ...] = (), *, max_tokens: int) -> None:
        super().__init__(message, usage)
        self.max_tokens = max_tokens


class Unparsed(BadRequest):
    """The reply came back but holds no answer that parses: worth asking once more as it was (a sampled model often
    answers in form the next time) before a split. The pipeline makes that call, held against the budget like any."""


class ModeRefused(BadRequest):
    """The server refused the output mode, not the request (a 400/422 while a `NegotiatesOutputMode` extractor is
    still finding its mode): the extractor has stepped down to the next mode, and the pipeline asks again in it,
    holding that call against the budget first like any other. Raised at most MAX_MODE_STEPS times in a row for one
    request (the modes are few); a refusal in the last mode is a plain BadRequest, the request's own fault."""


MAX_MODE_STEPS = 2  # json_schema -> json_object -> text


class AuthenticationFailed(DistillError):
    """401/403: no retry will help; the user must fix the key."""
