"""Keep the user's own words: remove what plugins, the gateway and the runtime injected around them.

The rules are data: a transcript format gives its `Cleaning` (its injected blocks, how a message splits, which whole
messages are synthetic, and its rewrites, in order), and each rule declares the literal `Needles` without which it
changes nothing. The shortcut that lets plain text through untouched is derived from those needles alone, per role,
never kept by hand; a property test proves it equal to running every rule.

Every rule only deletes characters, so a cleaned part is always a subsequence of the input; rules are repeated until
nothing changes, which makes `clean` idempotent even when removing one wrapper exposes another.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from distiller.canonical import DASH_LOOK_ALIKES, LOOK_ALIKES_OF_LT, skeleton
from distiller.screen.injected import MEMORY_BLOCKS, MEMORY_DELIMITED, MEMORY_FAMILIES, OUR_BLOCKS, REASONING_BLOCKS
from distiller.sources.cleaning import ASSISTANT, BLOCKS, PLAIN, Applied, Cleaning, Drop, Rule
from distiller.textscan import contains_any

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


_NAME_SEPARATOR = re.compile(r"[-_ ]+")


_WORD_JOINER = f"[-_ \\t{DASH_LOOK_ALIKES}]"


def _tag_name(name: str) -> str:
    """A tag name as a pattern: its words joined by `-` (or a dash like it), `_`, a blank or nothing, whatever
    joined them."""
    return f"{_WORD_JOINER}?".join(re.escape(word) for word in _NAME_SEPARATOR.split(name) if word)


@lru_cache(maxsize=32)
def _blocks(cleaning: Cleaning, extra_blocks: tuple[str, ...], reasoning: bool) -> _Blocks:
    """Two alternations of markers, those that start with `<` and those that start with `[`: the injected memory
    vocabulary, the format's own blocks, the configured extra ones and, for assistant turns, reasoning.

    Every XML tag kind is one alternative of a single tag pattern, `<`, blanks, an optional `/` (`close`), then the
    names ignoring case, each in a group naming its kind (`t<n>`); any other marker ends in an empty group that
    names it (`o<n>` opens kind n, `c<n>` closes it). Each alternation starts with its one literal character, which
    the engine skips to as fast as a memchr, and the tag names are tried once per `<`. Names listed exactly come
    before the families, so they keep their own kind."""
    delimited = {kind: (opening, closing) for kind, opening, closing in MEMORY_DELIMITED + cleaning.delimited}
    names = OUR_BLOCKS + MEMORY_BLOCKS + cleaning.blocks + extra_blocks + (REASONING_BLOCKS if reasoning else ())
    kinds = tuple(dict.fromkeys((*names, *delimited, *(kind for kind, _ in MEMORY_FAMILIES))))
    families = dict(MEMORY_FAMILIES)
    tags: list[str] = []
    grouped: dict[str, list[str]] = {"<": [], r"\[": []}
    for index, kind in enumerate(kinds):
        if kind not in delimited:
            family = families.get(kind)
            tags.append(f"(?P<t{index}>{family.replace('[-_]', _WORD_JOINER) if family else _tag_name(kind)})")
            continue
        for marker, name in zip(delimited[kind], (f"o{index}", f"c{index}"), strict=True):
            first = r"\[" if marker.startswith(r"\[") else "<"
            if not marker.startswith(first):
                raise ValueError(f"block marker {marker!r} of {kind!r} does not start with a literal < or [")
            grouped[first].append(f"{marker[len(first):]}(?P<{name}>)")
    grouped["<"].insert(0, rf"[ \t]*(?P<close>/[ \t]*)?(?i:{'|'.join(tags)})(?:[ \t\n][^<>]*)?>")
    angled, bracketed = (re.compile(f"{first}(?:{'|'.join(rest)})") if rest else None for first, rest in grouped.items())
    return _Blocks(kinds, angled, bracketed)


def _markers(text: str, blocks: _Blocks) -> Iterator[re.Match[str]]:
    """The markers in text from left to right, never overlapping: what one alternation of both groups would find.

    No marker of one group can match where one of the other does (their first characters differ), so the next
    marker is the earlier of the two groups' next matches; a match that the previous one overlapped is sought
    again after it."""
    angled_pattern, bracketed_pattern = blocks.angled, blocks.bracketed
    angled = angled_pattern.search(text) if angled_pattern and "<" in text else None
    bracketed = bracketed_pattern.search(text) if bracketed_pattern and "[" in text else None
    while True:
        if angled is not None and (bracketed is None or angled.start() < bracketed.start()):
            match = angled
        elif bracketed is not None:
            match = bracketed
        else:
            return
        yield match
        end = match.end()
        if angled_pattern is not None and angled is not None and angled.start() < end:
            angled = angled_pattern.search(text, end)
        if bracketed_pattern is not None and bracketed is not None and bracketed.start() < end:
            bracketed = bracketed_pattern.search(text, end)


def _strip_blocks(text: str, blocks: _Blocks, events: list[str]) -> str:
    """Remove whole blocks, nested ones included; an unclosed block runs to the end of the message. Markers are
    sought in the text's skeleton, where look-alike letters are Latin ones: the same length, so the same spans."""
    out: list[str] = []
    stack: list[str] = []
    pos = 0
    for match in _markers(skeleton(text), blocks):
        group = match.lastgroup or ""
        kind = blocks.kinds[int(group[1:])]
        if group[0] == "o" or (group[0] == "t" and match.group("close") is None):
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
            if kind in REASONING_BLOCKS:
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


