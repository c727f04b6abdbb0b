"""Small typed records that travel between pipeline stages."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import UTC, datetime


@dataclass(frozen=True, slots=True)
class Message:
    """One user or assistant turn, as read from a transcript line (text not yet cleaned)."""

    format: str
    agent: str
    session_id: str
    message_id: str
    parent_id: str | None
    ts: str | None
    role: str
    text: str
    file: str
    byte_start: int
    byte_end: int
    inter_session: bool = False


@dataclass(frozen=True, slots=True)
class EvidenceItem:
    """One message that supports a belief, with provenance back to the transcript bytes."""

    message_id: str  # the ledger's item id: the message id, or "<id>#<n>" for a part of a queued batch
    session_id: str
    agent: str
    file: str
    byte_start: int
    byte_end: int
    ts: str | None
    quote: str  # verbatim from the message's cleaned, redacted text


@dataclass(frozen=True, slots=True)
class Belief:
    """A verified belief, ready for the store: every evidence quote was found in the message it cites."""

    statement: str
    category: str  # identity | goal | preference | decision | fact | implicit_inference
    subject: str
    attribute: str
    confidence: float  # 0..1, already combined with evidence type and independent sessions
    evidence_type: str  # explicit | implied
    importance: int  # 1..10
    decay_sensitivity: str  # low | medium | high
    valid_from: str | None  # ISO date or timestamp
    scope: str  # "global" or "agent:<id>"
    evidence: tuple[EvidenceItem, ...]
    extractor: str  # rules | anthropic | external
    model: str | None
    prompt_version: str


def message_time(ts: str | None) -> datetime | None:
    """A message's ISO timestamp as an aware datetime (UTC when it names no zone); None when absent or malformed:
    a transcript's timestamps are input."""
    if not ts:
        return None
    try:
        parsed = datetime.fromisoformat(ts)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where an identified transcript was read up to: a row of the store's `files` table, its fields in its column
    order (store/cursors.py takes the order from here)."""

    file_id: str
    path: str
    agent: str
    session_id: str
    dev: int
    inode: int
    size: int
    mtime_ns: int
    offset: int
    tail_digest: str
    state: str = "active"
    session_skip: str | None = None  # why every message of this session is dropped (cron or dreaming run)

    def row(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in CURSOR_FIELDS)


CURSOR_FIELDS = tuple(f.name for f in fields(Cursor))
