"""The shared scanning helpers."""

from __future__ import annotations

from distiller.textscan import blank_except, contains_any


def test_contains_any_finds_any_needle_and_nothing_in_an_empty_tuple():
    assert contains_any("a <tag> here", ("[", "<"))
    assert not contains_any("plain words", ("[", "<"))
    assert not contains_any("anything", ())


def test_blank_except_blanks_other_ascii_and_keeps_non_ascii_bytes():
    table = blank_except("abc")
    assert "abx, cab!".encode().translate(table).split() == [b"ab", b"cab"]
    assert "é".encode().translate(table) == "é".encode()
