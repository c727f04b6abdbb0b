"""Statement support: numbers and names must come from the cited messages, words must be shared."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distiller import support
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
        ("The user's golden retriever, named rex, loves the beach.", "my golden retriever loves the beach", False),
        ("The user's golden retriever is named rex.", "my golden retriever rex loves the beach", True),
        ("The user goes by kit at work.", "everyone at work calls me kit", True),
        ("The user goes by kit at work.", "everyone at work calls me by my first name", False),
    ],
)
def test_numbers_names_and_words_come_from_the_cited_text(statement, text, ok):
    assert unsupported(statement, [text], [text], DAY) is not ok


_WORDS = st.sampled_from(["hike", "hiking", "hikes", "ride", "riding", "live", "living", "allergic", "allergy",
                          "dog", "dogs", "Lisbon", "python", "pythons", "teach", "teacher", "the", "user", "I",
                          "two", "2", "Maya's", "café", "İstanbul", "straße"]) | st.text(min_size=1, max_size=8)
_TEXTS = st.lists(_WORDS, max_size=12).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=12))
def test_a_stem_is_related_to_itself_which_the_shared_stem_shortcuts_rely_on(word):
    assert support._related(word, word)


@settings(max_examples=300, deadline=None)
@given(_TEXTS, st.lists(_TEXTS, min_size=1, max_size=3), st.lists(_TEXTS, min_size=1, max_size=3))
def test_support_with_its_shortcuts_and_memos_judges_as_the_plain_comparison_does(statement, quotes, texts):
    """The plain path: every stem compared with every other, each computed afresh."""
    def stems(text):
        return {support._stem.__wrapped__(w) for w in support._WORD.findall(text)
                if w.casefold() not in support._FUNCTION_WORDS and not w.isdigit()}

    def plain():
        joined = " \n ".join(texts)
        words = support._bare_words(joined)
        if support._numbers(statement) - support._numbers(joined) - support._years_near(DAY):
            return True
        squashed = support._SQUASH.sub("", joined.casefold())
        if any(n not in words and support._SQUASH.sub("", n) not in squashed for n in support._names(statement)):
            return True
        said, quoted = stems(statement), set().union(*(stems(q) for q in quotes))
        if not any(support._related(a, b) for a in said for b in quoted):
            return True
        cited = stems(joined)
        return sum(any(support._related(a, b) for b in cited) for a in said) < support.MIN_BACKED_SHARE * len(said)

    assert unsupported(statement, quotes, texts, DAY) == plain()
