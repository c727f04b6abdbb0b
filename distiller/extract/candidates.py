"""The extractor contract's candidate JSON, parsed in one place: a model's reply and an external agent's beliefs
file alike. Values are kept as given for verify.py to judge; only their types are coerced."""

from __future__ import annotations

from typing import Any

import orjson

from distiller.extract.base import BadRequest, Candidate, EvidenceRef


def parse_candidates(text: str) -> tuple[Candidate, ...]:
    """Parse the JSON object the schema asks for. Values are kept as given for verify.py to judge; only their
    types are coerced, and entries that are not objects are skipped."""
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise BadRequest("the reply is not valid JSON") from None
    if not isinstance(data, dict) or not isinstance(data.get("candidates"), list):
        raise BadRequest("the reply is not an object with a candidates list")
    return tuple(candidate(entry) for entry in data["candidates"] if isinstance(entry, dict))


def candidate(entry: dict[str, Any]) -> Candidate:
    """One candidate object (an `evidence` object alone counts as a list of one)."""
    evidence = entry.get("evidence")
    if isinstance(evidence, dict):
        evidence = [evidence]
    refs = tuple(
        EvidenceRef(item_id=_text(ref.get("item_id")), quote=_text(ref.get("quote")))
        for ref in (evidence if isinstance(evidence, list) else ())
        if isinstance(ref, dict)
    )
    return Candidate(
        statement=_text(entry.get("statement")),
        category=_text(entry.get("category")),
        subject=_text(entry.get("subject")),
        attribute=_text(entry.get("attribute")),
        confidence=_number(entry.get("confidence")),
        evidence_type=_text(entry.get("evidence_type")),
        importance=_integer(entry.get("importance")),
        decay_sensitivity=_text(entry.get("decay_sensitivity")),
        valid_from=_text(entry.get("valid_from")) or None,
        evidence=refs,
    )


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "" if value is None else orjson.dumps(value).decode()


def _number(value: Any) -> float:
    """A float, or NaN when the value is not a number: NaN fails every range check downstream."""
    if isinstance(value, bool):
        return float("nan")
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def _integer(value: Any) -> int:
    """An int; a fractional or non-numeric value becomes 0, outside the 1-10 range verify.py enforces."""
    number = _number(value)
    return int(number) if number.is_integer() else 0
