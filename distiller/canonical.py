"""Canonical text: the one form of a message that screening, redaction, the model and the store ever see.

A transcript is input, and an attacker (or a plugin, or a copy-paste from a web page) controls its characters.
Two kinds of character make the same words look different to code while looking the same to people:

- **invisible ones**: Unicode format characters (category Cf: zero-width space, joiners, word joiner, soft hyphen,
  BOM, the bidi embeddings, overrides and isolates, the tag characters used to smuggle text past a reader) and the
  few blank letters that render as nothing (Hangul fillers). A zero-width space inside `npm_…` hid a token from
  redaction; one inside "Lisbon" made a second belief; a U+202E reversed what a terminal showed. They are removed,
  and counted (`invisible_chars`).
- **compatibility forms**: full-width `＜ｂｅｅ－ｒｅｃａｌｌ＞`, ligatures, circled and mathematical letters. NFKC
  folds them into the plain characters every rule is written for.

`canonical` is applied once per message, before any screening rule; plain ASCII text (most messages) is returned as
it is after one `isascii` test. `skeleton` goes one step further, for matching tag names only: letters of other
scripts that look like Latin ones (Cyrillic `е`, Greek `ο`), dashes, angle brackets and slashes that look like ASCII
ones become those, one character for one, so a match in the skeleton is a span of the text.
"""

from __future__ import annotations

import re
import unicodedata

from distiller.textscan import trie

# Every Cf character of Unicode 15 (a test checks this against the running Python's database), the Hangul fillers
# (letters that render as nothing), the combining grapheme joiner and the ideographic variation selectors (both
# invisible; the selectors are a known way to smuggle bytes). Variation selectors 1-16 stay: emoji need them.
_INVISIBLE_RANGES = (
    "\u00ad", "\u034f", "\u0600-\u0605", "\u061c", "\u06dd", "\u070f", "\u0890-\u0891", "\u08e2", "\u115f-\u1160",
    "\u180e", "\u200b-\u200f", "\u202a-\u202e", "\u2060-\u2064", "\u2066-\u206f", "\u3164", "\ufeff", "\uffa0",
    "\ufff9-\ufffb", "\U000110bd", "\U000110cd", "\U00013430-\U0001343f", "\U0001bca0-\U0001bca3",
    "\U0001d173-\U0001d17a", "\U000e0001", "\U000e0020-\U000e007f", "\U000e0100-\U000e01ef",
)
INVISIBLE_CLASS = "".join(_INVISIBLE_RANGES)  # the body of a character class: `[…]`
INVISIBLE = re.compile(f"[{INVISIBLE_CLASS}]+")


def _utf8_finder() -> re.Pattern[bytes]:
    """The UTF-8 encodings of the invisible characters as one trie of bytes: whether a text holds one, asked of the
    UTF-8 bytes of its characters beyond ASCII (its ASCII bytes deleted: a character's bytes are all beyond ASCII
    or it is one, so each stays whole), where the engine skips to the dozen lead bytes they start with. Exact: a
    lead byte is never a continuation, so no match spans two characters. `canonical` of a message of 370
    characters that is not ASCII (the synthetic corpus' mean): 31,800 machine instructions (callgrind), 45,700
    when sought in all its bytes; the class above took 7.7 µs against 0.5 for a 200-character one (a list of ranges
    the engine tries in turn at every character, as it must for one that reaches past U+FFFF)."""
    codes: list[int] = []
    for part in _INVISIBLE_RANGES:
        first, last = (part[0], part[-1]) if len(part) == 3 else (part, part)
        codes.extend(range(ord(first), ord(last) + 1))
    encoded = tuple(chr(code).encode().decode("latin-1") for code in codes)
    return re.compile(trie(encoded).encode("latin-1"))


_INVISIBLE_UTF8 = _utf8_finder()
_ASCII_BYTES = bytes(range(128))


def _holds_invisible(text: str) -> bool:
    """`INVISIBLE.search(text) is not None`, sought in the UTF-8 bytes of the text's characters beyond ASCII."""
    return _INVISIBLE_UTF8.search(text.encode("utf-8", "surrogatepass").translate(None, _ASCII_BYTES)) is not None


def canonical(text: str) -> tuple[str, int]:
    """The text without invisible characters, NFKC-normalised, and how many characters were removed."""
    if text.isascii():
        return text, 0
    visible = INVISIBLE.sub("", text) if _holds_invisible(text) else text
    removed = len(text) - len(visible)
    if not unicodedata.is_normalized("NFKC", visible):
        visible = unicodedata.normalize("NFKC", visible)
    return visible, removed


# Look-alikes of the characters tag names and markers are written with, mapped one to one. Upper and lower case
# both: tag matching ignores case. Sources: Unicode's confusables.txt for the Latin letters (Cyrillic, Greek,
# Armenian and Latin-extended forms that NFKC leaves alone) and for the ASCII punctuation of a tag.
_LOOK_ALIKES = {
    "a": "аɑαа", "A": "АΑ", "b": "Ьᖯ", "B": "ВΒ", "c": "сϲ", "C": "СϹ", "d": "ԁ", "e": "еєε", "E": "ЕΕ",
    "g": "ɡց", "h": "һհ", "H": "НΗ", "i": "іιıɩ", "I": "ІΙӀ", "j": "јϳ", "J": "Ј", "k": "κк", "K": "КΚ",
    "l": "ӏⅼ", "m": "м", "M": "МΜ", "n": "пո", "N": "Ν", "o": "оοօ", "O": "ОΟՕ", "p": "рρ", "P": "РΡ", "q": "ԛ",
    "r": "г", "s": "ѕ", "S": "Ѕ", "t": "т", "T": "ТΤ", "u": "υս", "v": "νѵ", "w": "ԝѡ", "x": "хχ", "X": "ХΧ",
    "y": "уүγ", "Y": "ΥҮ", "z": "ᴢ", "Z": "Ζ",
    "<": "\u2039\u3008\u27e8\u2329\u1438\u02c2\u276e",
    ">": "\u203a\u3009\u27e9\u232a\u1433\u02c3\u276f",
    "/": "\u2215\u2044\u29f8\u2571\u3033",
}
_SKELETON = str.maketrans({alike: plain for plain, alikes in _LOOK_ALIKES.items() for alike in alikes})
# Dashes between the words of a tag name are matched by the tag patterns themselves: an en dash in prose is common,
# and would make every such text pay for a translation.
DASH_LOOK_ALIKES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2043\ufe58\ufe63\u02d7\u2796\u02cd\u2017"
_ANY_LOOK_ALIKE = re.compile("[" + re.escape("".join(_LOOK_ALIKES.values())) + "]")
LOOK_ALIKES_OF_LT: tuple[str, ...] = tuple(_LOOK_ALIKES["<"])  # a tag may open with one of these


def skeleton(text: str) -> str:
    """The text with look-alikes of Latin letters and of `<>/` replaced by them: the same length, so a span found
    in it is the same span of the text. For tag matching only: a Russian user's words are never rewritten.

    Translating costs tens of nanoseconds a character; a search for any look-alike first costs about one."""
    if text.isascii() or _ANY_LOOK_ALIKE.search(text) is None:
        return text
    return text.translate(_SKELETON)
