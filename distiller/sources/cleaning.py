"""The words a format's cleaning rules are written in: part of the format seam (`sources.base.Format.cleaning`),
so a format's package states its envelopes and noise without importing screening. Screening's engine
(`screen/clean.py`) runs them: it derives its shortcut from each rule's `Needles`, strips the blocks where `BLOCKS`
stands, and repeats the rules until nothing changes.

Every rule only deletes characters (the helpers here remove whole matches), so a cleaned part is always a
subsequence of its input.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

USER, ASSISTANT = "user", "assistant"
BOTH = (USER, ASSISTANT)


@dataclass(frozen=True)
class Needles:
    """The literal strings of which a text must hold one for a rule to change it (to drop or split it).

    `anywhere`: in the text; `line_start`: at the start of a line, after blanks or tabs; `folded`: anywhere in
    the lower-cased text (for a rule that ignores case; each needle must hold a character that has no case, found
    first in the text itself); `start_folded`: at the very start of the lower-cased text (cleaned text is
    stripped: a rule anchored at the start of the message sees no blank before it)."""

    anywhere: tuple[str, ...] = ()
    line_start: tuple[str, ...] = ()
    folded: tuple[str, ...] = ()
    start_folded: tuple[str, ...] = ()


@dataclass(frozen=True)
class Drop:
    """What a rewrite returns for a message that turns out to be synthetic as a whole."""

    kind: str


Applied = list[str] | str | Drop | None
"""What a rule's `apply` returns: a split's pieces (or None), a synthetic check's kind (or None), a rewrite's new
text (or a Drop)."""


@dataclass(frozen=True, eq=False)
class Rule:
    """One rule of a format. `apply(text, events)` returns: for a split, the pieces or None; for a synthetic check,
    the kind or None; for a rewrite, the new text (or a Drop). `BLOCKS` in a format's rewrites marks where the
    injected blocks are stripped."""

    name: str
    needles: Needles
    apply: Callable[[str, list[str]], Applied]
    roles: tuple[str, ...] = BOTH


BLOCKS = Rule("blocks", Needles(), lambda text, events: text)  # a place holder: the engine strips the blocks there


@dataclass(frozen=True, eq=False)
class Cleaning:
    """A format's own envelopes and noise, on top of the injected memory every format's messages are cleaned of
    (`screen.injected`). `blocks` are XML-tag kinds and `delimited` are (kind, opening regex, closing regex) of
    other block markers, each starting with a literal `<` or `[`."""

    blocks: tuple[str, ...] = ()
    delimited: tuple[tuple[str, str, str], ...] = ()
    splits: tuple[Rule, ...] = ()
    synthetic: tuple[Rule, ...] = ()
    rewrites: tuple[Rule, ...] = (BLOCKS,)


PLAIN = Cleaning()  # a format with no envelopes of its own: only injected memory (and reasoning blocks) go


def remove(pattern: re.Pattern[str], text: str, event: str, events: list[str]) -> str:
    text, count = pattern.subn("", text)
    events.extend([event] * count)
    return text


def line_matches(pattern: re.Pattern[str], needles: tuple[str, ...], text: str) -> list[re.Match[str]]:
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


def remove_lines(pattern: re.Pattern[str], needles: tuple[str, ...], text: str, event: str, events: list[str]) -> str:
    """`remove` for a line pattern, by way of `line_matches`."""
    matches = line_matches(pattern, needles, text)
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
