"""The prefilter on more than one style of conversation: the development set (short persona-chat turns) is one;
long, friendly, multi-topic turns between people (tests/fixtures/friendly_turns.py, hand-written) are another. A
sentence about the speaker's own life outweighs the greeting, praise or reaction around it."""

from __future__ import annotations

import sys
from pathlib import Path

from distiller.screen.prefilter import KEEP, prefilter

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
from friendly_turns import FACT, OTHER


def test_friendly_turns_with_a_fact_about_the_speaker_are_kept():
    dropped = [(prefilter(t, "user").reason, t) for t in FACT if prefilter(t, "user").decision != KEEP]
    assert dropped == []


def test_friendly_turns_without_one_are_mostly_dropped():
    """Measured: 8 of 12 dropped (ack-filler 4, other-party 2, reaction 1, question 1); keeping too much is the safe side
    (it costs tokens, never a fact), so this guards the share, not each turn."""
    kept = [(prefilter(t, "user").reason, t) for t in OTHER if prefilter(t, "user").decision == KEEP]
    assert len(kept) <= len(OTHER) // 2, kept


def test_a_fact_outweighs_the_greeting_praise_or_reaction_around_it():
    """Each fact turn, cut down to the sentences around its fact, is dropped: so it is the fact that keeps it."""
    for turn in ("Hey Jon! The store's doing great! It's a wild ride.",
                 "Yeah, Nate! A fellow chef in the kitchen is always a great help!"):
        assert prefilter(turn, "user").decision == KEEP
    assert prefilter("Hey Priya! So good to hear from you.", "user").decision != KEEP
    assert prefilter("Oh wow, congrats on the promotion, Sam!", "user").decision != KEEP
    assert prefilter("Thanks so much, Leo!", "user").decision != KEEP
