"""What a recall is made of, apart from how it is read (SQL in select.py, a snapshot in snapshot.py): the tiers,
their rules, the lines, and the dedupe across tiers. Imports nothing heavy: the hook's fast path uses it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

TIERS = ("core", "active", "recalled")
LIVE = ("active", "provisional")
CORE_CATEGORIES = ("identity", "goal", "preference")
CORE_CONFIDENCE = 0.7
BM25_K1, BM25_B = 1.2, 0.75
QUOTE_WEIGHT = 0.5  # a quote's term counts half a statement's: the statement is what the belief says
SCORE_DECIMALS = 9  # BM25 scores are ordered rounded to this: SQL and Python sum a score's terms in any order


# A line found before the dedupe, as select.py's query gives it: (tier, belief_id, category, statement, confidence,
# score, rank within its tier).
Found = tuple[str, str, str, str, float, float, int]


@dataclass(frozen=True, slots=True)
class Limits:
    core: int = 10
    active: int = 5
    recalled: int = 5


@dataclass(frozen=True, slots=True)
class Evidence:
    session_id: str
    message_id: str


@dataclass(frozen=True, slots=True)
class Line:
    """One recalled belief. `score`: confidence for core, activation for active, BM25 for recalled."""

    belief_id: str
    tier: str
    category: str
    statement: str
    confidence: float
    score: float
    evidence: tuple[Evidence, ...]


def dedupe(found: Sequence[Found], limits: Limits, normalized: Mapping[str, str] | None = None) -> list[Found]:
    """In tier order, each tier in its own rank order (UNION ALL returns rows in any order). Two lines say the
    same when their statements normalise alike (store/keys.py; `normalized`: by belief id, when known)."""
    if normalized is None:
        from distiller.store.keys import normalize

        normalized = {row[1]: normalize(row[3]).text for row in found}
    ordered = sorted(found, key=lambda row: (TIERS.index(row[0]), row[6]))
    seen_ids: set[str] = set()
    seen_texts: set[str] = set()
    taken = dict.fromkeys(TIERS, 0)
    chosen = []
    for row in ordered:
        tier, belief_id, text = row[0], row[1], normalized[row[1]]
        if taken[tier] == getattr(limits, tier) or belief_id in seen_ids or text in seen_texts:
            continue
        seen_ids.add(belief_id)
        seen_texts.add(text)
        chosen.append(row)
        taken[tier] += 1
    return chosen
