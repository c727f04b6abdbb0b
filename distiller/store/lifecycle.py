"""A belief's lifecycle: its statuses, the aggregates its status is computed from (counts, combined confidence,
first/last seen, ACT-R activation), fading, and the history of lifecycle events.

Statuses: `provisional` (seen once, not confidently), `active` (explicit and confident, or seen in two sessions),
`archived` (superseded in its slot, or faded: activation below the floor) and `flagged_for_review` (contradicts a
belief it could not supersede). Which belief holds a slot is decided by store/decide.py; what the evidence says
about a belief's strength, here, from the evidence rows themselves, so replays and forgetting are exact.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

import duckdb

from distiller.store import clock
from distiller.store.activation import (
    ACTIVATION_SQL,
    DECAY_TERM,
    activation_params,
    clock_join,
)
from distiller.store.bulk import pack, rows
from distiller.store.settings import StoreSettings

PROVISIONAL, ACTIVE, ARCHIVED, FLAGGED = "provisional", "active", "archived", "flagged_for_review"
STATUSES = (PROVISIONAL, ACTIVE, ARCHIVED, FLAGGED)


def aggregates(ev: str) -> str:
    """Per belief, from evidence rows `ev` (with the belief's decay_sensitivity): counts, first/last seen, activation
    and combined confidence, in one pass per session and one per belief.

    Confidence: the best session's confidence, with each further session closing part of the remaining gap
    (1 - (1 - c_max) · Π(1 - w·c_s)), so more independent sessions mean higher, never above 1.
    """
    return f"""(
        SELECT belief_id, count(*) AS sessions, sum(n) AS n, min(first_seen) AS first_seen,
               max(last_seen) AS last_seen, bool_or(explicit) AS explicit, ln(sum(decayed)) AS activation,
               1 - (1 - max(c)) * exp(sum(ln(1 - least($weight * c, 0.99)))
                                      - ln(1 - least($weight * max(c), 0.99))) AS confidence
        FROM (
            SELECT e.belief_id, max(e.confidence) AS c, count(*) AS n, min(e.ts) AS first_seen,
                   max(e.ts) AS last_seen, bool_or(e.explicit) AS explicit,
                   sum({DECAY_TERM.format(decay='e.decay_sensitivity')}) AS decayed
            FROM {ev} e {clock.join("e.scope")} GROUP BY e.belief_id, e.session_id
        ) GROUP BY belief_id
    )"""


def status_sql(row: str, a: str) -> str:
    """The status from the aggregates `a` and the row's own supersession and flag."""
    return f"""CASE
        WHEN {row}.superseded_by IS NOT NULL THEN 'archived'
        WHEN {row}.status = 'flagged_for_review' THEN {row}.status
        WHEN {a}.activation < $floor THEN 'archived'
        WHEN ({a}.explicit AND {a}.confidence >= $active) OR {a}.sessions >= 2 THEN 'active'
        ELSE 'provisional' END"""


def set_aggregates(a: str) -> str:
    return (f"confidence = {a}.confidence, evidence_type = CASE WHEN {a}.explicit THEN 'explicit' ELSE 'implied' END, "
            f"evidence_count = {a}.n, sessions = {a}.sessions, first_seen = {a}.first_seen, last_seen = {a}.last_seen")


def aggregate_params(settings: StoreSettings, now: datetime) -> dict[str, object]:
    """The parameters aggregates() and status_sql() read."""
    return {"floor": settings.activation_floor, "active": settings.active_confidence,
            "weight": settings.independent_weight, **activation_params(settings, now)}


_IDS = rows({"belief_id": "VARCHAR"})


def recompute(con: duckdb.DuckDBPyConnection, ids: Iterable[str], settings: StoreSettings, now: datetime) -> None:
    """Counts, combined confidence, first/last seen, activation and status of these beliefs, from their evidence."""
    ids = list(dict.fromkeys(ids))
    if not ids:
        return
    evidence = (f"(SELECT e.*, b.decay_sensitivity, b.scope FROM evidence e JOIN beliefs b USING (belief_id) "
                f"SEMI JOIN {_IDS} i USING (belief_id))")
    con.execute(
        f"""
        UPDATE beliefs SET {set_aggregates("a")}, status = {status_sql("beliefs", "a")}, updated_at = $now
        FROM {aggregates(evidence)} a
        WHERE beliefs.belief_id = a.belief_id
        """,
        {"rows": pack(belief_id=ids), **aggregate_params(settings, now)},
    )


def fade(con: duckdb.DuckDBPyConnection, *, settings: StoreSettings | None = None, now: datetime | None = None,
         run_id: str = "fade") -> int:
    """Archive live beliefs whose activation fell below the floor; once per run is enough (it scans all evidence)."""
    settings = settings or StoreSettings()
    now = now or datetime.now(UTC)
    faded = con.execute(
        f"""
        UPDATE beliefs SET status = 'archived', updated_at = $now
        FROM (SELECT e.belief_id, {ACTIVATION_SQL} AS activation
              FROM evidence e JOIN beliefs b USING (belief_id) {clock_join()}
              WHERE b.status IN ('provisional', 'active') GROUP BY e.belief_id) a
        WHERE beliefs.belief_id = a.belief_id AND a.activation < $floor
        RETURNING beliefs.belief_id
        """,
        {"floor": settings.activation_floor, **activation_params(settings, now)},
    ).fetchall()
    ids = [row[0] for row in faded]
    history(con, [(i, "faded", None) for i in ids], run_id, now)
    return len(ids)


def history(con: duckdb.DuckDBPyConnection, events: list[tuple[str, str, str | None]], run_id: str,
            now: datetime) -> None:
    """Lifecycle events as (belief_id, event, other_id): superseded, revived, flagged, faded.

    Reinforcements need no row here: each evidence row records its run, time and wording."""
    if events:
        con.execute(
            f"INSERT INTO belief_history SELECT belief_id, $now, event, $run_id, other_id FROM {rows(_EVENT)}",
            {"rows": pack(belief_id=[e[0] for e in events], event=[e[1] for e in events],
                          other_id=[e[2] for e in events]), "now": now, "run_id": run_id},
        )


_EVENT = {"belief_id": "VARCHAR", "event": "VARCHAR", "other_id": "VARCHAR"}
