"""The slot rules (store/decide.py) from a table: each row one statement against the beliefs holding its slot."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from distiller.store.decide import ACTIVE, ARCHIVED, FLAGGED, PROVISIONAL, Holder, Known, New, Outcome, decide

T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def holder(belief_id: str, hours: float, status: str = ACTIVE, confidence: float = 0.8) -> Holder:
    return Holder(belief_id, at(hours), status, confidence, at(hours - 1).isoformat())


def new(belief_id: str = "n", hours: float = 10, *, explicit: bool = True, confidence: float = 0.8,
        strong: bool = True, contradicts: str | None = None) -> New:
    return New(belief_id, at(hours), at(hours).isoformat(), explicit, confidence, strong, contradicts)


def known(status: str, hours: float = 10, *, belief_id: str = "k", superseded_by: str | None = None,
          supersedes: str | None = None, strong: bool = False, merged: bool = False) -> Known:
    return Known(belief_id, status, at(hours), superseded_by, supersedes, strong, merged)


CASES = [
    # -- a new statement --------------------------------------------------------------------------------------
    ("new, empty slot, strong: active", new(), [], Outcome(ACTIVE, "inserted", True)),
    ("new, empty slot, weak: provisional", new(strong=False, explicit=False, confidence=0.3), [],
     Outcome(PROVISIONAL, "inserted", True)),
    ("new, later than the holder: supersedes it", new(hours=10), [holder("h", 5)],
     Outcome(ACTIVE, "superseded", True, supersedes="h", archive=("h",), archive_valid_to=at(10).isoformat(),
             event="supersedes", other="h")),
    ("new supersedes every holder, naming the newest", new(hours=10), [holder("a", 2), holder("b", 5)],
     Outcome(ACTIVE, "superseded", True, supersedes="b", archive=("a", "b"), archive_valid_to=at(10).isoformat(),
             event="supersedes", other="b")),
    ("new, older than the holder: a late arrival, history", new(hours=3), [holder("h", 5)],
     Outcome(ARCHIVED, "inserted", False, superseded_by="h", valid_to=at(4).isoformat(), event="superseded_late",
             other="h")),
    ("new, the same instant as the holder, lower id: late", new("a", hours=5), [holder("h", 5)],
     Outcome(ARCHIVED, "inserted", False, superseded_by="h", valid_to=at(4).isoformat(), event="superseded_late",
             other="h")),
    ("new, the same instant as the holder, higher id: supersedes", new("z", hours=5), [holder("h", 5)],
     Outcome(ACTIVE, "superseded", True, supersedes="h", archive=("h",), archive_valid_to=at(5).isoformat(),
             event="supersedes", other="h")),
    ("new, implied and less confident than an active holder: flagged",
     new(explicit=False, confidence=0.5, strong=False), [holder("h", 5, confidence=0.9)],
     Outcome(FLAGGED, "flagged", False, conflicts_with="h", event="flagged", other="h")),
    ("new, implied but as confident as the holder: supersedes",
     new(explicit=False, confidence=0.9, strong=False), [holder("h", 5, confidence=0.9)],
     Outcome(PROVISIONAL, "superseded", True, supersedes="h", archive=("h",), archive_valid_to=at(10).isoformat(),
             event="supersedes", other="h")),
    ("new, implied and weak, over a provisional holder: supersedes",
     new(explicit=False, confidence=0.2, strong=False), [holder("h", 5, status=PROVISIONAL, confidence=0.9)],
     Outcome(PROVISIONAL, "superseded", True, supersedes="h", archive=("h",), archive_valid_to=at(10).isoformat(),
             event="supersedes", other="h")),
    ("new, weak, one of two holders active and stronger: flagged against the newest",
     new(explicit=False, confidence=0.5, strong=False),
     [holder("a", 2, confidence=0.9), holder("b", 5, status=PROVISIONAL)],
     Outcome(FLAGGED, "flagged", False, conflicts_with="b", event="flagged", other="b")),
    ("new, no slot holder but contradicts an active belief: flagged", new(contradicts="c"), [],
     Outcome(FLAGGED, "flagged", False, conflicts_with="c", event="flagged", other="c")),
    ("new, superseding wins over a contradiction", new(contradicts="c"), [holder("h", 5)],
     Outcome(ACTIVE, "superseded", True, supersedes="h", archive=("h",), archive_valid_to=at(10).isoformat(),
             event="supersedes", other="h")),
    # -- new evidence for a belief already held ---------------------------------------------------------------
    ("known provisional, weak evidence: reinforced, stays provisional", known(PROVISIONAL), [],
     Outcome(PROVISIONAL, "reinforced", False, keep_links=True)),
    ("known provisional, strong evidence: active", known(PROVISIONAL, strong=True), [],
     Outcome(ACTIVE, "reinforced", False, keep_links=True)),
    ("known active, merged from a near duplicate", known(ACTIVE, merged=True), [],
     Outcome(ACTIVE, "merged", False, keep_links=True)),
    ("known flagged stays flagged however strong", known(FLAGGED, strong=True), [],
     Outcome(FLAGGED, "reinforced", False, keep_links=True)),
    ("archived (faded), empty slot: revived", known(ARCHIVED), [],
     Outcome(PROVISIONAL, "reinforced", True, archive_valid_to=at(10).isoformat(), event="revived")),
    ("archived (faded), merged, empty slot: revived as merged", known(ARCHIVED, merged=True), [],
     Outcome(PROVISIONAL, "merged", True, archive_valid_to=at(10).isoformat(), event="revived")),
    ("archived (superseded), its superseder gone: revived, counted superseded",
     known(ARCHIVED, superseded_by="gone", supersedes="older"), [],
     Outcome(PROVISIONAL, "superseded", True, supersedes="older", archive_valid_to=at(10).isoformat(),
             event="revived", other="older")),
    ("archived, newer than the holder: revived, supersedes it", known(ARCHIVED, hours=10, superseded_by="h"),
     [holder("h", 5)],
     Outcome(PROVISIONAL, "superseded", True, supersedes="h", archive=("h",), archive_valid_to=at(10).isoformat(),
             event="revived", other="h")),
    ("archived (superseded), older than the holder: stays history", known(ARCHIVED, hours=3, superseded_by="h"),
     [holder("h", 5)], Outcome(ARCHIVED, "reinforced", False, keep_links=True)),
    ("archived (faded), older than the holder: history, linked to it", known(ARCHIVED, hours=3), [holder("h", 5)],
     Outcome(ARCHIVED, "reinforced", False, superseded_by="h", valid_to=at(4).isoformat())),
    ("archived, the same instant as the holder, lower id: history", known(ARCHIVED, hours=5, belief_id="a"),
     [holder("h", 5)], Outcome(ARCHIVED, "reinforced", False, superseded_by="h", valid_to=at(4).isoformat())),
    ("archived, the same instant as the holder, higher id: revived", known(ARCHIVED, hours=5, belief_id="z"),
     [holder("h", 5)],
     Outcome(PROVISIONAL, "superseded", True, supersedes="h", archive=("h",), archive_valid_to=at(5).isoformat(),
             event="revived", other="h")),
]


@pytest.mark.parametrize(("statement", "holders", "expected"), [case[1:] for case in CASES],
                         ids=[case[0] for case in CASES])
def test_decide(statement, holders, expected):
    assert decide(statement, holders) == expected


def test_every_case_has_its_own_name():
    assert len({case[0] for case in CASES}) == len(CASES)
