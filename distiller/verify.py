"""Deterministic checks of every candidate, whichever extractor produced it (the external `commit` path too).

A candidate becomes a Belief only if its fields are in range and every piece of evidence cites a citable item of
the request with a quote that really occurs in that item's cleaned text. Confidence is then not the model's number
alone: implied evidence counts for less, and independent sessions for more.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import date, datetime

from distiller.extract.base import (
    CATEGORIES,
    DECAY_SENSITIVITIES,
    EVIDENCE_TYPES,
    MAX_STATEMENT_CHARS,
    Candidate,
    Extraction,
)
from distiller.records import Belief, EvidenceItem

IMPLIED_WEIGHT = 0.8
MAX_CONFIDENCE = 0.99
_SLOT = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True, slots=True)
class Source:
    """What verification knows of one request item: its text, whether it may be cited, and its provenance."""

    text: str
    evidence: bool
    provenance: EvidenceItem  # quote left empty; filled from the candidate


@dataclass(frozen=True, slots=True)
class Verified:
    beliefs: tuple[Belief, ...]
    rejected: tuple[tuple[str, int], ...]  # reason -> count, sorted


def normalize(text: str) -> str:
    return " ".join(text.split()).casefold()


def slot_key(text: str) -> str:
    return _SLOT.sub("-", text.casefold()).strip("-")[:64]


def _valid_from(value: object, fallback: str | None) -> str | None:
    """An ISO date or timestamp; otherwise the first evidence's date (never today's)."""
    if isinstance(value, str) and value:
        try:
            return (datetime.fromisoformat(value.replace("Z", "+00:00")) if "T" in value
                    else date.fromisoformat(value)).isoformat()
        except ValueError:
            return None if fallback is None else fallback[:10]
    return None if fallback is None else fallback[:10]


def _schema_problem(candidate: Candidate) -> str | None:
    if not isinstance(candidate.statement, str) or not candidate.statement.strip():
        return "empty-statement"
    if len(candidate.statement) > MAX_STATEMENT_CHARS:
        return "statement-too-long"
    if candidate.category not in CATEGORIES:
        return "bad-category"
    if candidate.evidence_type not in EVIDENCE_TYPES:
        return "bad-evidence-type"
    if candidate.decay_sensitivity not in DECAY_SENSITIVITIES:
        return "bad-decay-sensitivity"
    if not isinstance(candidate.subject, str) or not slot_key(candidate.subject):
        return "bad-slot"
    if not isinstance(candidate.attribute, str) or not slot_key(candidate.attribute):
        return "bad-slot"
    confidence = candidate.confidence
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
        return "bad-confidence"
    importance = candidate.importance
    if isinstance(importance, bool) or not isinstance(importance, int) or not 1 <= importance <= 10:
        return "bad-importance"
    if not candidate.evidence:
        return "no-evidence"
    return None


def combined_confidence(confidence: float, evidence_type: str, sessions: int) -> float:
    """Implied evidence is discounted; each further independent session closes part of the remaining doubt."""
    base = confidence * (IMPLIED_WEIGHT if evidence_type == "implied" else 1.0)
    return round(min(MAX_CONFIDENCE, 1 - (1 - base) ** max(1, sessions)), 4)


def verify(
    extraction: Extraction,
    sources: Mapping[str, Source],
    *,
    extractor: str,
    model: str | None,
    prompt_version: str,
) -> Verified:
    beliefs: list[Belief] = []
    rejected: Counter[str] = Counter()
    for candidate in extraction.candidates:
        problem = _schema_problem(candidate)
        evidence: list[EvidenceItem] = []
        if problem is None:
            for ref in candidate.evidence:
                source = sources.get(ref.item_id)
                if source is None:
                    problem = "unknown-item"
                elif not source.evidence:
                    problem = "context-cited"
                elif not isinstance(ref.quote, str) or not normalize(ref.quote):
                    problem = "empty-quote"
                elif normalize(ref.quote) not in normalize(source.text):
                    problem = "quote-not-found"
                if problem is not None:
                    break
                if all(e.message_id != source.provenance.message_id for e in evidence):
                    evidence.append(replace(source.provenance, quote=ref.quote.strip()))
        if problem is not None:
            rejected[problem] += 1
            continue
        sessions = len({e.session_id for e in evidence})
        first_ts = min((e.ts for e in evidence if e.ts), default=None)
        beliefs.append(
            Belief(
                statement=" ".join(candidate.statement.split()),
                category=candidate.category,
                subject=slot_key(candidate.subject),
                attribute=slot_key(candidate.attribute),
                confidence=combined_confidence(float(candidate.confidence), candidate.evidence_type, sessions),
                evidence_type=candidate.evidence_type,
                importance=candidate.importance,
                decay_sensitivity=candidate.decay_sensitivity,
                valid_from=_valid_from(candidate.valid_from, first_ts),
                scope=f"agent:{evidence[0].agent}",
                evidence=tuple(evidence),
                extractor=extractor,
                model=model,
                prompt_version=prompt_version,
            )
        )
    return Verified(tuple(beliefs), tuple(sorted(rejected.items())))

