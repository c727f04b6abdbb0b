"""The shared scanning helpers."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from distiller.textscan import anchored, blank_except, contains_any, contains_any_anchored, finder


def test_contains_any_finds_any_needle_and_nothing_in_an_empty_tuple():
    assert contains_any("a <tag> here", ("[", "<"))
    assert not contains_any("plain words", ("[", "<"))
    assert not contains_any("anything", ())


def test_blank_except_blanks_other_ascii_and_keeps_non_ascii_bytes():
    table = blank_except("abc")
    assert b"abx, cab!".translate(table).split() == [b"ab", b"cab"]
    assert "é".encode().translate(table) == "é".encode()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=5), max_size=8), st.text(max_size=40))
def test_the_anchored_search_finds_what_contains_any_finds(needles, text):
    needles = tuple(needles)
    text = text + "".join(needles[:1])[1:]  # now and then a text holding most of a needle
    assert contains_any_anchored(text, anchored(needles)) == contains_any(text, needles)
    assert sorted(n for _, group in anchored(needles) for n in group) == sorted(needles)
    assert all(anchor in needle for anchor, group in anchored(needles) for needle in group)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(min_size=1, max_size=4), st.text(alphabet="abcpw \t", min_size=1, max_size=4)),
                max_size=8), st.text(alphabet=st.sampled_from("abcpwA-_ \t.:é"), max_size=40))
def test_the_finder_finds_what_contains_any_finds(needles, text):
    needles = tuple(needles)
    text = text + "".join(needles[-1:])[:-1]
    assert finder(needles)(text) == contains_any(text, needles)
    lower_words = tuple(needle for needle in needles if all("a" <= c <= "z" or c in " \t" for c in needle))
    assert finder(lower_words)(text) == contains_any(text, lower_words)
