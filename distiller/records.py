"""Small typed records that travel between pipeline stages."""

from __future__ import annotations

from dataclasses import dataclass


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
