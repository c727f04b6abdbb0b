"""Statement support: numbers and names must come from the cited messages, words must be shared."""

from __future__ import annotations

import pytest

from distiller.support import trivial_quote, unsupported

DAY = ["2026-03-01T10:00:00Z"]


@pytest.mark.parametrize(("quote", "trivial"), [("e", True), ("I love", True), ("Dana's dog", True),
                                                ("I'm retired", False), ("I don't", False),
                                                ("I love hiking", False)])
def test_a_quote_needs_three_words_counting_contractions_as_two(quote, trivial):
    assert trivial_quote(quote) is trivial


@pytest.mark.parametrize(
    ("statement", "text", "ok"),
    [
        ("The user has two dogs.", "I have 2 dogs", True),
        ("The user has 2 dogs.", "I have two dogs", True),
        ("The user has 3 dogs.", "I have two dogs", False),
        ("The user moved to Lisbon in 2025.", "I moved to Lisbon last year", True),  # a year near the message
        ("The user moved to Lisbon in 1998.", "I moved to Lisbon long ago", False),
        ("The user loves Spider-Man comics.", "I love spiderman comics", True),
        ("Zorblax is the user's pet python.", "I love my pet python", False),
        ("The user loves hiking and keeps pet pythons at home.", "I love hiking", False),
        ("The user rides horses.", "I like riding horses", True),
    ],
)
def test_numbers_names_and_words_come_from_the_cited_text(statement, text, ok):
    assert unsupported(statement, [text], [text], DAY) is not ok
