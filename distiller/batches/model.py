"""A batch: the unit of extraction and of commit, and how screened messages are packed into one.

A batch holds everything one commit needs: the ledger rows of the messages read, the items sent to the
extractor (kept messages as citable evidence, each with its trimmed preceding turn as context), the requests
packed per agent by an estimated token budget, the cursor moves, and, once extracted, the results. `files.py`
keeps it on disk; `admin.py` lists, retries and discards batches.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

import orjson

from distiller.extract.base import Candidate, EvidenceRef, Extraction, Extractor, ExtractRequest, Item
from distiller.records import Cursor, EvidenceItem
from distiller.redact import redact
from distiller.screen import Decision, Screened
from distiller.screen.prefilter import DROP, KEEP
from distiller.verify import Source

CONTEXT_CHARS = 400
ITEM_OVERHEAD_TOKENS = 12
T = TypeVar("T")
PENDING, SUBMITTED, DISTILLED = "pending", "submitted", "distilled"
# Written just before the Message Batches API is asked to create the batch: a batch found so by a later run may be
# held (and billed) by the API without its id having been recorded, so it is never sent again on its own.
SUBMITTING = "submitting"


def estimate_tokens(text: str) -> int:
    """About four characters per token for English; CJK runs closer to one per character. A CJK character takes
    three bytes in UTF-8, so half the extra bytes approximates how many there are, without a loop in Python."""
    wide = 0 if text.isascii() else (len(text.encode("utf-8")) - len(text)) // 2
    return (len(text) - wide) // 4 + wide + 1


@dataclass(frozen=True, slots=True)
class BatchItem:
    item: Item
    request_id: str
    provenance: EvidenceItem


@dataclass(frozen=True, slots=True)
class LedgerRow:
    verdict: Decision
    file_id: str


@dataclass(frozen=True)
class Batch:
    batch_id: str
    run_id: str
    status: str
    extractor: str
    model: str | None
    prompt_version: str
    ledger: tuple[LedgerRow, ...]
    items: tuple[BatchItem, ...]
    requests: tuple[ExtractRequest, ...]
    cursors: tuple[tuple[Cursor, int | None], ...]
    results: tuple[Extraction, ...] = ()
    failed: tuple[tuple[ExtractRequest, str], ...] = ()  # (part of) a request that could not be extracted, and why
    attempts: int = 0
    estimated_tokens: int = 0
    remote_id: str | None = None  # the Message Batches API id while the requests are processed there

    def sources(self) -> dict[str, Source]:
        return {b.item.item_id: Source(b.item.text, b.item.evidence, b.provenance) for b in self.items}

    @property
    def todo(self) -> tuple[ExtractRequest, ...]:
        done = {r.request_id for r in self.results}
        return tuple(r for r in self.requests if r.request_id not in done)


def _provenance(decision: Decision) -> EvidenceItem:
    m = decision.message
    return EvidenceItem(decision.item_id, m.session_id, m.agent, m.file, m.byte_start, m.byte_end, m.ts, "")


# An item to send: its number in reading order, the decision it comes from, its text, whether it is evidence.
_Entry = tuple[int, Decision, str, bool]


@dataclass
class _Packer:
    """Packs items of one agent into requests no larger than the token budget."""

    budget_tokens: int
    requests: list[list[_Entry]] = field(default_factory=list)
    used: list[int] = field(default_factory=list)  # the estimated tokens of each request's items

    def add(self, group: list[_Entry]) -> None:
        cost = sum(estimate_tokens(text) + ITEM_OVERHEAD_TOKENS for _, _, text, _ in group)
        if not self.requests or (self.used[-1] + cost > self.budget_tokens and self.used[-1] > 0):
            self.requests.append([])
            self.used.append(0)
        self.requests[-1].extend(group)
        self.used[-1] += cost


def _pack(screened: Sequence[tuple[Screened, str]], request_budget_tokens: int) -> dict[str, _Packer]:
    """Kept items become citable evidence, each preceded by the turn before it (trimmed) as context."""
    packers: dict[str, _Packer] = {}
    previous: dict[str, Decision] = {}
    counter = 0
    for entry, _ in screened:
        for decision in entry.decisions:
            session = decision.message.session_id
            if decision.decision == KEEP:
                group: list[_Entry] = []
                before = previous.get(session)
                if before is not None and before.decision != KEEP:
                    counter += 1
                    group.append((counter, before, before.text[-CONTEXT_CHARS:], False))
                counter += 1
                group.append((counter, decision, decision.text, True))
                agent = decision.message.agent
                if agent not in packers:
                    packers[agent] = _Packer(request_budget_tokens)
                packers[agent].add(group)
            if decision.decision != DROP:
                previous[session] = decision
    return packers


@dataclass(frozen=True, slots=True)
class Plan:
    """What a batch would send: all a dry run reports of it."""

    requests: int
    estimated_tokens: int


def plan(screened: Sequence[tuple[Screened, str]], *, request_budget_tokens: int, prompt_tokens: int) -> Plan:
    """The requests `build` would pack, counted without making them."""
    used = [tokens for packer in _pack(screened, request_budget_tokens).values() for tokens in packer.used]
    return Plan(len(used), sum(prompt_tokens + tokens for tokens in used))


def build(
    batch_id: str,
    run_id: str,
    extractor: Extractor,
    screened: Sequence[tuple[Screened, str]],
    cursors: Iterable[tuple[Cursor, int | None]],
    *,
    request_budget_tokens: int,
    prompt_tokens: int,
) -> Batch:
    """The ledger rows of the screened messages and the requests their kept items are packed into."""
    ledger = tuple(LedgerRow(s.decision, file_id) for s, file_id in screened)
    packers = _pack(screened, request_budget_tokens)
    requests: list[ExtractRequest] = []
    items: list[BatchItem] = []
    estimated = 0
    for agent in sorted(packers):
        for group, used in zip(packers[agent].requests, packers[agent].used, strict=True):
            request_id = f"{batch_id}-r{len(requests) + 1}"
            request_items = [
                BatchItem(Item(f"m{number}", d.message.role, d.message.ts, text, evidence), request_id, _provenance(d))
                for number, d, text, evidence in group
            ]
            requests.append(ExtractRequest(request_id, agent, tuple(b.item for b in request_items)))
            items.extend(request_items)
            estimated += prompt_tokens + used
    return Batch(batch_id, run_id, PENDING, extractor.name, extractor.model, extractor.prompt_version, ledger,
                 tuple(items), tuple(requests), tuple(cursors), estimated_tokens=estimated)


def _clean(value: T) -> T:
    return redact(value).text if isinstance(value, str) else value  # type: ignore[return-value]


def _redacted_candidate(c: Candidate) -> Candidate:
    return replace(c, statement=_clean(c.statement), category=_clean(c.category), subject=_clean(c.subject),
                   attribute=_clean(c.attribute), evidence_type=_clean(c.evidence_type),
                   decay_sensitivity=_clean(c.decay_sensitivity), valid_from=_clean(c.valid_from),
                   evidence=tuple(EvidenceRef(_clean(e.item_id), _clean(e.quote)) for e in c.evidence))


def redacted(extraction: Extraction) -> Extraction:
    """An extraction with every text the model wrote redacted, as the one form a journal line or a batch file
    holds: the model may repeat, or make up, a secret the screen kept out of its items."""
    return replace(extraction, candidates=tuple(_redacted_candidate(c) for c in extraction.candidates))


def redacted_failures(failed: Iterable[tuple[ExtractRequest, str]]) -> list[tuple[ExtractRequest, str]]:
    """The reasons requests failed may quote the model's reply: redacted like its candidates."""
    return [(request, redact(error).text) for request, error in failed]


