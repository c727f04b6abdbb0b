"""Codex CLI rollout adapter: `{timestamp, [ordinal], type, payload}` lines (transcript-formats.md §6).

Each turn is read once: the user's words from the `response_item` message with role user (every build writes it;
the second copy, `event_msg` `user_message` in older builds or `item_completed` with a `UserMessage` in 0.171, is
skipped as `duplicate_turn`), the assistant's from its `response_item` messages (`phase: commentary` progress notes
and reasoning items are not read). Scaffolding parts (AGENTS.md instructions, `<environment_context>`,
`<user_instructions>`) are left out of a user message — by the part's kind where the line's `metadata` names it
(current builds), else by how the part starts — and developer-role messages are skipped whole.

Codex lines carry no id: a message's id is `<session id>@<byte offset>`, stable across runs and across the move to
`archived_sessions/` (the bytes do not change).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from distiller.records import Message
from distiller.sources import base
from distiller.sources.openclaw.parse import MAX_ID_CHARS, bounded_id

FORMAT = "codex"

ENVELOPE_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})
BOOKKEEPING_TYPES = frozenset({"session_meta", "turn_context", "compacted", "world_state", "token_usage_record",
                               "inter_agent_communication", "inter_agent_communication_metadata"})
# response_item payloads that are never a turn's words: tool calls and their output, reasoning, compaction.
TOOL_ITEMS = frozenset({"function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output",
                        "local_shell_call", "web_search_call", "tool_search_call", "tool_search_output",
                        "image_generation_call", "compaction", "context_compaction", "mcp_tool_call"})
DUPLICATE_EVENTS = frozenset({"user_message", "agent_message", "item_completed"})
SCAFFOLDING_STARTS = ("# AGENTS.md instructions for", "<environment_context>", "<user_instructions>",
                      "<INSTRUCTIONS>", "<skills_instructions>", "<permissions instructions>", "<turn_aborted>",
                      "<codex_internal_context", "<user_shell_command>")
ROLLBACK = "thread_rolled_back"


def recognises(entry: dict[str, Any]) -> bool:
    payload = entry.get("payload")
    kind = entry.get("type")
    return isinstance(kind, str) and kind in ENVELOPE_TYPES and isinstance(payload, dict) and "timestamp" in entry


def header(line: bytes | None) -> base.Header:
    entry = base.first_entry(line)
    if not isinstance(entry, dict) or entry.get("type") != "session_meta" or not isinstance(entry.get("payload"),
                                                                                            dict):
        return base.Header(None, False)
    session = entry["payload"].get("id")
    if not isinstance(session, str) or not session.strip():
        return base.Header(None, False)
    return base.Header(bounded_id(session), True)


def _source_marks(entry: object) -> tuple[str, dict[str, Any]] | None:
    """The header's `source` as lower-case JSON text, and its payload; None for a line that is no header."""
    if not isinstance(entry, dict) or entry.get("type") != "session_meta" or not isinstance(entry.get("payload"),
                                                                                            dict):
        return None
    payload = entry["payload"]
    source = payload.get("source")
    return (orjson.dumps(source).decode().lower() if source is not None else ""), payload


def _memory_consolidation(marks: str) -> bool:
    return "memory" in marks or "consolidat" in marks


def entry_session_skip(entry: object) -> str | None:
    """Codex's own memory-consolidation sessions are skipped whole, told by the header's `source` (its
    self-ingestion, like the distiller's own agent): a subagent's `source` too, so this is asked first."""
    marked = _source_marks(entry)
    return "memory-consolidation-session" if marked is not None and _memory_consolidation(marked[0]) else None


def subagent_header(entry: object) -> bool:
    """A subagent's rollout (its "user" is the parent model): `source` `{"subagent": …}`, `thread_source`
    "subagent", or the legacy `parent_thread_id` (transcript-formats.md §6.4); never a memory-consolidation one,
    which is skipped whole."""
    marked = _source_marks(entry)
    if marked is None or _memory_consolidation(marked[0]):
        return False
    marks, payload = marked
    return "subagent" in marks or payload.get("thread_source") == "subagent" or bool(payload.get("parent_thread_id"))


_RESPONSE_ITEM = b'"type":"response_item","payload":{"type":"'


def skip_line(data: bytes) -> str | None:
    """A tool call's or its output's line (most of a rollout's bytes) without parsing it: serde writes the envelope
    first, so the first `"type":"response_item","payload":{"type":"` near the start is the item's own type."""
    at = data.find(_RESPONSE_ITEM, 0, 256)
    if at < 0:
        return None
    start = at + len(_RESPONSE_ITEM)
    end = data.find(b'"', start, start + 64)
    if end < 0:
        return None
    kind = data[start:end].decode("ascii", "replace")
    return _item_skip(kind)


