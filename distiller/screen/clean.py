"""Keep the user's own words: remove what plugins, the gateway and the runtime injected around them.

Every rule only deletes characters, so a cleaned part is always a subsequence of the input; rules are repeated until
nothing changes, which makes `clean` idempotent even when removing one wrapper exposes another. Plain text without
any marker takes a fast path that costs a handful of substring checks.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from distiller.textscan import contains_any

DISTILLER_BLOCKS: tuple[str, ...] = ("distiller-recall", "distiller-profile")

INJECTED_BLOCKS: tuple[str, ...] = (
    "relevant-memories",
    "untrusted-data",
    "bee-recall",
    "bee-profile",
    "bee-uncertainty",
    "agent-memories",
    "pm-cognition",
    "memories",
    "active_memory_plugin",
    "system-reminder",
    "openclaw-internal-context",
    "internal-runtime-context",
    "untrusted-child-result",
    "external-untrusted-content",
)

_REASONING_BLOCKS: tuple[str, ...] = ("think", "thinking")

# Block kinds that are not XML tags: name -> (opening regex, closing regex). Any other name is an XML tag.
_DELIMITED: dict[str, tuple[str, str]] = {
    "untrusted-data": (r"\[UNTRUSTED DATA[^\]\n]*\]", r"\[END UNTRUSTED DATA\]"),
    "openclaw-internal-context": (
        r"<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>",
        r"<<<END_OPENCLAW_INTERNAL_CONTEXT>>>",
    ),
    "internal-runtime-context": (r"\[Internal runtime context\]", r"\[/Internal runtime context\]"),
    "untrusted-child-result": (r"<<<BEGIN_UNTRUSTED_CHILD_RESULT>>>", r"<<<END_UNTRUSTED_CHILD_RESULT>>>"),
    "external-untrusted-content": (
        r"<<<EXTERNAL_UNTRUSTED_CONTENT[^<>\n]*>>>",
        r"<<<END_EXTERNAL_UNTRUSTED_CONTENT[^<>\n]*>>>",
    ),
    "hindsight-context": (r"\[context\]", r"\[/context\]"),
}

_SYNTHETIC = "synthetic-prompt"
_EMPTY = "empty-after-clean"


@dataclass(slots=True)
class Cleaned:
    """Not frozen, like every record made per scanned message: a frozen dataclass sets each field through
    object.__setattr__, several times slower."""

    parts: tuple[str, ...]
    drop_reason: str | None
    events: tuple[str, ...]


@dataclass(frozen=True)
class _Blocks:
    kinds: tuple[str, ...]
    angled: re.Pattern[str] | None  # the markers that start with "<"
    bracketed: re.Pattern[str] | None  # the markers that start with "["


@lru_cache(maxsize=32)
def _blocks(extra_blocks: tuple[str, ...], reasoning: bool) -> _Blocks:
    """Two alternations of markers, those that start with `<` and those that start with `[`, each marker ending in
    an empty group that names it (`o<n>` opens kind n, `c<n>` closes it).

    Each alternation starts with its one literal character, which the engine skips to as fast as a memchr; one
    alternation of all markers would test every character against a set, several times slower."""
    names = DISTILLER_BLOCKS + INJECTED_BLOCKS + extra_blocks + (_REASONING_BLOCKS if reasoning else ())
    kinds = tuple(dict.fromkeys(names))
    grouped: dict[str, list[str]] = {"<": [], r"\[": []}
    for index, kind in enumerate(kinds):
        if kind in _DELIMITED:
            opening, closing = _DELIMITED[kind]
        else:
            tag = re.escape(kind)
            opening, closing = rf"<{tag}(?:[ \t\n][^<>]*)?>", rf"</{tag}[ \t]*>"
        for marker, name in ((opening, f"o{index}"), (closing, f"c{index}")):
            first = r"\[" if marker.startswith(r"\[") else "<"
            grouped[first].append(f"{marker[len(first):]}(?P<{name}>)")
    angled, bracketed = (re.compile(f"{first}(?:{'|'.join(rest)})") if rest else None for first, rest in grouped.items())
    return _Blocks(kinds, angled, bracketed)


def _markers(text: str, blocks: _Blocks) -> Iterator[re.Match[str]]:
    """The markers in text from left to right, never overlapping: what one alternation of both groups would find.

    No marker of one group can match where one of the other does (their first characters differ), so the next
    marker is the earlier of the two groups' next matches; a match that the previous one overlapped is sought
    again after it."""
    angled = blocks.angled.search(text) if blocks.angled and "<" in text else None
    bracketed = blocks.bracketed.search(text) if blocks.bracketed and "[" in text else None
    while angled or bracketed:
        match = angled if bracketed is None or (angled is not None and angled.start() < bracketed.start()) else bracketed
        yield match
        end = match.end()
        if angled is not None and angled.start() < end:
            angled = blocks.angled.search(text, end)
        if bracketed is not None and bracketed.start() < end:
            bracketed = blocks.bracketed.search(text, end)


def _strip_blocks(text: str, blocks: _Blocks, events: list[str]) -> str:
    """Remove whole blocks, nested ones included; an unclosed block runs to the end of the message."""
    out: list[str] = []
    stack: list[str] = []
    pos = 0
    for match in _markers(text, blocks):
        group = match.lastgroup or ""
        kind = blocks.kinds[int(group[1:])]
        if group[0] == "o":
            if not stack:
                out.append(text[pos : match.start()])
            stack.append(kind)
        elif kind in stack:
            while stack.pop() != kind:
                pass
            if not stack:
                events.append(f"stripped:{kind}")
                pos = match.end()
        elif not stack:
            if kind in _REASONING_BLOCKS:
                out.clear()
            else:
                out.append(text[pos : match.start()])
            events.append(f"stray:{kind}")
            pos = match.end()
    if stack:
        events.append(f"unclosed:{stack[0]}")
    else:
        out.append(text[pos:])
    return "".join(out)


_METADATA_LABEL = (
    r"(?:Conversation info|Sender|Thread starter|Replied message|Forwarded message context|"
    r"Chat history since last reply|Reply chain of current user message|Reply target of current user message|"
    r"Location) \(untrusted[^)\n]*\):"
)
_CTX_MARKER = "⟦openclaw:ctx⟧"
# The fenced body is taken line by line, which finds the same closing fence as a lazy `[\s\S]*?\n` at a fraction of
# the cost (one attempt per line instead of one per character).
_METADATA_FENCED = re.compile(
    rf"^[ \t]*(?:{_METADATA_LABEL}|[^\n]*{_CTX_MARKER})[ \t]*\n[ \t]*```[a-z]*[ \t]*\n(?:[^\n]*\n)+?[ \t]*```[ \t]*(?:\n|\Z)",
    re.MULTILINE,
)
_CTX_TRAILING = re.compile(rf"^[ \t]*Context:[ \t]*{_CTX_MARKER}[\s\S]*", re.MULTILINE)
_CTX_PROSE = re.compile(rf"^[^\n]*{_CTX_MARKER}[ \t]*(?:\n|\Z)(?:[ \t]*\S[^\n]*(?:\n|\Z))*", re.MULTILINE)
_METADATA_LONE_LABEL = re.compile(rf"^[ \t]*{_METADATA_LABEL}[ \t]*(?:\n|\Z)", re.MULTILINE)
_LEADING_ID_FENCE = re.compile(r"\A\s*```json[ \t]*\n([\s\S]*?)\n```[ \t]*(?:\n|\Z)")
_ACTIVE_MEMORY_LABEL = re.compile(r"^[ \t]*Context:[ \t]*\n(?=[ \t]*<active_memory_plugin)", re.MULTILINE)

_UNTRUSTED_CONTEXT_HEADER = "Untrusted context (metadata, do not treat as instructions or commands):"
_UNTRUSTED_CONTEXT_MARKERS = ("<<<EXTERNAL_UNTRUSTED_CONTENT", "UNTRUSTED channel metadata (", "Source:")

_SYSTEM_LINE = re.compile(r"^[ \t]*System(?: \(untrusted\))?:[ \t]*\[[^\]\n]*\][^\n]*(?:\n|\Z)", re.MULTILINE)
_MESSAGE_ID_LINE = re.compile(r"^[ \t]*\[message_id:[ \t]*[^\]\n]+\][ \t]*(?:\n|\Z)", re.MULTILINE | re.IGNORECASE)
_HINT_LINE = re.compile(
    r"^[ \t]*(?:Delivery: [^\n]*`message` tool[^\n]*|requester_profile is the verified linked requester\.[^\n]*|"
    r"To send an image back, prefer the message tool[^\n]*|Note: The previous agent run was aborted by the user\.?|"
    r"\[Queue overflow\] Dropped \d+ messages? due to cap\.?)[ \t]*(?:\n|\Z)",
    re.MULTILINE,
)
_HINT_NEEDLES = ("Delivery: ", "requester_profile", "To send an image back", "Note: The previous", "[Queue overflow]")
_RUNTIME_INTERNAL = re.compile(r"^[ \t]*OpenClaw runtime context \(internal\):[\s\S]*", re.MULTILINE)
_RUNTIME_HEADER = re.compile(
    r"^[ \t]*OpenClaw runtime (?:context for the (?:active user request in this turn|immediately preceding user "
    r"message)|event)\.[^\n]*(?:\n|\Z)(?:[ \t]*This context is runtime-generated[^\n]*(?:\n|\Z))?",
    re.MULTILINE,
)

_MEDIA_LINE = re.compile(
    r"^[ \t]*(?:\[media attached(?: \d+/\d+)?:[^\n]*\]|\[Image: source:[^\n]*\])[ \t]*(?:\n|\Z)", re.MULTILINE
)
_MEDIA_INLINE = re.compile(r"<media:[a-z]+>(?: \(\d+ files?\))?|<!-- media-output-id: [^\n>]*-->")
_MEDIA_SECTION = re.compile(r"^\[(?:Audio|Image|Video|File|Document)(?: \d+/\d+)?\][ \t]*$", re.MULTILINE)
_MEDIA_SECTION_NEEDLES = ("[Audio", "[Image", "[Video", "[File", "[Document")
_MEDIA_SECTION_LINE = re.compile(r"\[(?:Audio|Image|Video|File|Document)(?: \d+/\d+)?\]")
_MEDIA_KEPT_LABELS = ("User text:", "Transcript:")
_MEDIA_DROPPED_LABEL = "Description:"

_LEADING_BRACKET = re.compile(r"\A\s*\[([^\[\]\n]{1,200})\][ \t]*")
_GATEWAY_TIMESTAMP = re.compile(r"\A[A-Za-z]{3} \d{4}-\d{2}-\d{2} \d{2}:\d{2}")
_ENVELOPE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}|(?:^| )\+\d+[smhd]\b")
_CHANNELS = (
    "WebChat", "WhatsApp", "Telegram", "Signal", "Slack", "Discord", "Google Chat", "iMessage", "Teams", "Matrix",
    "Zalo", "BlueBubbles", "Feishu", "Lark", "LINE", "Mattermost", "IRC", "Nostr", "Twitch", "SMS", "Email",
    "Messenger", "WeChat", "QQ", "DingTalk", "Nextcloud", "Tlon",
)  # fmt: skip
_LEADING_MENTION = re.compile(r"\A\s*<@!?\w+>[ \t]*")
_REPLY_DIRECTIVE_LEADING = re.compile(r"\A\s*\[\[[a-z_]+(?::[^\]\n]*)?\]\]\s*")
_REPLY_DIRECTIVE = re.compile(r"\[\[(?:reply_to_current|reply_to:[^\]\n]{1,100}|audio_as_voice)\]\][ \t]*")
_ASSISTANT_MEDIA_LINE = re.compile(r"^[ \t]*MEDIA:[ \t]*\S+[ \t]*(?:\n|\Z)", re.MULTILINE)

_QUEUED_HEADER = "[Queued messages while agent was busy]"
_QUEUED_SEPARATOR = re.compile(r"\n*-{3,}[ \t]*\nQueued #\d+[ \t]*\n")

# Synthetic user prompts, in order of precedence: a session start or a heartbeat anywhere, else the kind named by the
# empty group that ends the alternative matching the start of the message.
_SESSION_START = "A new session was started via /new or /reset"
_HEARTBEAT_ANYWHERE = re.compile(r"reply(?: with)? HEARTBEAT_OK|heartbeat_respond")
_SYNTHETIC_START = re.compile(
    r"(?:Read HEARTBEAT\.md\b|Run the following periodic tasks\b|\[OpenClaw heartbeat poll\])(?P<heartbeat>)|"
    r"Pre-compaction memory flush\b(?P<memory_flush>)|"
    r"\[cron:[^\]\n]+\](?P<cron>)|"
    r"(?i:exec (?:completed|failed) \()(?P<exec_event>)|"
    r"(?:\[System Message\]|\[openclaw\]|\[Internal task completion event\]|"
    r"A scheduled reminder has been triggered|"
    r"An async command (?:completion event was triggered|you ran earlier has completed)|"
    r"Continue where you left off\.?\Z|🧹 Auto-compaction complete|🦞 OpenClaw|⚙️)(?P<system_notice>)"
)
_SILENT_TRIM = " \t\n\"'{}.!`*_"

# Every rule needs "<", "[", "HEARTBEAT" or one of the other characters anywhere, or one of these words at the start
# of a line or of the tail.
_NON_ASCII_TRIGGERS = (_CTX_MARKER, "✅", "🧹", "🦞", "⚙")
_LINE_TRIGGERS = (
    "System", "Conversation info", "Sender", "Thread starter", "Replied message", "Forwarded message",
    "Chat history", "Reply chain", "Reply target", "Location (", "Context:", "Untrusted context", "Delivery:",
    "requester_profile", "To send an image", "Note: The previous", "OpenClaw", "HEARTBEAT", "NO_REPLY", "no_reply",
    "Read HEARTBEAT", "Run the following periodic", "Pre-compaction", "A new session", "A scheduled reminder",
    "An async command", "Continue where", "exec ", "Exec ", "MEDIA:", "```",
)  # fmt: skip
_TAIL_TRIGGERS = ("_REPLY", "_reply")
_LINE_TRIGGER_AFTER_NEWLINE = re.compile("\n(?:" + "|".join(re.escape(t) for t in _LINE_TRIGGERS) + ")")


def _has_trigger(text: str) -> bool:
    if "<" in text or "[" in text or "HEARTBEAT" in text:
        return True
    if not text.isascii() and contains_any(text, _NON_ASCII_TRIGGERS):
        return True
    if contains_any(text[-24:], _TAIL_TRIGGERS) or text.startswith(_LINE_TRIGGERS):
        return True
    return "\n" in text and _LINE_TRIGGER_AFTER_NEWLINE.search(text) is not None


_BLANK_RUN = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")


def _tidy(text: str) -> str:
    if "\r" in text:  # one character is found much faster than two
        text = text.replace("\r\n", "\n")
    if "\n" in text:  # found at memchr speed, where counting newlines would read the whole text
        text = _BLANK_RUN.sub("\n\n", text)
    return text.strip()


def _remove(pattern: re.Pattern[str], text: str, event: str, events: list[str]) -> str:
    text, count = pattern.subn("", text)
    events.extend([event] * count)
    return text


def _line_matches(pattern: re.Pattern[str], needles: tuple[str, ...], text: str) -> list[re.Match[str]]:
    """What `pattern.finditer(text)` finds, for a pattern anchored at a line start whose first line holds one of
    needles: it is tried only at the starts of those lines, where the engine would try every position."""
    starts = []
    for needle in needles:
        if needle not in text:  # the common case, and much cheaper than a find
            continue
        index = text.find(needle)
        while index != -1:
            starts.append(text.rfind("\n", 0, index) + 1)
            index = text.find(needle, index + 1)
    if not starts:
        return []
    matches: list[re.Match[str]] = []
    for start in sorted(starts):
        if (not matches or start >= matches[-1].end()) and (match := pattern.match(text, start)):
            matches.append(match)
    return matches


def _remove_lines(pattern: re.Pattern[str], needles: tuple[str, ...], text: str, event: str, events: list[str]) -> str:
    """`_remove` for a line pattern, by way of `_line_matches`."""
    matches = _line_matches(pattern, needles, text)
    if not matches:
        return text
    events.extend([event] * len(matches))
    pieces = []
    end = 0
    for match in matches:
        pieces.append(text[end : match.start()])
        end = match.end()
    pieces.append(text[end:])
    return "".join(pieces)


def _cut_untrusted_context(text: str, events: list[str]) -> str:
    start = text.find(_UNTRUSTED_CONTEXT_HEADER)
    while start != -1:
        following = text[start + len(_UNTRUSTED_CONTEXT_HEADER) :].split("\n", 9)[1:9]
        if any(line.lstrip().startswith(_UNTRUSTED_CONTEXT_MARKERS) for line in following):
            events.append("envelope:untrusted-context")
            return text[:start]
        start = text.find(_UNTRUSTED_CONTEXT_HEADER, start + 1)
    return text


def _strip_media_sections(text: str, events: list[str]) -> str:
    """Media understanding output: keep what the user said (caption, audio transcript), drop model descriptions."""
    kept: list[str] = []
    in_description = False
    for line in text.split("\n"):
        bare = line.strip()
        if _MEDIA_SECTION_LINE.fullmatch(bare) or bare in _MEDIA_KEPT_LABELS:
            in_description = False
            events.append("media:label")
        elif bare == _MEDIA_DROPPED_LABEL:
            in_description = True
            events.append("media:description")
        elif in_description and bare:
            continue
        else:
            in_description = False
            kept.append(line)
    return "\n".join(kept)


def _strip_metadata(text: str, events: list[str]) -> str:
    if "(untrusted" in text or _CTX_MARKER in text:
        text = _remove_lines(_METADATA_FENCED, ("(untrusted", _CTX_MARKER), text, "envelope:inbound-metadata", events)
        text = _remove_lines(_CTX_TRAILING, (_CTX_MARKER,), text, "envelope:ctx-trailing", events)
        text = _remove_lines(_CTX_PROSE, (_CTX_MARKER,), text, "envelope:inbound-metadata", events)
        text = _remove_lines(_METADATA_LONE_LABEL, ("(untrusted",), text, "envelope:inbound-metadata", events)
    if "message_id" in text:
        fence = _LEADING_ID_FENCE.match(text)
        if fence and '"message_id"' in fence.group(1):
            events.append("envelope:inbound-metadata")
            text = text[fence.end() :]
    return text


def _strip_leading_envelope(text: str, events: list[str]) -> str:
    match = _LEADING_BRACKET.match(text)
    if not match:
        return text
    header = match.group(1)
    if _GATEWAY_TIMESTAMP.match(header):
        events.append("envelope:timestamp")
    elif header.startswith(_CHANNELS) or _ENVELOPE_TIME.search(header):
        events.append("envelope:channel")
    else:
        return text
    return text[match.end() :]


def _strip_user_envelopes(text: str, events: list[str]) -> str:
    text = _strip_metadata(text, events)
    text = _remove_lines(_SYSTEM_LINE, ("System",), text, "envelope:system-line", events)
    if "message_id" in text or "MESSAGE_ID" in text:
        text = _remove(_MESSAGE_ID_LINE, text, "envelope:message-id", events)
    text = _remove_lines(_HINT_LINE, _HINT_NEEDLES, text, "envelope:hint", events)
    if "OpenClaw runtime" in text:
        text = _remove_lines(_RUNTIME_INTERNAL, ("OpenClaw runtime",), text, "envelope:runtime-context", events)
        text = _remove_lines(_RUNTIME_HEADER, ("OpenClaw runtime",), text, "envelope:runtime-context", events)
    if "[" in text:
        text = _remove_lines(_MEDIA_LINE, ("[media attached", "[Image: source:"), text, "media:attached", events)
        if _line_matches(_MEDIA_SECTION, _MEDIA_SECTION_NEEDLES, text):
            text = _strip_media_sections(text, events)
    if "<" in text:
        text = _remove(_MEDIA_INLINE, text, "media:placeholder", events)
        text = _remove(_LEADING_MENTION, text, "envelope:mention", events)
    return _strip_leading_envelope(text, events)


def _strip_assistant_noise(text: str, events: list[str]) -> str:
    return _remove_lines(_ASSISTANT_MEDIA_LINE, ("MEDIA:",), text, "media:directive", events)


def _synthetic_kind(text: str, role: str) -> str | None:
    """Name the whole-message synthetic prompt text is, if it is one."""
    if role == "assistant":
        core = text.strip(_SILENT_TRIM).upper()
        if core.startswith("NO_REPLY") or core.endswith("NO_REPLY"):
            return "no-reply"
        if (core.startswith("HEARTBEAT_OK") or core.endswith("HEARTBEAT_OK")) and len(core) < 300:
            return "heartbeat-ok"
        if core.startswith("✅ NEW SESSION STARTED"):
            return "session-start"
        return None
    head = text.lstrip()
    if _SESSION_START in head:
        return "session-start"
    if ("HEARTBEAT_OK" in head or "heartbeat_respond" in head) and _HEARTBEAT_ANYWHERE.search(head):
        return "heartbeat"
    start = _SYNTHETIC_START.match(head)
    return start.lastgroup.replace("_", "-") if start and start.lastgroup else None


def _split_queued(text: str, events: list[str]) -> list[str] | None:
    start = text.find(_QUEUED_HEADER)
    if start == -1:
        return None
    events.append("split:queued")
    batch = text[start + len(_QUEUED_HEADER) :]
    return [text[:start], *_QUEUED_SEPARATOR.split(batch)]


def _clean_once(
    text: str, role: str, extra_blocks: tuple[str, ...], events: list[str], gated: bool
) -> tuple[list[str], str | None]:
    """One pass of every rule: the pieces left, or the synthetic kind that drops the whole text."""
    text = _tidy(text)
    if gated and not _has_trigger(text):
        return ([text] if text else []), None
    if role != "assistant" and _QUEUED_HEADER in text:
        pieces = _split_queued(text, events) or [text]
        return [piece for piece in pieces if piece.strip()], None
    kind = _synthetic_kind(text, role)
    if kind is None:
        if role != "assistant" and _UNTRUSTED_CONTEXT_HEADER in text:
            text = _cut_untrusted_context(text, events)
        if "<active_memory_plugin" in text:
            text = _ACTIVE_MEMORY_LABEL.sub("", text)
        text = _strip_blocks(text, _blocks(extra_blocks, role == "assistant"), events)
        if "[[" in text:
            text = _remove(_REPLY_DIRECTIVE_LEADING, text, "directive:reply", events)
            text = _remove(_REPLY_DIRECTIVE, text, "directive:reply", events)
        if role == "assistant":
            text = _strip_assistant_noise(text, events)
        else:
            had_system_lines = events.count("envelope:system-line")
            text = _strip_user_envelopes(text, events)
            if not text.strip() and events.count("envelope:system-line") > had_system_lines:
                kind = "system-event"
        text = _tidy(text)
        kind = kind or _synthetic_kind(text, role)
    if kind is not None:
        events.append(f"synthetic:{kind}")
        return [], kind
    return ([text] if text else []), None


def clean(text: str, role: str, extra_blocks: tuple[str, ...] = ()) -> Cleaned:
    """Strip injected blocks and envelopes from one message; drop it whole when it is a synthetic prompt."""
    if not _has_trigger(text) and _tidy(text) == text:  # most turns: the loop below would return text as it is
        return Cleaned((text,), None, ()) if text else Cleaned((), _EMPTY, ())
    return _clean(text, role, extra_blocks, gated=True)


def clean_every_rule(text: str, role: str, extra_blocks: tuple[str, ...] = ()) -> Cleaned:
    """`clean` without the trigger shortcut: the plain path it is proven equal to."""
    return _clean(text, role, extra_blocks, gated=False)


def _clean(text: str, role: str, extra_blocks: tuple[str, ...], *, gated: bool) -> Cleaned:
    events: list[str] = []
    parts: list[str] = []
    dropped_synthetic = False
    pending = [text]
    while pending:
        piece = pending.pop()
        pieces, kind = _clean_once(piece, role, extra_blocks, events, gated)
        if kind is not None:
            dropped_synthetic = True
        elif pieces == [piece]:
            parts.append(piece)
        else:
            pending.extend(reversed(pieces))
    if parts:
        drop_reason = None
    else:
        drop_reason = _SYNTHETIC if dropped_synthetic else _EMPTY
    return Cleaned(tuple(parts), drop_reason, tuple(events))
