"""Echoes: spans of a user message that reproduce stored beliefs, removed so recall never feeds back.

A recall block or profile that comes back inside its tag is stripped by clean.py. This catches the rest: recall
lines pasted without the tag, a profile quoted in a prompt, an agent's instructions file copied into a message.
The run loads the live beliefs' statements once (`EchoIndex`) and every user item is compared with them as
normalised word shingles (lower-cased words, punctuation and case ignored): each run of words covered by a
5-word shingle of a statement (or by a whole statement of 3 or 4 words) is removed with the recall line's
decoration around it (`- [category]`, `(0.90)`), and counted as `recall-echo`. The words around it stay, so new
information in the same message survives; an item left without two words is dropped as `recall-echo`.

Statements say "The user …" in the third person, so a user's own first-person words seldom form one of their
5-word shingles; on the labelled persona data none of the user turns lost a word to the store built from them
(tests/bench/bench_recall.py prints the count).
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
    """The shingles of the statements an echo reproduces, and the shingle lengths to look for."""

    shingles: frozenset[str]
    sizes: tuple[int, ...]

    def __bool__(self) -> bool:
        return bool(self.shingles)


EMPTY = EchoIndex(frozenset(), ())


def index(statements: Iterable[str]) -> EchoIndex:
    shingles: set[str] = set()
    for statement in statements:
        found = words(statement)
        if len(found) < MIN_WORDS:
            continue
        if len(found) < SHINGLE:
            shingles.add(" ".join(found))
        else:
            shingles.update(" ".join(found[i:i + SHINGLE]) for i in range(len(found) - SHINGLE + 1))
    sizes = tuple(sorted({len(s.split()) for s in shingles}))
    return EchoIndex(frozenset(shingles), sizes)


def strip(text: str, echoes: EchoIndex) -> tuple[str, int]:
    """`text` without the spans that reproduce the statements, and how many spans were removed."""
    spans = word_spans(text)
    if len(spans) < MIN_WORDS or not echoes:
        return text, 0
    tokens = [w for w, _, _ in spans]
    covered = [False] * len(spans)
    for size in echoes.sizes:
        for i in range(len(tokens) - size + 1):
            if " ".join(tokens[i:i + size]) in echoes.shingles:
                covered[i:i + size] = [True] * size
    if not any(covered):
        return text, 0
    runs: list[tuple[int, int]] = []
    for i, hit in enumerate(covered):
        if hit and (i == 0 or not covered[i - 1]):
            runs.append((spans[i][1], spans[i][2]))
        elif hit:
            runs[-1] = (runs[-1][0], spans[i][2])
    out, position = [], 0
    for start, end in runs:
        before = _BEFORE.search(text, position, start)
        start = before.start() if before else start
        end = _AFTER.match(text, end).end()
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
