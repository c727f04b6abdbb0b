"""Gemini CLI chat recordings: append-only JSONL since 2026 (gemini-cli `chatRecordingService`).

The first line is the session's metadata (`sessionId`, `projectHash`, `startTime`, …). Then message records
(`id`, `timestamp`, `type` user/gemini/info/error/warning, `content` a string or parts), written again in full
under the same id whenever the CLI updates one (tokens, tool calls): the first with text is read, the ledger drops
the later copies by id. `{"$set": …}` patches metadata (a `messages` list there replaces the model's context after
compression: not the user's words again); `{"$rewindTo": id}` takes back that message and every later one
(`retracted`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from distiller.records import Message
from distiller.sources import base
from distiller.sources.openclaw.parse import MAX_ID_CHARS, bounded_id

FORMAT = "gemini"
ROLES = {"user": "user", "gemini": "assistant"}


def recognises(entry: dict[str, Any]) -> bool:
    return isinstance(entry.get("sessionId"), str) and isinstance(entry.get("projectHash"), str)


def header(line: bytes | None) -> base.Header:
    entry = base.first_entry(line)
    if not isinstance(entry, dict) or not isinstance(entry.get("sessionId"), str) or not entry["sessionId"].strip():
        return base.Header(None, False)
    return base.Header(bounded_id(entry["sessionId"]), True)


def skip_line(data: bytes) -> str | None:
    """A `$set` patch without parsing it: after a compression or on resume it holds the whole model context
    (`messages`), the biggest lines of a recording, and never a turn."""
    return "metadata" if data.startswith(b'{"$set":') else None


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    return "\n".join(part["text"] for part in content
                     if isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought"))


def to_message(
    entry: object, *, agent: str, session_id: str, file: str, byte_start: int, byte_end: int
) -> Message | str:
    if not isinstance(entry, dict):
        return "not_an_object"
    if "$rewindTo" in entry:
        return "rewind"
    if "$set" in entry:
        return "metadata"
    message_id = entry.get("id")
    if not isinstance(message_id, str) or not message_id:
        return "metadata" if "sessionId" in entry else "unknown_type"
    kind = entry.get("type")
    role = ROLES.get(kind) if isinstance(kind, str) else None
    if role is None:
        return "notice" if kind in ("info", "error", "warning") else "unknown_type"
    # What the user typed is `displayContent` when the CLI expanded it (an @file's contents in `content`).
    shown = entry.get("displayContent") if role == "user" else None
    text = _text(shown if shown else entry.get("content"))
    if not text.strip():
        return "no_text"
    ts = entry.get("timestamp")
    return Message(FORMAT, agent, session_id, bounded_id(message_id), None,
                   ts if isinstance(ts, str) and len(ts) <= MAX_ID_CHARS else None, role, text, file, byte_start,
                   byte_end)


def retracted(lines: Iterable[tuple[int, bytes]]) -> dict[int, int]:
    """The records `$rewindTo` took back: from the first record of that id on (every copy of each later id); an id
    never seen takes back every message, as the CLI does."""
    order: list[str] = []  # message ids, by first appearance, not taken back
    at: dict[str, list[int]] = {}  # id -> the offsets of its records
    taken: dict[int, int] = {}
    for offset, data in lines:
        try:
            entry = orjson.loads(data)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(entry, dict):
            continue
        target = entry.get("$rewindTo")
        if isinstance(target, str):
            cut = order.index(target) if target in order else 0
            for message_id in order[cut:]:
                for record in at.pop(message_id):
                    taken[record] = offset
            del order[cut:]
        elif isinstance(entry.get("id"), str):
            if entry["id"] not in at:
                order.append(entry["id"])
                at[entry["id"]] = []
            at[entry["id"]].append(offset)
    return taken
