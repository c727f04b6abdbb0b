"""Claude Code JSONL adapter: one parsed line in, a Message (or one part of one) or a skip reason out.

An API response is written one content block per line, the lines sharing `message.id` (transcript-formats.md §5.2,
§5.8): `group` tells the reader which lines belong together. A group ends at a line of another message, or at a
text block whose `stop_reason` says the response is over (`end_turn`, `stop_sequence`, `max_tokens`, `refusal`):
what follows such a line is another group even when it repeats the id. That keeps every boundary a function of the
lines alone. A group's message takes the `uuid` of its first line with text as its id.
"""

from __future__ import annotations

from typing import Any

from distiller.records import Message
from distiller.sources import base
from distiller.sources.openclaw.parse import MAX_ID_CHARS, bounded_id

FORMAT = "claude-code"

# Line types Claude Code writes that never carry a turn (§5.5, §5.8): counted as bookkeeping.
BOOKKEEPING_TYPES = frozenset({
    "summary", "custom-title", "agent-name", "ai-title", "last-prompt", "mode", "permission-mode",
    "file-history-snapshot", "file-history-delta", "queue-operation", "pr-link", "progress", "system",
    "tag", "worktree-state",
})
# Types that mark a Claude Code file even as its first line (the header may be any of them).
_MARKING_TYPES = BOOKKEEPING_TYPES | {"user", "assistant", "attachment"}
_ENDING_STOPS = frozenset({"end_turn", "stop_sequence", "max_tokens", "refusal"})
_LINE_IDS = ("uuid", "messageId", "leafUuid")


def recognises(entry: dict[str, Any]) -> bool:
    """A Claude Code line: its session id beside a line id, or one of its own bookkeeping types."""
    kind = entry.get("type")
    if not isinstance(kind, str):  # hostile input: an unhashable value is in no set
        return False
    if isinstance(entry.get("sessionId"), str) and kind in _MARKING_TYPES:
        return True
    return kind in ("summary", "file-history-snapshot", "file-history-delta", "queue-operation", "last-prompt",
                    "ai-title", "custom-title", "permission-mode") and "payload" not in entry


def parse_header(entry: object) -> base.Header:
    """The session id the first line names (any line type may come first), and whether it carries an id that tells
    the file from others (a line uuid, a snapshot's message id, a summary's leaf)."""
    if not isinstance(entry, dict):
        return base.Header(None, False)
    session = entry.get("sessionId")
    distinctive = any(isinstance(entry.get(name), str) and entry[name].strip() for name in _LINE_IDS)
    return base.Header(bounded_id(session) if isinstance(session, str) and session.strip() else None, distinctive)


def header(line: bytes | None) -> base.Header:
    entry = base.first_entry(line)
    return parse_header(entry)


def group(entry: object) -> tuple[str, bool] | None:
    """(the API message id, whether this line ends the response) for an assistant line; None for any other."""
    if not isinstance(entry, dict) or entry.get("type") != "assistant":
        return None
    message = entry.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("id"), str) or not message["id"]:
        return None
    content = message.get("content")
    last = content[-1] if isinstance(content, list) and content else None
    stop = message.get("stop_reason")
    ends = isinstance(last, dict) and last.get("type") == "text" and isinstance(stop, str) and stop in _ENDING_STOPS
    return bounded_id(message["id"]), ends


def _text(content: object) -> tuple[str, bool]:
    """The text blocks joined, and whether the content was made of tool results only."""
    if isinstance(content, str):
        return content, False
    if not isinstance(content, list):
        return "", False
    texts = []
    results = others = 0
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_result":
            results += 1
        else:
            others += 1
    return "\n".join(texts), bool(results) and not texts and not others


def to_message(
    entry: object, *, agent: str, session_id: str, file: str, byte_start: int, byte_end: int
) -> Message | str:
    """A Message for a user turn or an assistant text block, else the reason the line is skipped.

    Never evidence: harness text (`isMeta`), a compaction's summary (`isCompactSummary`, a model's words),
    what only the transcript shows, tool results, hook context (`attachment`), API error stand-ins. A subagent's
    turns (`isSidechain`) are read, marked as not the user's (its "user" is the parent model)."""
    if not isinstance(entry, dict):
        return "not_an_object"
    kind = entry.get("type")
    if kind not in ("user", "assistant"):
        if kind == "attachment":
            attachment = entry.get("attachment")
            hook = isinstance(attachment, dict) and attachment.get("type") == "hook_additional_context"
            return "hook_context" if hook else "attachment"
        return "bookkeeping" if isinstance(kind, str) and kind in BOOKKEEPING_TYPES else "unknown_type"
    if entry.get("isMeta") is True:
        return "meta"
    if entry.get("isCompactSummary") is True:
        return "compact_summary"
    if entry.get("isVisibleInTranscriptOnly") is True:
        return "transcript_only"
    if "toolUseResult" in entry:
        return "tool_result"
    message = entry.get("message")
    if not isinstance(message, dict):
        return "malformed_message"
    role = message.get("role")
    if role != kind:
        return "other_role"
    if role == "assistant" and (entry.get("isApiErrorMessage") is True or message.get("model") == "<synthetic>"):
        return "api_error"
    message_id = entry.get("uuid")
    if not isinstance(message_id, str) or not message_id:
        return "no_message_id"
    text, tool_results_only = _text(message.get("content"))
    if tool_results_only:
        return "tool_result"
    if not text.strip():
        return "no_text"
    parent = entry.get("parentUuid")
    ts = entry.get("timestamp")
    return Message(
        FORMAT, agent, session_id, bounded_id(message_id),
        bounded_id(parent) if isinstance(parent, str) else None,
        ts if isinstance(ts, str) and len(ts) <= MAX_ID_CHARS else None,
        role, text, file, byte_start, byte_end,
        entry.get("isSidechain") is True,
    )
