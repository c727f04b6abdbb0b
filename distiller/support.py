"""Does a statement say only what its cited messages say? A real quote can carry a made-up statement, so verify.py
asks cheap questions of every candidate: is the quote more than a fragment, does every number and name of the
statement occur in the cited messages, does the statement share a content word with its quotes, and do at least
half of its content words occur in the cited messages.

Paraphrase is allowed (stems, not exact words), inference is not checked: this catches fabrication, not error.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date
from functools import lru_cache

MIN_QUOTE_WORDS = 3
MIN_BACKED_SHARE = 0.5  # of the statement's content words, the share that must occur in the cited messages

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_SQUASH = re.compile(r"[\W_]+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|[\"“(]\s*)([^\W\d_][\w'’-]*)")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_CALENDAR = frozenset((*_MONTHS, "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))
# Words a statement about the user is made of whatever the user said: they support nothing.
_FUNCTION_WORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before being below between both
but by can could did do does doing down during each few for from further had has have having he her here hers
herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off on once
only or other our ours ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours yourself yourselves user user's users their's they're it's
i'm i've i'd i'll don't doesn't didn't isn't aren't wasn't weren't won't can't cannot really quite still already
likes like loves love enjoys enjoy wants want prefers prefer says said thinks think feels feel has have is was
currently usually often sometimes always never much many lot lots get gets got one
""".split())
_OPENERS = frozenset("""
since as after before when while during every each both all most many some several neither either none one two
three four five later recently currently previously formerly now today yesterday tomorrow lately once already also
besides apart aside according although though despite because if unless until whenever wherever overall generally
usually often sometimes originally initially eventually finally still instead otherwise therefore however like
hey hello hi whats what's yes no yeah well oh ok okay so
""".split())
_SUFFIXES = ("ingly", "ings", "ing", "edly", "ies", "ied", "ed", "es", "er", "ly", "s")


_CONTRACTION = re.compile(r"(?i)['’](?:m|re|ve|ll|d)$|n['’]t$")


def trivial_quote(quote: str) -> bool:
    """Fewer than three words, a contraction counting as the two it stands for ("I'm retired" is "I am retired")."""
    words = _WORD.findall(quote)
    return len(words) + sum(1 for w in words if _CONTRACTION.search(w)) < MIN_QUOTE_WORDS


@lru_cache(maxsize=1 << 16)  # a pure function of one word, asked again for every statement and cited text
def _stem(word: str) -> str:
    word = _bare(word)
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word[:-1] if word.endswith("e") and len(word) > 3 else word  # ride / riding, hike / hiking


def _related(a: str, b: str) -> bool:
    """Same stem, or one a prefix of the other (live / living, allergic / allergy), judged on 4+ characters."""
    if a == b:
        return True
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    return len(short) >= 4 and long.startswith(short[: max(4, len(short) - 1)])


@lru_cache(maxsize=256)  # the cited texts of a message's candidates are the same text again
def content_stems(text: str) -> frozenset[str]:
    return frozenset(_stem(w) for w in _WORD.findall(text) if w.casefold() not in _FUNCTION_WORDS and not w.isdigit())


# Number words count as their digits ("two" supports "2"); "one" does not, being a pronoun as often as a number.
_NUMBER_WORDS = {word: str(n) for n, word in enumerate(
    "zero _ two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split()) if word != "_"}
_NUMBER_WORDS.update({word: str(n) for n, word in zip(range(30, 100, 10),
                                                      "thirty forty fifty sixty seventy eighty ninety".split(),
                                                      strict=True)})
_NUMBER_WORDS.update(dozen="12", hundred="100", thousand="1000", twice="2")


def _numbers(text: str) -> set[str]:
    found = {n.replace(",", "") for n in _NUMBER.findall(text)}
    found.update(_NUMBER_WORDS[w] for w in _bare_words(text) if w in _NUMBER_WORDS)
    return found


def _bare(word: str) -> str:
    word = word.casefold().replace("’", "'")
    return word.removesuffix("'s")


def _bare_words(text: str) -> set[str]:
    return {_bare(w) for w in _WORD.findall(text)}


# A name the statement gives is a name however it is written: "a dog named rex", "goes by kit".
_NAMING = re.compile(r"(?i)\b(?:named|nicknamed|name\s+is|name\s+was|name['’]s|goes\s+by|known\s+as)\s+[\"“'‘]?"
                     r"([^\W\d_][\w'’-]*)")


def _names(statement: str) -> set[str]:
    """Capitalised words, the proper nouns a statement may only repeat; a sentence's first word counts unless it is
    a word that opens sentences anyway ("The user…", "Since…"). Any word given as a name counts too."""
    starts = {m.start(1) for m in _SENTENCE_START.finditer(statement)}
    names = {_bare(m.group(1)) for m in _NAMING.finditer(statement) if m.group(1).casefold() not in _FUNCTION_WORDS}
    for match in _WORD.finditer(statement):
        word = match.group()
        folded = word.casefold()
        if not word[0].isupper() or word == "I" or folded in _CALENDAR:
            continue
        if match.start() in starts and (folded in _FUNCTION_WORDS or folded in _OPENERS):
            continue
        names.add(_bare(word))
    return names


def _years_near(days: Iterable[str | None]) -> set[str]:
    """A relative date resolved against the message ("last month", "next year") may name its year or a neighbour."""
    years = set()
    for day in days:
        if day and day[:4].isdigit():
            year = int(day[:4])
            years.update({str(year - 1), str(year), str(year + 1)})
    if not years:
        year = date.today().year
        years.update({str(year - 1), str(year)})
    return years


def unsupported(statement: str, quotes: Iterable[str], cited_texts: Iterable[str], cited_days: Iterable[str | None],
                known_names: Iterable[str] = ()) -> bool:
    """True when the statement carries a number or a name its cited messages do not, shares no content word with
    its quotes, or has fewer than half of its content words in the cited messages."""
    texts = " \n ".join(cited_texts)
    words = _bare_words(texts) | {_bare(n) for n in known_names}
    if _numbers(statement) - _numbers(texts) - _years_near(cited_days):
        return True
    squashed = _SQUASH.sub("", texts.casefold())  # "Spider-Man" names Spiderman
    if any(name not in words and _SQUASH.sub("", name) not in squashed for name in _names(statement)):
        return True
    quoted = set().union(*(content_stems(q) for q in quotes))
    said = content_stems(statement)
    if not (said & quoted or any(_related(a, b) for a in said for b in quoted)):  # a shared stem is related
        return True
    cited = content_stems(texts)
    backed = sum(a in cited or any(_related(a, b) for b in cited) for a in said)
    return backed < MIN_BACKED_SHARE * len(said)
