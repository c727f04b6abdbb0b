"""The slot rules (store/decide.py) from a table, each row one statement against the beliefs holding its slot; and
generated statements and slots giving the same outcome as the in-line rules decide() replaced."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from distiller.store.decide import (
    ACTIVE,
    ARCHIVED,
    FLAGGED,
    PROVISIONAL,
    Holder,
    Known,
    New,
    Outcome,
    decide,
)

T0 = datetime(2026, 3, 1, tzinfo=UTC)


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


# -- the same outcomes as the rules they replaced ------------------------------------------------------------------
# The reference below is the write path's in-line slot logic before decide() existed (_Upsert._insert and the
# archived branch of _Upsert._reinforce), kept as it was, over mutable beliefs; the property applies decide()'s
# outcome the way writes._apply does and compares every belief's status, links, the events and the count.

@dataclass
class Belief:
    belief_id: str
    status: str
    last_seen: datetime
    confidence: float
    valid_from: str | None
    superseded_by: str | None = None
    supersedes: str | None = None
    conflicts_with: str | None = None
    valid_to: str | None = None


class Reference:
    def __init__(self, holders: list[Belief]):
        self.held = {h.belief_id: h for h in holders}
        self.slot = {h.belief_id for h in holders}
        self.events: list[tuple[str, str, str | None]] = []
        self.counts: list[str] = []

    def holders(self, excluding: str | None = None) -> list[Belief]:
        return sorted((self.held[i] for i in self.slot if i != excluding), key=lambda h: (h.last_seen, h.belief_id))

    def supersede(self, old: Belief, new: Belief, valid_to: str | None) -> None:
        old.superseded_by, old.valid_to, old.status = new.belief_id, valid_to, ARCHIVED
        self.slot.discard(old.belief_id)
        self.events.append((old.belief_id, "superseded", new.belief_id))

    def insert(self, s: New) -> Belief:  # the old _Upsert._insert
        new = Belief(s.belief_id, ACTIVE if s.strong else PROVISIONAL, s.latest, s.confidence, s.valid_from)
        self.held[new.belief_id] = new
        holders = self.holders()
        outcome, other = "inserted", None
        if holders and (s.latest, s.belief_id) < (holders[-1].last_seen, holders[-1].belief_id):
            newest = holders[-1]
            new.status, new.superseded_by, new.valid_to = ARCHIVED, newest.belief_id, newest.valid_from
            other = newest.belief_id
        elif holders and all(h.status == PROVISIONAL or s.explicit or s.confidence >= h.confidence for h in holders):
            new.supersedes = other = holders[-1].belief_id
            for holder in holders:
                self.supersede(holder, new, s.valid_from)
            outcome = "superseded"
        elif holders or s.contradicts is not None:
            new.status, outcome = FLAGGED, "flagged"
            new.conflicts_with = other = holders[-1].belief_id if holders else s.contradicts
        if new.status not in (ARCHIVED, FLAGGED):
            self.slot.add(new.belief_id)
        if other is not None:
            self.events.append((new.belief_id, {"inserted": "superseded_late", "superseded": "supersedes",
                                                "flagged": "flagged"}[outcome], other))
        self.counts.append(outcome)
        return new

    def reinforce(self, s: Known, target: Belief) -> None:  # the old _Upsert._reinforce, after the evidence
        merged, newest = s.merged, s.newest
        if target.status == ARCHIVED:
            holders = self.holders(excluding=target.belief_id)
            if holders and (newest, target.belief_id) <= (holders[-1].last_seen, holders[-1].belief_id):
                if target.superseded_by is None:
                    target.superseded_by, target.valid_to = holders[-1].belief_id, holders[-1].valid_from
                self.counts.append("reinforced")
                return
            superseding = bool(holders) or target.superseded_by is not None
            target.superseded_by, target.valid_to, target.status = None, None, PROVISIONAL
            if holders:
                target.supersedes = holders[-1].belief_id
            for holder in holders:
                self.supersede(holder, target, newest.isoformat())
            self.slot.add(target.belief_id)
            self.events.append((target.belief_id, "revived", target.supersedes))
            self.counts.append("superseded" if superseding else "merged" if merged else "reinforced")
            return
        if target.status == PROVISIONAL and s.strong:
            target.status = ACTIVE
        self.counts.append("merged" if merged else "reinforced")


def applied(model: Reference, target: Belief, outcome: Outcome) -> None:
    """decide()'s outcome carried out as writes._Upsert._apply does."""
    target.status = outcome.status
    if not outcome.keep_links:
        target.superseded_by, target.valid_to = outcome.superseded_by, outcome.valid_to
    if outcome.supersedes is not None:
        target.supersedes = outcome.supersedes
    if outcome.conflicts_with is not None:
        target.conflicts_with = outcome.conflicts_with
    for holder_id in outcome.archive:
        model.supersede(model.held[holder_id], target, outcome.archive_valid_to)
    if outcome.holds_slot:
        model.slot.add(target.belief_id)
    if outcome.event is not None:
        model.events.append((target.belief_id, outcome.event, outcome.other))
    model.counts.append(outcome.count)


