"""Statement normalization and the stable hash keys of beliefs and tombstones.

Exact duplicates share a key (case, whitespace, punctuation and spelled-out small numbers do not matter); near
duplicates are judged on content tokens, and a signature of numbers, dates and negation keeps "has 2 kids" apart
from "has 3 kids" and "likes tea" apart from "does not like tea" however similar the words.
"""

from __future__ import annotations

import hashlib
import re
import string
import unicodedata
from functools import lru_cache
from typing import NamedTuple

from distiller.textscan import blank_except

KEY_VERSION = "b1"

_APOSTROPHES = str.maketrans("", "", "'’‘`´")
_HAS_APOSTROPHE = re.compile("['’‘`´]")
_TOKEN = re.compile(r"\d+(?:[.,]\d+)+|[^\W_]+")
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+")
_DIGIT = re.compile(r"\d")
_NUMBER_WORDS = {
    word: str(n)
    for n, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
} | {word: str(n) for n, word in zip(range(30, 100, 10), "thirty forty fifty sixty seventy eighty ninety".split(),
                                                      strict=True)}
NEGATIONS = frozenset(
    "not no never nor neither none nobody nothing nowhere without cannot dont doesnt didnt isnt arent wasnt werent "
    "cant couldnt wont wouldnt shouldnt hasnt havent hadnt aint mustnt neednt".split()
)
# "may" is left out: as a verb it is far more common than the month.
_DATE_WORDS = frozenset(
    "january february march april june july august september october november december monday tuesday wednesday "
    "thursday friday saturday sunday yesterday today tomorrow tonight".split()
)
_STOPWORDS = frozenset(
    "a an the user users s is are was were be been being am to of in on at for and or with by from as that this it "
    "its has have had do does did i me my mine their theirs they them he she his her hers him we our you your "
    "really very".split()
)
_NOT_CONTENT = _STOPWORDS | NEGATIONS


class Normalized(NamedTuple):
    """A named tuple: built for every candidate, and four times cheaper to build than a frozen dataclass."""

    text: str  # the exact-duplicate form
    tokens: tuple[str, ...]  # distinct content tokens in order: what the word-level Jaccard compares
    sig: str  # numbers | date words | negation


def _number(word: str) -> str:
    word = word.replace(",", "") if _THOUSANDS.fullmatch(word) else word
    return (word.lstrip("0") or "0") if word.isdigit() else word


# ASCII text tokenizes by one C-level byte translate and split: apostrophes go, every other non-alphanumeric
# separates.
_ASCII_SEPARATORS = blank_except(string.ascii_letters + string.digits)
_DECIMAL = re.compile(r"\d['`]*[.,]['`]*\d")


def _tokens(text: str) -> list[str]:
    """The same tokens as _TOKEN.findall over the text without apostrophes, four times faster for plain ASCII."""
    if text.isascii() and not _DECIMAL.search(text):
        return text.encode().translate(_ASCII_SEPARATORS, b"'`").decode().split()
    if _HAS_APOSTROPHE.search(text):
        text = text.translate(_APOSTROPHES)
    return _TOKEN.findall(text)


def _words(statement: str, has_digit: bool) -> list[str]:
    text = statement if statement.isascii() else unicodedata.normalize("NFKC", statement)
    words = _tokens(text.casefold())
    if has_digit:
        words = [_number(w) if w[0].isdigit() else w for w in words]
    if _NUMBER_WORDS.keys().isdisjoint(words):
        return words
    return [_NUMBER_WORDS.get(w, w) for w in words]


@lru_cache(maxsize=1 << 12)
def normalize(statement: str) -> Normalized:
    """Cached: a batch and its replays repeat statements, and the result is immutable. 4,096 statements cover a
    batch (a pass is verified, then stored); at 65,536 the cache alone held ~45 MB of a run over one long session
    (tests/bench/bench_one_session.py), growing with the session up to that bound."""
    has_digit = _DIGIT.search(statement) is not None
    words = _words(statement, has_digit)
    text = " ".join(words)
    numbers = sorted({w for w in words if _DIGIT.search(w)}) if has_digit else []
    dates = [] if _DATE_WORDS.isdisjoint(words) else sorted(_DATE_WORDS.intersection(words))
    negated = not NEGATIONS.isdisjoint(words)
    # Plural and third-person -s only: "likes"/"like" and "kids"/"kid" compare equal.
    tokens = tuple(dict.fromkeys([
        w[:-1] if len(w) > 3 and w[-1] == "s" and w[-2] != "s" else w for w in words if w not in _NOT_CONTENT
    ]))
    sig = f"{','.join(numbers)}|{','.join(dates)}|{'neg' if negated else ''}"
    return Normalized(text, tokens, sig)


def polarity_only(sig_a: str, sig_b: str) -> bool:
    """The two signatures agree on numbers and dates and differ in negation: a contradiction, not a new fact."""
    a, b = sig_a.rsplit("|", 1), sig_b.rsplit("|", 1)
    return a[0] == b[0] and a[1] != b[1]


@lru_cache(maxsize=1 << 14)
def slot_part(value: str) -> str:
    """Subjects and attributes are keys, not prose: "Drink preference" and "drink_preference" are one slot."""
    return "_".join(_TOKEN.findall(unicodedata.normalize("NFKC", value).casefold().translate(_APOSTROPHES)))


def _digest(*parts: str) -> str:
    return hashlib.blake2b("\0".join(parts).encode("utf-8"), digest_size=8).hexdigest()


def belief_key(scope: str, normalized_text: str) -> str:
    return f"{KEY_VERSION}:{_digest(scope, normalized_text)}"


@lru_cache(maxsize=1 << 12)
def session_key(session_id: str) -> str:
    return f"s1:{_digest('session', session_id)}"


@lru_cache(maxsize=1 << 12)
def file_key(path: str) -> str:
    return f"f1:{_digest('file', path)}"


def slot_message_key(subject: str, attribute: str, session_id: str, message_id: str) -> str:
    """A forgotten belief's (slot, message) pairs: a reworded re-extraction from the same messages stays forgotten."""
    return f"m1:{_digest('slot-message', subject, attribute, session_id, message_id)}"