_BLANK_RUN = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")


def tidy(text: str) -> str:
    if "\r" in text:  # one character is found much faster than two
        text = text.replace("\r\n", "\n")
    if "\n" in text:  # found at memchr speed, where counting newlines would read the whole text
        text = _BLANK_RUN.sub("\n\n", text)
    return text.strip()


@dataclass(frozen=True)
class _Gate:
    """The union of the needles of every rule that applies to one role: a text holding none of them is left as it
    is by every rule."""

    anywhere: tuple[str, ...]
    anywhere_unicode: tuple[str, ...]  # the needles that are not ASCII, sought in texts that are not either
    line_start: tuple[str, ...]
    after_newline: re.Pattern[str] | None
    folded: tuple[str, ...]
    folded_anchors: tuple[str, ...]  # a caseless character of each folded needle, sought before lower-casing
    start_folded: tuple[str, ...]
    start_folded_chars: int

    def may_change(self, text: str) -> bool:
        if contains_any(text, self.anywhere):
            return True
        if self.anywhere_unicode and not text.isascii() and contains_any(text, self.anywhere_unicode):
            return True
        if self.line_start and (text.lstrip(" \t").startswith(self.line_start)
                                or ("\n" in text and self.after_newline is not None
                                    and self.after_newline.search(text) is not None)):
            return True
        if self.start_folded and text[: self.start_folded_chars].lower().startswith(self.start_folded):
            return True
        return bool(self.folded) and contains_any(text, self.folded_anchors) and contains_any(text.lower(),
                                                                                               self.folded)


def _unsubsumed(needles: list[str], found_anyway: tuple[str, ...]) -> tuple[str, ...]:
    """The needles without those that hold another one (or one found anyway): a text holding such a needle holds
    the other too. Shortest first, the cheapest and likeliest to be found."""
    distinct = sorted(dict.fromkeys(needles), key=len)
    kept: list[str] = []
    for needle in distinct:
        if not any(other in needle for other in (*kept, *found_anyway)):
            kept.append(needle)
    return tuple(kept)


def _caseless_char(needle: str) -> str:
    for char in needle:
        if char.lower() == char.upper():
            return char
    raise ValueError(f"a folded needle needs a character without case: {needle!r}")


def _rewrites(cleaning: Cleaning) -> tuple[Rule, ...]:
    """A format's rewrites, the blocks first when it does not place them: no format can opt out of the injected
    memory vocabulary."""
    return cleaning.rewrites if BLOCKS in cleaning.rewrites else (BLOCKS, *cleaning.rewrites)


