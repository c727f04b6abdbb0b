"""OpenClaw (pi SessionManager) JSONL adapter: one parsed line in, a Message or a skip reason out."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

from distiller.records import Message
from distiller.sources import base

FORMAT = "openclaw"

# Entry types pi and OpenClaw write that never carry a conversational turn.
NON_MESSAGE_TYPES = frozenset(
    {
        "session",
        "model_change",
        "thinking_level_change",
        "custom",
        "custom_message",
        "compaction",
        "branch_summary",
        "label",
        "session_info",
        "reset",
        "session_archive_metadata",
        "model.fallback_step",
    }
)
TRANSCRIPT_ONLY_MODELS = frozenset({"delivery-mirror", "gateway-injected"})


MAX_ID_CHARS = 128


def bounded_id(value: str) -> str:
    """An id longer than MAX_ID_CHARS (broken or hostile input) becomes a digest of itself: as unique and stable as
    the id (deduplication and provenance hold, a reread gives the same key), but a 100 KB id no longer multiplies
    through the ledger, the batch file and the commit."""
    if len(value) <= MAX_ID_CHARS:
        return value
    return "blake2b:" + hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def parse_header(entry: object) -> base.Header:
    """The session id of a parsed header line, and whether the line carries an id at all (a blank line, an id-less
    header or a line past the probe does not)."""
    if not isinstance(entry, dict):
        return base.Header(None, False)
    entry_id = entry.get("id")
    distinctive = isinstance(entry_id, str) and bool(entry_id.strip())
    session = bounded_id(entry_id) if entry.get("type") == "session" and isinstance(entry_id, str) else None
    return base.Header(session, distinctive)


def header(line: bytes | None) -> base.Header:
    entry = base.first_entry(line)
    return parse_header(entry)


def recognises(entry: dict[str, Any]) -> bool:
    """A pi session header: `type: session` with its format `version` (v2 on) or, in v1 headers, only its `id`."""
    return entry.get("type") == "session" and ("version" in entry or "id" in entry)


_MESSAGE_LINE = b'{"type":"message",'
_TOOL_RESULT_ROLE = b'"role":"toolResult"'
_ROLE = b'"role":'


def skip_line(data: bytes) -> str | None:
    """Recognise a tool result (most of a transcript's bytes) without parsing it.

    pi writes `{"type":"message","id":…,"parentId":…,"timestamp":…,"message":{"role":…`: the first unescaped
    `"role":` of such a line is the message's role (quotes inside strings are escaped). Lines in any other shape
    are simply parsed."""
    if not data.startswith(_MESSAGE_LINE):
        return None
    role = data.find(_ROLE, 0, 512)
    return "tool_result" if role >= 0 and data.startswith(_TOOL_RESULT_ROLE, role) else None


def is_tool_result_line(line: bytes) -> bool:
    return skip_line(line) is not None


def entry_session_skip(entry: object) -> str | None:
    """A line that is no message may tell the whole session is skipped: a dreaming run's bootstrap entry."""
    return "dreaming-session" if isinstance(entry, dict) and marks_dreaming(entry) else None


def marks_dreaming(entry: dict[str, Any]) -> bool:
    """memory-core "dreaming" runs announce themselves in a bootstrap-context custom entry."""
    data = entry.get("data")
    return (
        entry.get("type") == "custom"
        and isinstance(data, dict)
        and isinstance(data.get("runId"), str)
        and data["runId"].startswith("dreaming-narrative-")
    )


def message_text(message: dict[str, Any]) -> str:
    """Join the `text` blocks (thinking, tool calls and images are not the user's words).

    Most turns are one text block: its text is the joined text (`join` returns a lone str itself)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    if len(content) == 1 and type(block := content[0]) is dict and block.get("type") == "text":
        text = block.get("text")
        if type(text) is str:
            return text
    return joined_text(content)


def joined_text(content: list[Any]) -> str:
    """The text blocks of a content list, joined: what `message_text` returns for one, its shortcut aside."""
    texts = [
        block["text"]
        for block in content
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    ]
    return "\n".join(texts)


def _timestamp(entry: dict[str, Any], message: dict[str, Any]) -> str | None:
    ts = entry.get("timestamp")
    if isinstance(ts, str):
        return ts if len(ts) <= MAX_ID_CHARS else None
    epoch_ms = message.get("timestamp")
    if isinstance(epoch_ms, (int, float)) and not isinstance(epoch_ms, bool):
        try:
            return datetime.fromtimestamp(epoch_ms / 1000, tz=UTC).isoformat(timespec="milliseconds")
        except (OverflowError, OSError, ValueError):
            return None
    return None


def to_message(
    entry: object, *, agent: str, session_id: str, file: str, byte_start: int, byte_end: int
) -> Message | str:
    """A Message for a user/assistant turn with text, else the reason the line is skipped."""
    if not isinstance(entry, dict):
        return "not_an_object"
    entry_type = entry.get("type")
    if entry_type != "message":
        return "non_message" if isinstance(entry_type, str) and entry_type in NON_MESSAGE_TYPES else "unknown_type"
    message = entry.get("message")
    if not isinstance(message, dict):
        return "malformed_message"
    role = message.get("role")
    if role == "toolResult":
        return "tool_result"
    if role not in ("user", "assistant"):
        return "other_role"
    if role == "assistant" and message.get("provider") == "openclaw" and (
        message.get("model") in TRANSCRIPT_ONLY_MODELS or message.get("api") == "openclaw-transcript"
    ):
        return "transcript_only"
    message_id = entry.get("id")
    if not isinstance(message_id, str) or not message_id:
        return "no_message_id"
    text = message_text(message)
    if not text.strip():
        return "no_text"
    parent_id = entry.get("parentId")
    provenance = message.get("provenance")
    # Positional, and the common short ids and timestamps without a call: one Message is made for every turn.
    ts = entry.get("timestamp")
    if isinstance(parent_id, str):
        parent_id = parent_id if len(parent_id) <= MAX_ID_CHARS else bounded_id(parent_id)
    else:
        parent_id = None
    return Message(
        FORMAT,
        agent,
        session_id,
        message_id if len(message_id) <= MAX_ID_CHARS else bounded_id(message_id),
        parent_id,
        (ts if len(ts) <= MAX_ID_CHARS else None) if isinstance(ts, str) else _timestamp(entry, message),
        role,
        text,
        file,
        byte_start,
        byte_end,
        isinstance(provenance, dict) and provenance.get("kind") == "inter_session",
    )