def state(model: Reference) -> tuple[object, ...]:
    return (sorted(vars(b).items() for b in model.held.values()), sorted(model.slot), model.events, model.counts)


ids = st.sampled_from("abcdefgh")
hours = st.integers(0, 6)  # few instants: ties in time are common
confidence = st.sampled_from([0.3, 0.75, 0.9])
holders_st = st.lists(st.builds(lambda i, h, s, c: Belief(i, s, at(h), c, at(h - 1).isoformat()), ids, hours,
                                st.sampled_from([PROVISIONAL, ACTIVE]), confidence),
                      max_size=3, unique_by=lambda b: b.belief_id)


@hypothesis_settings(max_examples=300, deadline=None)
@given(holders=holders_st, belief_id=ids, when=hours, explicit=st.booleans(), conf=confidence, strong=st.booleans(),
       contradicts=st.one_of(st.none(), ids))
def test_decide_for_a_new_statement_equals_the_rules_it_replaced(holders, belief_id, when, explicit, conf, strong,
                                                                 contradicts):
    holders = [h for h in holders if h.belief_id != belief_id]
    statement = New(belief_id, at(when), at(when).isoformat(), explicit, conf, strong, contradicts)
    old, new = Reference([Belief(**vars(h)) for h in holders]), Reference([Belief(**vars(h)) for h in holders])
    old.insert(statement)
    target = Belief(belief_id, PROVISIONAL, at(when), conf, statement.valid_from)
    new.held[belief_id] = target
    applied(new, target, decide(statement, [Holder(h.belief_id, h.last_seen, h.status, h.confidence, h.valid_from)
                                            for h in new.holders()]))
    assert state(new) == state(old)


@hypothesis_settings(max_examples=300, deadline=None)
@given(holders=holders_st, belief_id=ids, when=hours, status=st.sampled_from([PROVISIONAL, ACTIVE, ARCHIVED, FLAGGED]),
       superseded_by=st.one_of(st.none(), ids), supersedes=st.one_of(st.none(), ids), strong=st.booleans(),
       merged=st.booleans())
def test_decide_for_new_evidence_of_a_known_belief_equals_the_rules_it_replaced(holders, belief_id, when, status,
                                                                                superseded_by, supersedes, strong,
                                                                                merged):
    holders = [h for h in holders if h.belief_id != belief_id]
    target = Belief(belief_id, status, at(when), 0.8, at(0).isoformat(), superseded_by, supersedes)
    old, new = Reference([Belief(**vars(h)) for h in holders]), Reference([Belief(**vars(h)) for h in holders])
    old.held[belief_id], new.held[belief_id] = Belief(**vars(target)), Belief(**vars(target))
    statement = Known(belief_id, status, at(when), superseded_by, supersedes, strong, merged)
    old.reinforce(statement, old.held[belief_id])
    slot_holders = new.holders(excluding=belief_id) if status == ARCHIVED else []
    applied(new, new.held[belief_id], decide(statement, [
        Holder(h.belief_id, h.last_seen, h.status, h.confidence, h.valid_from) for h in slot_holders]))
    assert state(new) == state(old)
