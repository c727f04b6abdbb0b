"""English search terms for recall: lower-cased words, stop words out, Porter-stemmed. Pure and dependency-free.

The store keeps each belief's terms in `belief_terms` (store/terms.py) and recall ranks them by BM25 in SQL, so a
prompt "where do I live?" meets "The user lives in Lisbon" through the stem `live`. The stemmer is Porter's (1980)
algorithm as published, written here rather than pulled in: it is 1 % of a heavier dependency's size and recall
needs nothing more. Changing it changes the stored terms: a migration must then rebuild them (store/terms.py).

Shingles (word n-grams without stemming) are what the echo screen compares messages to stored statements by.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")

# Function words that carry no topic; a query of only these matches nothing rather than everything. "user" is here
# because nearly every statement says "The user …" (it would weigh nothing in BM25 anyway); negations stay in.
STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her here
    hers herself him himself his how i if in into is it its itself just me more most my myself of off on once only
    or other our ours ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours yourself yourselves user users s t ll d m re ve""".split()
)


def words(text: str) -> list[str]:
    """Lower-cased words of `text`, apostrophes inside a word dropped ("don't" → "dont"), in order."""
    return [w.replace("'", "").replace("’", "") for w in _WORD.findall(text.lower())]


def word_spans(text: str) -> list[tuple[str, int, int]]:
    """words() with each word's start and end offset in `text` (the same words, in the same order)."""
    return [(m.group().lower().replace("'", "").replace("’", ""), m.start(), m.end()) for m in _WORD.finditer(text)]


def terms(text: str) -> Counter[str]:
    """The search terms of a text and how often each occurs: stemmed words that are not stop words."""
    return Counter(stem(w) for w in words(text) if w not in STOP_WORDS)


# -- Porter's stemmer -------------------------------------------------------------------------------------------

_VOWELS = frozenset("aeiou")


def _consonant(word: str, i: int) -> bool:
    ch = word[i]
    if ch in _VOWELS:
        return False
    if ch == "y":
        return i == 0 or not _consonant(word, i - 1)
    return True


def _measure(stem_: str) -> int:
    """m in [C](VC)^m[V]."""
    m, prev_vowel = 0, False
    for i in range(len(stem_)):
        vowel = not _consonant(stem_, i)
        if prev_vowel and not vowel:
            m += 1
        prev_vowel = vowel
    return m


def _has_vowel(stem_: str) -> bool:
    return any(not _consonant(stem_, i) for i in range(len(stem_)))


def _double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _consonant(word, len(word) - 1)


def _cvc(word: str) -> bool:
    return (len(word) >= 3 and _consonant(word, len(word) - 3) and not _consonant(word, len(word) - 2)
            and _consonant(word, len(word) - 1) and word[-1] not in "wxy")


def _replace(word: str, rules: tuple[tuple[str, str], ...], min_measure: int) -> str:
    for suffix, replacement in rules:
        if word.endswith(suffix):
            stem_ = word[: len(word) - len(suffix)]
            return stem_ + replacement if _measure(stem_) > min_measure else word
    return word


_STEP2 = (("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"),
          ("abli", "able"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"), ("ization", "ize"),
          ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"), ("fulness", "ful"),
          ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"))
_STEP3 = (("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""),
          ("ness", ""))
_STEP4 = ("al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou", "ism", "ate",
          "iti", "ous", "ive", "ize")


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """Porter's stem of a lower-case word ("lives" → "live", "running" → "run", "hiking" → "hike")."""
    if len(word) <= 2 or not word.isalpha():
        return word
    # Step 1a
    if word.endswith(("sses", "ies")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    # Step 1b
    if word.endswith("eed"):
        if _measure(word[:-3]) > 0:
            word = word[:-1]
    else:
        for suffix in ("ed", "ing"):
            if word.endswith(suffix) and _has_vowel(word[: -len(suffix)]):
                word = word[: -len(suffix)]
                if word.endswith(("at", "bl", "iz")):
                    word += "e"
                elif _double_consonant(word) and word[-1] not in "lsz":
                    word = word[:-1]
                elif _measure(word) == 1 and _cvc(word):
                    word += "e"
                break
    # Step 1c
    if word.endswith("y") and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    word = _replace(word, _STEP2, 0)
    word = _replace(word, _STEP3, 0)
    # Step 4
    for suffix in _STEP4:
        if word.endswith(suffix):
            stem_ = word[: -len(suffix)]
            if _measure(stem_) > 1 and (suffix != "ion" or stem_.endswith(("s", "t"))):
                word = stem_
            break
    # Step 5
    if word.endswith("e"):
        stem_ = word[:-1]
        m = _measure(stem_)
        if m > 1 or (m == 1 and not _cvc(stem_)):
            word = stem_
    if _measure(word) > 1 and _double_consonant(word) and word.endswith("l"):
        word = word[:-1]
    return word
