"""The contract between the pipeline and any extractor: a request of screened items in, candidates out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from distiller.errors import DistillError, Unavailable

CATEGORIES = ("identity", "goal", "preference", "decision", "fact", "implicit_inference")
EVIDENCE_TYPES = ("explicit", "implied")
DECAY_SENSITIVITIES = ("low", "medium", "high")
MAX_STATEMENT_CHARS = 200


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


class Extractor(Protocol):
    name: str  # "rules", "anthropic", …
    model: str | None
    prompt_version: str

    def extract(self, request: ExtractRequest) -> Extraction: ...


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


class AuthenticationFailed(DistillError):
    """401/403: no retry will help; the user must fix the key."""
