"""Deterministic checks of every candidate, whichever extractor produced it (the external `commit` path too).

A candidate becomes a Belief only if its fields are in range, every piece of evidence cites a citable item of the
very request that produced it (one agent's request cannot vouch for another agent's message) with a quote of a few
words that really occurs in that item's cleaned text, and the statement says nothing its cited items do not (see
support.py). A reply is held to the prompt's caps, and what is stored carries no control characters or markup.
Confidence is then not the model's number alone: implied evidence counts for less; the store adds independent
sessions.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta

from distiller.extract.base import (
    CATEGORIES,
    DECAY_SENSITIVITIES,
    EVIDENCE_TYPES,
    MAX_CANDIDATES,
    MAX_PER_ITEM,
    MAX_STATEMENT_CHARS,
    Candidate,
    Extraction,
)
from distiller.records import Belief, EvidenceItem
from distiller.storable import has_markup, strip_controls
from distiller.support import trivial_quote, unsupported
from distiller.textscan import fold

IMPLIED_WEIGHT = 0.8
MAX_CONFIDENCE = 0.99
EARLIEST_VALID_FROM = date(1900, 1, 1)
_SLOT = re.compile(r"[^a-z0-9]+")
log = logging.getLogger("distiller")
_STATED_NAME = re.compile(r"\b(?:[Mm]y name is|I'm|I am|[Cc]all me|[Tt]his is)\s+([A-Z][\w'-]+)")


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
    sanitized: tuple[tuple[str, int], ...] = ()  # what was removed from stored beliefs -> count, sorted


def slot_key(text: str) -> str:
    """A subject or attribute as the store keys it, decided here once: ASCII letters and digits in runs joined by
    "_" ("Preferred editor" and "preferred-editor" are the slot `preferred_editor`), at most 64 characters."""
    return _SLOT.sub("_", text.casefold()).strip("_")[:64].rstrip("_")


def _day(ts: str | None) -> date | None:
    try:
        return date.fromisoformat(ts[:10]) if ts else None
    except ValueError:
        return None


def _valid_from(value: object, first_ts: str | None, last_ts: str | None) -> tuple[str | None, bool]:
    """An ISO date or timestamp from 1900 to the day after the latest cited message; otherwise the first evidence's
    date (never today's). The flag says an out-of-range date was replaced."""
    fallback = None if first_ts is None else first_ts[:10]
    if not isinstance(value, str) or not value:
        return fallback, False
    try:
        parsed = (datetime.fromisoformat(value) if "T" in value
                  else date.fromisoformat(value))
    except ValueError:
        return fallback, False
    day = parsed.date() if isinstance(parsed, datetime) else parsed
    latest = (_day(last_ts) or date.today()) + timedelta(days=1)
    if not EARLIEST_VALID_FROM <= day <= latest:
        return fallback, True
    return parsed.isoformat(), False


def known_names(sources: Collection[Source]) -> set[str]:
    """Names the user gave in the request ("I'm Dana"): a statement may name the user even where a quote does not."""
    return {name for source in sources if source.evidence for name in _STATED_NAME.findall(source.text)}


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


def evidence_confidence(confidence: float, evidence_type: str) -> float:
    """Implied evidence is discounted. Independent sessions are combined by the store alone, over all of a belief's
    evidence: combining them here too would count them twice, and make a belief's confidence depend on whether
    its sessions arrived in one batch or in several."""
    return round(min(MAX_CONFIDENCE, confidence * (IMPLIED_WEIGHT if evidence_type == "implied" else 1.0)), 4)


def _evidence_problem(candidate: Candidate, sources: Mapping[str, Source], scope: Collection[str] | None,
                      evidence: list[EvidenceItem]) -> str | None:
    """Why the candidate's evidence fails, or None; the provenance of each cited message goes into `evidence`."""
    for ref in candidate.evidence:
        source = sources.get(ref.item_id)
        if source is None:
            return "unknown-item"
        if scope is not None and ref.item_id not in scope:
            return "other-request"
        if not source.evidence:
            return "context-cited"
        if not isinstance(ref.quote, str) or not fold(ref.quote):
            return "empty-quote"
        text = fold(source.text)
        if fold(ref.quote) not in text and fold(strip_controls(ref.quote)[0]) not in text:
            return "quote-not-found"
        if trivial_quote(ref.quote):
            return "trivial-quote"
        if has_markup(ref.quote):
            return "markup"
        if evidence and evidence[0].agent != source.provenance.agent:
            return "mixed-scope"
        if all(e.message_id != source.provenance.message_id for e in evidence):
            evidence.append(replace(source.provenance, quote=strip_controls(ref.quote.strip())[0]))
    return None


def verify(
    extraction: Extraction,
    sources: Mapping[str, Source],
    *,
    extractor: str,
    model: str | None,
    prompt_version: str,
    scope: Collection[str] | None = None,
) -> Verified:
    """Check the candidates of one extraction. `scope` is the item ids of the request that produced it (None: any
    item of `sources`).

    Two caps bound what a flood costs and stores, each cut counted by reason and logged (-v) with the message it
    concerns: MAX_CANDIDATES per evidence item in scope (`over-candidate-cap`: a model's request over it is split
    and asked again before it gets here, see pipeline/distill.py, so only a single item's overflow is ever cut),
    and MAX_PER_ITEM beliefs citing one item (`over-item-cap`)."""
    beliefs: list[Belief] = []
    rejected: Counter[str] = Counter()
    sanitized: Counter[str] = Counter()
    per_item: Counter[str] = Counter()
    in_scope = [s for item_id, s in sources.items() if scope is None or item_id in scope]
    names = known_names(in_scope)
    cap = MAX_CANDIDATES * max(1, sum(s.evidence for s in in_scope))
    cut: Counter[str] = Counter()
    for index, candidate in enumerate(extraction.candidates):
        if index >= cap:
            rejected["over-candidate-cap"] += 1
            cut[_cited_message(candidate, sources)] += 1
            continue
        problem = _schema_problem(candidate)
        evidence: list[EvidenceItem] = []
        statement = ""
        if problem is None:
            problem = _evidence_problem(candidate, sources, scope, evidence)
        if problem is None:
            statement, stripped = strip_controls(" ".join(candidate.statement.split()))
            if stripped or any(strip_controls(ref.quote)[1] for ref in candidate.evidence):
                sanitized["control-chars"] += 1
            cited = [sources[ref.item_id] for ref in candidate.evidence]
            if has_markup(statement):
                problem = "markup"
            elif unsupported(statement, [ref.quote for ref in candidate.evidence], [s.text for s in cited],
                             [s.provenance.ts for s in cited], names):
                problem = "unsupported-statement"
            elif any(per_item[ref.item_id] >= MAX_PER_ITEM for ref in candidate.evidence):
                problem = "over-item-cap"
                cut[_cited_message(candidate, sources)] += 1
        if problem is not None:
            rejected[problem] += 1
            continue
        per_item.update({ref.item_id for ref in candidate.evidence})
        stamps = sorted(e.ts for e in evidence if e.ts)
        valid_from, replaced = _valid_from(candidate.valid_from, stamps[0] if stamps else None,
                                           stamps[-1] if stamps else None)
        if replaced:
            sanitized["valid-from-out-of-range"] += 1
        beliefs.append(
            Belief(
                statement=statement,
                category=candidate.category,
                subject=slot_key(candidate.subject),
                attribute=slot_key(candidate.attribute),
                confidence=evidence_confidence(float(candidate.confidence), candidate.evidence_type),
                evidence_type=candidate.evidence_type,
                importance=candidate.importance,
                decay_sensitivity=candidate.decay_sensitivity,
                valid_from=valid_from,
                scope=f"agent:{evidence[0].agent}",
                evidence=tuple(evidence),
                extractor=extractor,
                model=model,
                prompt_version=prompt_version,
            )
        )
    for message_id, count in cut.items():
        log.info("request %s: %d candidate(s) citing message %s cut by a cap", extraction.request_id, count,
                 message_id)
    return Verified(tuple(beliefs), tuple(sorted(rejected.items())), tuple(sorted(sanitized.items())))


def _cited_message(candidate: Candidate, sources: Mapping[str, Source]) -> str:
    """The message a candidate cites first, for the log of what a cap cut."""
    source = sources.get(candidate.evidence[0].item_id) if candidate.evidence else None
    return source.provenance.message_id if source is not None else "(none)"
