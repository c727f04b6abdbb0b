"""The slot rules, pure: what one statement does to the beliefs that hold its slot (scope, subject, attribute).

A slot holds at most one live, unflagged belief at a time; a later statement about the same slot supersedes it, an
earlier one arriving late is history, and a statement that cannot win is flagged for review. The write path
(store/writes.py) finds the target and the holders, calls `decide`, and applies the `Outcome`; nothing here reads
or writes the database, so the rules are tested from a table (tests/test_decide.py).

Times are compared as (time, belief id), so two statements of the same instant are ordered by id, never by arrival.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from distiller.store.lifecycle import ACTIVE, ARCHIVED, FLAGGED, PROVISIONAL

Count = Literal["inserted", "reinforced", "merged", "superseded", "flagged"]
Event = Literal["superseded_late", "supersedes", "flagged", "revived"]


@dataclass(frozen=True, slots=True)
class Holder:
    """A live, unflagged belief of the slot (provisional or active)."""

    belief_id: str
    last_seen: datetime
    status: str
    confidence: float
    valid_from: str | None


@dataclass(frozen=True, slots=True)
class New:
    """A statement that matched no stored belief: it becomes a new belief `belief_id`."""

    belief_id: str
    latest: datetime  # its newest evidence
    valid_from: str  # given, else its oldest evidence
    explicit: bool
    confidence: float
    strong: bool  # explicit and confident enough to be active from its first mention
    contradicts: str | None = None  # an active belief saying nearly the same with the opposite polarity


@dataclass(frozen=True, slots=True)
class Known:
    """New evidence for a belief already held (matched exactly, or `merged` as a near duplicate)."""

    belief_id: str
    status: str
    newest: datetime  # the newest of the evidence it had not cited yet
    superseded_by: str | None
    supersedes: str | None
    strong: bool
    merged: bool


@dataclass(frozen=True, slots=True)
class Outcome:
    """What to do: the statement's belief gets `status`; `superseded_by` and `valid_to` unless `keep_links`;
    `supersedes` and `conflicts_with` where not None (else they stay as they are). Each belief in `archive` is
    superseded by it, valid to `archive_valid_to`. `event` names the lifecycle event for belief_history (with
    `other`); `count` is the one result counter the statement adds; `holds_slot`: it now holds its slot."""

    status: str
    count: Count
    holds_slot: bool
    superseded_by: str | None = None
    supersedes: str | None = None
    conflicts_with: str | None = None
    valid_to: str | None = None
    keep_links: bool = False
    archive: tuple[str, ...] = ()
    archive_valid_to: str | None = None
    event: Event | None = None
    other: str | None = None


def decide(statement: New | Known, holders: list[Holder]) -> Outcome:
    """The outcome of `statement` against the slot's holders (oldest first by (last_seen, belief_id), the
    statement's own belief not among them; empty for a statement without a slot)."""
    if isinstance(statement, New):
        return _new(statement, holders)
    return _known(statement, holders)


def _new(s: New, holders: list[Holder]) -> Outcome:
    status = ACTIVE if s.strong else PROVISIONAL
    if holders and (s.latest, s.belief_id) < (holders[-1].last_seen, holders[-1].belief_id):
        newest = holders[-1]  # a late arrival: history, not news
        return Outcome(ARCHIVED, "inserted", False, superseded_by=newest.belief_id, valid_to=newest.valid_from,
                       event="superseded_late", other=newest.belief_id)
    if holders and all(h.status == PROVISIONAL or s.explicit or s.confidence >= h.confidence for h in holders):
        return Outcome(status, "superseded", True, supersedes=holders[-1].belief_id,
                       archive=tuple(h.belief_id for h in holders), archive_valid_to=s.valid_from,
                       event="supersedes", other=holders[-1].belief_id)
    if holders or s.contradicts is not None:
        other = holders[-1].belief_id if holders else s.contradicts
        return Outcome(FLAGGED, "flagged", False, conflicts_with=other, event="flagged", other=other)
    return Outcome(status, "inserted", True)


def _known(s: Known, holders: list[Holder]) -> Outcome:
    plain: Count = "merged" if s.merged else "reinforced"
    if s.status != ARCHIVED:
        status = ACTIVE if s.status == PROVISIONAL and s.strong else s.status
        return Outcome(status, plain, False, keep_links=True)
    # Superseded or faded: whichever way the history arrived, new evidence brings it back unless a newer holder
    # has the slot.
    if holders and (s.newest, s.belief_id) <= (holders[-1].last_seen, holders[-1].belief_id):
        newest = holders[-1]
        if s.superseded_by is None:  # faded before its newer holder came: history all the same
            return Outcome(ARCHIVED, "reinforced", False, superseded_by=newest.belief_id,
                           valid_to=newest.valid_from)
        return Outcome(ARCHIVED, "reinforced", False, keep_links=True)
    superseding = bool(holders) or s.superseded_by is not None
    supersedes = holders[-1].belief_id if holders else s.supersedes
    return Outcome(PROVISIONAL, "superseded" if superseding else plain, True, supersedes=supersedes,
                   archive=tuple(h.belief_id for h in holders), archive_valid_to=s.newest.isoformat(),
                   event="revived", other=supersedes)