@lru_cache(maxsize=32)
def gate(cleaning: Cleaning, role: str, extra_blocks: tuple[str, ...] = ()) -> _Gate:
    """The shortcut for one role, derived from the needles its rules declare (and, for the blocks, the first
    character every block marker starts with)."""
    rules = [rule for rule in (*cleaning.splits, *cleaning.synthetic, *_rewrites(cleaning)) if role in rule.roles]
    needles = [rule.needles for rule in rules]
    anywhere_needles = [needle for group in needles for needle in group.anywhere]
    if BLOCKS in rules:
        blocks = _blocks(cleaning, extra_blocks, role == ASSISTANT)
        anywhere_needles += (["<", *LOOK_ALIKES_OF_LT] * (blocks.angled is not None)
                             + ["["] * (blocks.bracketed is not None))
    anywhere = _unsubsumed(anywhere_needles, ())
    line_start = _unsubsumed([needle for group in needles for needle in group.line_start], anywhere)
    folded = tuple(dict.fromkeys(needle for group in needles for needle in group.folded))
    start_folded = tuple(dict.fromkeys(needle for group in needles for needle in group.start_folded))
    after_newline = (re.compile("\n[ \t]*(?:" + "|".join(re.escape(n) for n in line_start) + ")")
                     if line_start else None)
    return _Gate(
        tuple(needle for needle in anywhere if needle.isascii()),
        tuple(needle for needle in anywhere if not needle.isascii()),
        line_start,
        after_newline,
        folded,
        tuple(dict.fromkeys(_caseless_char(needle) for needle in folded)),
        start_folded,
        max(map(len, start_folded), default=0),
    )


@dataclass(frozen=True, eq=False)
class _RoleRules:
    """A format's rules that apply to one role, in order (the blocks bound to their markers), and its shortcut:
    made once per format, role and extra blocks instead of sorted out on every pass."""

    splits: tuple[Callable[[str, list[str]], Applied], ...]
    synthetic: tuple[Callable[[str, list[str]], Applied], ...]
    rewrites: tuple[Callable[[str, list[str]], Applied], ...]
    shortcut: _Gate


@lru_cache(maxsize=32)
def _role_rules(cleaning: Cleaning, role: str, extra_blocks: tuple[str, ...]) -> _RoleRules:
    def strip_blocks(text: str, events: list[str]) -> str:
        return _strip_blocks(text, blocks, events)

    rewrites = _rewrites(cleaning)
    blocks = _blocks(cleaning, extra_blocks, role == ASSISTANT)

    return _RoleRules(
        tuple(rule.apply for rule in cleaning.splits if role in rule.roles),
        tuple(rule.apply for rule in cleaning.synthetic if role in rule.roles),
        tuple(strip_blocks if rule is BLOCKS else rule.apply for rule in rewrites if role in rule.roles),
        gate(cleaning, role, extra_blocks),
    )


def _synthetic_kind(rules: _RoleRules, text: str, events: list[str]) -> str | None:
    for apply in rules.synthetic:
        if isinstance(kind := apply(text, events), str):
            return kind
    return None


def _clean_once(text: str, rules: _RoleRules, events: list[str], gated: bool) -> tuple[list[str], str | None]:
    """One pass of every rule: the pieces left, or the synthetic kind that drops the whole text."""
    text = tidy(text)
    if gated and not rules.shortcut.may_change(text):
        return ([text] if text else []), None
    for apply in rules.splits:
        if isinstance(pieces := apply(text, events), list):
            return [piece for piece in pieces if piece.strip()], None
    kind = _synthetic_kind(rules, text, events)
    if kind is None:
        for apply in rules.rewrites:
            result = apply(text, events)
            if isinstance(result, Drop):
                kind = result.kind
                break
            if not isinstance(result, str):
                raise TypeError(f"a rewrite rule returned {type(result).__name__}, not the new text or a Drop")
            text = result
        text = tidy(text)
        kind = kind or _synthetic_kind(rules, text, events)
    if kind is not None:
        events.append(f"synthetic:{kind}")
        return [], kind
    return ([text] if text else []), None


def clean(text: str, role: str, extra_blocks: tuple[str, ...] = (), cleaning: Cleaning = PLAIN) -> Cleaned:
    """Strip injected blocks and envelopes from one message; drop it whole when it is a synthetic prompt."""
    rules = _role_rules(cleaning, role, extra_blocks)
    if not rules.shortcut.may_change(text) and tidy(text) == text:
        return Cleaned((text,), None, ()) if text else Cleaned((), _EMPTY, ())  # most turns
    return _clean(text, rules, gated=True)


def clean_every_rule(text: str, role: str, extra_blocks: tuple[str, ...] = (), cleaning: Cleaning = PLAIN) -> Cleaned:
    """`clean` without the shortcut: the plain path it is proven equal to."""
    return _clean(text, _role_rules(cleaning, role, extra_blocks), gated=False)


def _clean(text: str, rules: _RoleRules, *, gated: bool) -> Cleaned:
    events: list[str] = []
    parts: list[str] = []
    dropped_synthetic = False
    pending = [text]
    while pending:
        piece = pending.pop()
        pieces, kind = _clean_once(piece, rules, events, gated)
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
