"""Canonical text: invisible characters out, compatibility forms folded, look-alikes mapped for tag matching."""

from __future__ import annotations

import sys
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from distiller.canonical import INVISIBLE, canonical, skeleton

_EXTRA_INVISIBLE = {0x034F, 0x115F, 0x1160, 0x3164, 0xFFA0, *range(0xE0100, 0xE01F0)}


def test_every_format_character_of_this_pythons_unicode_is_invisible_to_us():
    format_chars = [c for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"]
    assert format_chars
    missing = [hex(c) for c in format_chars if not INVISIBLE.fullmatch(chr(c))]
    assert missing == []


def test_nothing_visible_is_counted_invisible():
    listed = [c for c in range(sys.maxunicode + 1) if INVISIBLE.fullmatch(chr(c))]
    visible_listed = [hex(c) for c in listed
                      if unicodedata.category(chr(c)) not in ("Cf", "Cn") and c not in _EXTRA_INVISIBLE]
    assert visible_listed == []


def test_invisible_characters_are_removed_and_counted():
    text = "I live in Lis\u200bbon\u202e, near the\u00adriver\ufeff"
    assert canonical(text) == ("I live in Lisbon, near theriver", 4)


def test_compatibility_forms_fold_to_plain_characters():
    assert canonical("＜ｂｅｅ－ｒｅｃａｌｌ＞ ﬁne ①") == ("<bee-recall> fine 1", 0)


def test_plain_ascii_is_returned_as_it_is():
    text = "I moved to Porto in 2021."
    assert canonical(text)[0] is text


def test_skeleton_maps_look_alikes_one_for_one():
    disguised = "‹bее-rеcаll›"  # Cyrillic е and а, single guillemets
    assert skeleton(disguised) == "<bee-recall>"
    assert len(skeleton(disguised)) == len(disguised)


def test_skeleton_leaves_other_scripts_words_as_letters_of_the_same_length():
    russian = "Я живу в Москве"
    assert len(skeleton(russian)) == len(russian)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_canonical_text_is_stable_and_holds_nothing_invisible(text):
    once, _ = canonical(text)
    assert canonical(once) == (once, 0)
    assert INVISIBLE.search(once) is None
    assert len(skeleton(once)) == len(once)


def test_the_utf8_shortcut_finds_every_invisible_character():
    from distiller.canonical import _INVISIBLE_UTF8

    listed = [chr(c) for c in range(sys.maxunicode + 1) if INVISIBLE.fullmatch(chr(c))]
    assert all(_INVISIBLE_UTF8.fullmatch(char.encode()) for char in listed)


_MIXED = st.text(st.sampled_from(["a", "é", "’", "—", "\u200b", "\u2060", "\ufeff", "\u00ad", "😀", "\U000e0041",
                                  "\U0001d173", "\u2028", "\u0600", "\ud800", "Я"]), max_size=30)


@settings(max_examples=500, deadline=None)
@given(st.one_of(_MIXED, st.text(max_size=30)))
def test_the_utf8_shortcut_equals_the_plain_search(text):
    from distiller.canonical import _holds_invisible

    assert _holds_invisible(text) == (INVISIBLE.search(text) is not None)