def split(request: ExtractRequest) -> tuple[ExtractRequest, ...]:
    """Halve a refused request, keeping each context item with the evidence item after it."""
    items = request.items
    if len(items) < 2:
        return ()
    middle = len(items) // 2
    while middle < len(items) and not items[middle - 1].evidence:
        middle += 1
    if middle >= len(items):
        return ()
    return (replace(request, request_id=f"{request.request_id}a", items=items[:middle]),
            replace(request, request_id=f"{request.request_id}b", items=items[middle:]))


@dataclass(frozen=True, slots=True)
class Quarantined:
    """The requests of a committed batch that could not be extracted, with their items, for `batches retry`."""

    batch_id: str
    run_id: str
    error: str
    requests: tuple[ExtractRequest, ...]
    items: tuple[BatchItem, ...]


def quarantine_json(batch: Batch) -> str | None:
    """What the store keeps of a batch's failed requests (None when none failed)."""
    if not batch.failed:
        return None
    cited = {item.item_id for request, _ in batch.failed for item in request.items}
    return orjson.dumps({
        "requests": [{"request_id": r.request_id, "agent": r.agent, "items": [i.item_id for i in r.items],
                      "error": error} for r, error in batch.failed],
        "items": [{"item": b.item, "request_id": b.request_id, "provenance": b.provenance}
                  for b in batch.items if b.item.item_id in cited],
    }).decode()


def quarantined_from(batch_id: str, run_id: str, error: str | None, payload: str) -> Quarantined:
    data = orjson.loads(payload)
    items = tuple(BatchItem(Item(**b["item"]), b["request_id"], EvidenceItem(**b["provenance"]))
                  for b in data["items"])
    by_id = {b.item.item_id: b.item for b in items}
    requests = tuple(ExtractRequest(r["request_id"], r["agent"], tuple(by_id[i] for i in r["items"]))
                     for r in data["requests"])
    return Quarantined(batch_id, run_id, error or "", requests, items)
