"""Echoes: spans of a user message that reproduce stored beliefs, removed so recall never feeds back.

A recall block or profile that comes back inside its tag is stripped by clean.py. This catches the rest: recall
lines pasted without the tag, a profile quoted in a prompt, an agent's instructions file copied into a message.
The run loads the live beliefs' statements once (`EchoIndex`) and every user item is compared with them as
normalised words (lower-cased, punctuation and case ignored): a run of words that reproduces a whole statement of
three words or more, found by its first five words (its shingle), is removed with the recall line's decoration
around it (`- [category]`, `(0.90)`), and counted as `recall-echo`. The words around it stay, so new information
in the same message survives; an item left without two words is dropped as `recall-echo`.

Only a whole statement is an echo, not a phrase of one: "green tea in the morning" is in the statement "The user
prefers green tea in the morning" and in the user's own "I prefer green tea in the morning" when they say it again
(the history property test found that case: a repeated fact lost its evidence). Statements say "The user …", so
the user's own first-person words do not reproduce one; on the persona development set none of 27,704 user turns
(2,000 users) loses a word to the store built from them (tests/bench/bench_recall.py quality).

Cost: the index of 10,000 statements is built in ~0.2 s once per run; a message is looked at only where a
statement's first word stands (~3 µs a word, for 200,000 words of text under load).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from distiller.screen import Decision, Screened
from distiller.screen.prefilter import DROP
from distiller.terms import word_spans, words

SHINGLE = 5
MIN_WORDS = 3  # a shorter statement ("Likes tea") is too common a phrase to call an echo
ECHO = "recall-echo"  # apart from the prefilter's "echo" (a turn repeating the previous one)

_BEFORE = re.compile(r"[ \t]*(?:[-*•+][ \t]+)?(?:\[[^\]\n]{0,40}\][ \t]*)?\Z")
_AFTER = re.compile(r"[.;,!]?[ \t]*(?:\([ \t]*\d(?:\.\d+)?[ \t]*\))?[.;,]?")
_BLANK_RUN = re.compile(r"\n[ \t]*(?:\n[ \t]*)+")


@dataclass(frozen=True, slots=True)
class EchoIndex:
    """The statements an echo reproduces (as word tuples), by their first words (up to SHINGLE of them)."""

    starts: dict[str, tuple[tuple[str, ...], ...]]
    sizes: tuple[int, ...]  # the lengths of those first words
    firsts: frozenset[str]  # each statement's first word: only where one stands is a statement looked for

    def __bool__(self) -> bool:
        return bool(self.starts)


EMPTY = EchoIndex({}, (), frozenset())


def index(statements: Iterable[str]) -> EchoIndex:
    starts: dict[str, set[tuple[str, ...]]] = {}
    for statement in statements:
        found = tuple(words(statement))
        if len(found) >= MIN_WORDS:
            starts.setdefault(" ".join(found[:SHINGLE]), set()).add(found)
    sizes = tuple(sorted({min(len(key.split()), SHINGLE) for key in starts}))
    return EchoIndex({key: tuple(sorted(found, key=len, reverse=True)) for key, found in starts.items()}, sizes,
                     frozenset(key.split()[0] for key in starts))


def strip(text: str, echoes: EchoIndex) -> tuple[str, int]:
    """`text` without the spans that reproduce a whole statement, and how many spans were removed."""
    spans = word_spans(text)
    if len(spans) < MIN_WORDS or not echoes:
        return text, 0
    tokens = [w for w, _, _ in spans]
    runs: list[tuple[int, int]] = []  # (first word, one past the last) of each echo, in order, apart
    i = 0
    while i < len(tokens):
        end = None
        for size in echoes.sizes if tokens[i] in echoes.firsts else ():
            for statement in echoes.starts.get(" ".join(tokens[i:i + size]), ()):  # the longest first
                if tuple(tokens[i:i + len(statement)]) == statement:
                    end = max(end or 0, i + len(statement))
                    break
        if end is None:
            i += 1
        else:
            runs.append((i, end))
            i = end
    if not runs:
        return text, 0
    out, position = [], 0
    for first, last in runs:
        start, end = spans[first][1], spans[last - 1][2]
        before = _BEFORE.search(text, position, start)
        start = before.start() if before else start
        after = _AFTER.match(text, end)  # it matches the empty string too: never None
        end = after.end() if after else end
        out.append(text[position:start])
        if start > position and end < len(text) and not text[start - 1].isspace() and not text[end].isspace():
            out.append(" ")  # the words on either side stay apart
        position = end
    out.append(text[position:])
    kept = _BLANK_RUN.sub("\n\n", "".join(out)).strip()
    return kept, len(runs)


def without_echoes(screened: Screened, echoes: EchoIndex) -> Screened:
    """The screened message with its user items' echoes removed, each removal counted as an `echo` strip."""
    decisions, removed = [], 0
    for decision in screened.decisions:
        if decision.decision == DROP or decision.message.role != "user" or not decision.text:
            decisions.append(decision)
            continue
        text, count = strip(decision.text, echoes)
        if count:
            removed += count
            keep = len(words(text)) >= 2
            decision = Decision(decision.message, decision.item_id, text if keep else "",
                                decision.decision if keep else DROP, decision.reason if keep else ECHO)
        decisions.append(decision)
    if not removed:
        return screened
    return Screened(tuple(decisions), screened.clean_events + (ECHO,) * removed, screened.redactions)