def _item_skip(kind: object) -> str | None:
    if kind == "reasoning":
        return "reasoning"
    if isinstance(kind, str) and kind in TOOL_ITEMS:
        return "tool_call"
    return None


def _part_kinds(metadata: object, parts: int) -> list[str | None] | None:
    """The kind of each content part, where the line's metadata names them (a list as long as the content, of
    names or of objects with a `kind`), else None."""
    if not isinstance(metadata, dict):
        return None
    for value in metadata.values():
        if isinstance(value, list) and len(value) == parts and value:
            kinds = [v if isinstance(v, str) else v.get("kind") if isinstance(v, dict) else None for v in value]
            if all(isinstance(k, str) for k in kinds):
                return kinds
    return None


def _scaffolding(text: str, kind: str | None) -> bool:
    if kind is not None:
        return not kind.startswith("user.")
    return text.lstrip().startswith(SCAFFOLDING_STARTS)


def message_text(payload: dict[str, Any], metadata: object) -> tuple[str, int]:
    """The message's text parts joined, and how many parts were scaffolding (left out)."""
    content = payload.get("content")
    if isinstance(content, str):
        content = [{"type": "input_text", "text": content}]
    if not isinstance(content, list):
        return "", 0
    kinds = _part_kinds(metadata, len(content)) if payload.get("role") == "user" else None
    texts, scaffolding = [], 0
    for index, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") not in ("input_text", "output_text", "text"):
            continue
        text = part.get("text")
        if not isinstance(text, str):
            continue
        if payload.get("role") == "user" and _scaffolding(text, kinds[index] if kinds else None):
            scaffolding += 1
            continue
        texts.append(text)
    return "\n".join(texts), scaffolding


def to_message(
    entry: object, *, agent: str, session_id: str, file: str, byte_start: int, byte_end: int
) -> Message | str:
    if not isinstance(entry, dict):
        return "not_an_object"
    kind = entry.get("type")
    payload = entry.get("payload")
    if not isinstance(kind, str):  # hostile input: an unhashable value is in no set
        return "unknown_type"
    if kind in BOOKKEEPING_TYPES:
        return "bookkeeping"
    if kind == "event_msg":
        event = payload.get("type") if isinstance(payload, dict) else None
        if event == ROLLBACK:
            return "rollback"
        return "duplicate_turn" if isinstance(event, str) and event in DUPLICATE_EVENTS else "event"
    if kind != "response_item":
        return "unknown_type"
    if not isinstance(payload, dict):
        return "malformed_message"
    item = payload.get("type")
    if (skipped := _item_skip(item)) is not None:
        return skipped
    if item != "message":
        return "other_item"
    role = payload.get("role")
    if role in ("developer", "system"):
        return "developer"
    if role not in ("user", "assistant"):
        return "other_role"
    if role == "assistant" and payload.get("phase") == "commentary":
        return "commentary"
    text, scaffolding = message_text(payload, entry.get("metadata"))
    if not text.strip():
        return "scaffolding" if scaffolding else "no_text"
    ts = entry.get("timestamp")
    return Message(FORMAT, agent, session_id, bounded_id(f"{session_id}@{byte_start}"), None,
                   ts if isinstance(ts, str) and len(ts) <= MAX_ID_CHARS else None, role, text, file, byte_start,
                   byte_end)


_USER_ITEM = b'"role":"user"'
_ROLLBACK = b'"thread_rolled_back"'


def retracted(lines: Iterable[tuple[int, bytes]]) -> dict[int, int]:
    """The messages `thread_rolled_back` took back: its `num_turns` last turns, each from its user message on (a
    turn rolled back once is not counted again)."""
    turns: list[list[int]] = []  # each turn: the offsets of its message lines, the user's first
    taken: dict[int, int] = {}
    for offset, data in lines:
        if _USER_ITEM not in data and _ROLLBACK not in data and b'"role":"assistant"' not in data:
            continue
        try:
            entry = orjson.loads(data)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("payload"), dict):
            continue
        payload = entry["payload"]
        if entry.get("type") == "event_msg" and payload.get("type") == ROLLBACK:
            count = payload.get("num_turns")
            count = count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1
            for turn in turns[-count:]:
                for message in turn:
                    taken[message] = offset
            del turns[-count:]
        elif entry.get("type") == "response_item" and payload.get("type") == "message":
            if payload.get("role") == "user":
                text, _ = message_text(payload, entry.get("metadata"))
                if text.strip():
                    turns.append([offset])
            elif payload.get("role") == "assistant" and turns:
                turns[-1].append(offset)
    return taken
