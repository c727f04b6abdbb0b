"""Read queries over beliefs: list, search, one belief with its evidence, slot history, counts, export rows."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import duckdb

from distiller.errors import DistillError
from distiller.store import scalars
from distiller.store.activation import activation_params, activation_sql, clock_join
from distiller.store.bulk import pack, rows
from distiller.store.settings import StoreSettings
from distiller.store.writes import StoredBelief, StoredEvidence

SORTS = {"activation": "activation DESC NULLS LAST", "confidence": "b.confidence DESC", "recent": "b.last_seen DESC"}


@dataclass(frozen=True, slots=True)
class BeliefRow:
    id: str
    statement: str
    category: str
    status: str
    scope: str
    subject: str
    attribute: str
    confidence: float
    activation: float | None
    evidence_type: str
    importance: int
    decay_sensitivity: str
    evidence_count: int
    sessions: int
    first_seen: str
    last_seen: str
    valid_from: str | None
    valid_to: str | None
    superseded_by: str | None
    supersedes: str | None
    conflicts_with: str | None


@dataclass(frozen=True, slots=True)
class EvidenceRow:
    belief_id: str
    item: StoredEvidence


@dataclass(frozen=True, slots=True)
class HistoryEvent:
    belief_id: str
    at: str
    event: str
    run: str
    other_id: str | None


@dataclass(frozen=True, slots=True)
class Filters:
    category: str | None = None
    status: str | None = None  # None: every status but archived; "all": every status
    scope: str | None = None
    agent: str | None = None  # beliefs with evidence from this agent
    since: datetime | None = None  # last seen at or after
    text: str | None = None  # every word must appear in the statement, subject or attribute
    limit: int | None = 50
    sort: str = "activation"
    learned_since: datetime | None = None  # created in the store at or after (system time, not transcript time)


_ROW = f"""
    SELECT b.belief_id, b.statement, b.category, b.status, b.scope, b.subject, b.attribute, b.confidence,
           a.activation, b.evidence_type, b.importance, b.decay_sensitivity, b.evidence_count, b.sessions,
           strftime(b.first_seen, '%Y-%m-%dT%H:%M:%SZ'), strftime(b.last_seen, '%Y-%m-%dT%H:%M:%SZ'), b.valid_from,
           b.valid_to, b.superseded_by, b.supersedes, b.conflicts_with
    FROM beliefs b
    LEFT JOIN (SELECT e.belief_id, {activation_sql()} AS activation
               FROM evidence e JOIN beliefs b USING (belief_id) {clock_join()} GROUP BY e.belief_id) a USING (belief_id)
"""


def _params(settings: StoreSettings, now: datetime) -> dict[str, datetime | float]:
    return activation_params(settings, now)


def _where(filters: Filters) -> tuple[str, dict[str, object]]:
    """The filters as a WHERE clause (empty when none) and its parameters."""
    where: list[str] = []
    params: dict[str, object] = {}
    if filters.status is None:
        where.append("b.status <> 'archived'")
    elif filters.status != "all":
        where.append("b.status = $status")
        params["status"] = filters.status
    for name in ("category", "scope"):
        if getattr(filters, name):
            where.append(f"b.{name} = ${name}")
            params[name] = getattr(filters, name)
    if filters.agent:
        where.append("b.belief_id IN (SELECT belief_id FROM evidence WHERE agent = $agent)")
        params["agent"] = filters.agent
    if filters.since:
        where.append("b.last_seen >= $since")
        params["since"] = filters.since
    if filters.learned_since:
        where.append("b.created_at >= $learned_since")
        params["learned_since"] = filters.learned_since
    for n, word in enumerate((filters.text or "").split()):
        where.append(f"(b.statement ILIKE $w{n} OR b.subject ILIKE $w{n} OR b.attribute ILIKE $w{n})")
        params[f"w{n}"] = f"%{word}%"
    return (" WHERE " + " AND ".join(where) if where else ""), params


def count(con: duckdb.DuckDBPyConnection, filters: Filters) -> int:
    """How many beliefs the filters match, whatever the limit: what a listing cut at its limit leaves out."""
    where, params = _where(filters)
    return scalars.count(con, "SELECT count(*) FROM beliefs b" + where, params)


def select(con: duckdb.DuckDBPyConnection, filters: Filters, settings: StoreSettings, now: datetime) -> list[BeliefRow]:
    where, params = _where(filters)
    params.update(_params(settings, now))
    sql = _ROW + where
    sql += f" ORDER BY {SORTS[filters.sort]}, b.belief_id"
    if filters.limit:
        sql += f" LIMIT {int(filters.limit)}"
    return [BeliefRow(*row) for row in con.execute(sql, params).fetchall()]


def resolve(con: duckdb.DuckDBPyConnection, ref: str) -> str:
    """A full id, or a unique prefix of one (with or without the "b1:" tag)."""
    found = con.execute(
        "SELECT belief_id FROM beliefs WHERE belief_id = $r OR belief_id LIKE $p OR belief_id LIKE 'b1:' || $p "
        "ORDER BY belief_id LIMIT 3",
        {"r": ref, "p": ref.replace("%", "").replace("_", "") + "%"},
    ).fetchall()
    ids: list[str] = [row[0] for row in found]
    if ref in ids:
        return ref
    if not ids:
        raise DistillError(f"no belief {ref!r}")
    if len(ids) > 1:
        raise DistillError(f"belief id {ref!r} is ambiguous: {', '.join(ids)}, …")
    return ids[0]


def by_ids(con: duckdb.DuckDBPyConnection, ids: list[str], settings: StoreSettings, now: datetime) -> list[BeliefRow]:
    sql = _ROW + f" SEMI JOIN {rows({'belief_id': 'VARCHAR'})} i USING (belief_id) ORDER BY b.first_seen, b.belief_id"
    return [BeliefRow(*row) for row in con.execute(sql, {**_params(settings, now), "rows": pack(belief_id=ids)}).fetchall()]


def evidence(con: duckdb.DuckDBPyConnection, ids: list[str]) -> list[EvidenceRow]:
    found = con.execute(
        f"""
        SELECT belief_id, message_id, session_id, agent, file, byte_start, byte_end,
               strftime(ts, '%Y-%m-%dT%H:%M:%S.%gZ'), quote, run_id, statement, confidence,
               CASE WHEN explicit THEN 'explicit' ELSE 'implied' END
        FROM evidence SEMI JOIN {rows({'belief_id': 'VARCHAR'})} i USING (belief_id)
        ORDER BY belief_id, ts, session_id, message_id
        """,
        {"rows": pack(belief_id=ids)},
    ).fetchall()
    return [EvidenceRow(row[0], StoredEvidence(*row[1:])) for row in found]


def slot_history(con: duckdb.DuckDBPyConnection, belief_id: str) -> tuple[list[str], list[HistoryEvent]]:
    """Every belief that held the same slot, and every one linked by supersession, in time order; their events."""
    ids = [row[0] for row in con.execute(
        """
        WITH RECURSIVE chain(id) AS (
            SELECT $id
            UNION
            SELECT unnest([b.superseded_by, b.supersedes, b.conflicts_with]) FROM beliefs b JOIN chain ON b.belief_id = chain.id
        ),
        me AS (SELECT scope, subject, attribute FROM beliefs WHERE belief_id = $id AND attribute <> '')
        SELECT b.belief_id FROM beliefs b WHERE b.belief_id IN (SELECT id FROM chain)
           OR (b.scope, b.subject, b.attribute) IN (SELECT (scope, subject, attribute) FROM me)
        ORDER BY b.first_seen, b.belief_id
        """,
        {"id": belief_id},
    ).fetchall()]
    events = con.execute(
        f"""
        SELECT belief_id, strftime("at", '%Y-%m-%dT%H:%M:%SZ'), event, run_id, other_id FROM belief_history
        SEMI JOIN {rows({'belief_id': 'VARCHAR'})} i USING (belief_id) ORDER BY "at", belief_id
        """,
        {"rows": pack(belief_id=ids)},
    ).fetchall()
    return ids, [HistoryEvent(*row) for row in events]


@dataclass(frozen=True, slots=True)
class BeliefCounts:
    by_status: tuple[tuple[str, int], ...]
    by_category: tuple[tuple[str, int], ...]  # beliefs that are not archived

    def as_dict(self) -> dict[str, object]:
        return {"by_status": dict(self.by_status), "by_category": dict(self.by_category),
                "total": sum(n for _, n in self.by_status)}


def counts(con: duckdb.DuckDBPyConnection) -> BeliefCounts:
    status = con.execute("SELECT status, count(*) FROM beliefs GROUP BY ALL ORDER BY 1").fetchall()
    category = con.execute(
        "SELECT category, count(*) FROM beliefs WHERE status <> 'archived' GROUP BY ALL ORDER BY 1"
    ).fetchall()
    return BeliefCounts(tuple(status), tuple(category))


def stored(con: duckdb.DuckDBPyConnection, ids: list[str]) -> list[StoredBelief]:
    """Beliefs in export form, with their wordings' keys and every evidence item."""
    found = con.execute(
        f"""
        SELECT b.belief_id, b.statement, b.category, b.confidence, b.status, b.scope, b.subject, b.attribute,
               b.valid_from, b.valid_to, b.evidence_type, b.importance, b.decay_sensitivity, b.superseded_by,
               b.supersedes, b.conflicts_with, b.evidence_count, b.sessions,
               strftime(b.first_seen, '%Y-%m-%dT%H:%M:%S.%gZ'), strftime(b.last_seen, '%Y-%m-%dT%H:%M:%S.%gZ'),
               b.extractor, b.model, b.prompt_version,
               (SELECT list(k.key ORDER BY k.key) FROM belief_keys k WHERE k.belief_id = b.belief_id)
        FROM beliefs b SEMI JOIN {rows({'belief_id': 'VARCHAR'})} i USING (belief_id)
        ORDER BY b.first_seen, b.belief_id
        """,
        {"rows": pack(belief_id=ids)},
    ).fetchall()
    items: dict[str, list[StoredEvidence]] = {}
    for row in evidence(con, ids):
        items.setdefault(row.belief_id, []).append(row.item)
    return [StoredBelief(*(row[:23] + (tuple(row[23] or ()), tuple(items.get(row[0], ()))))) for row in found]


_ISO = "'%Y-%m-%dT%H:%M:%S.%gZ'"
# The export form of stored() as one row per belief, in the store's own column types (so a column that happens to be
# all null keeps its type), evidence as a list of structs: what `COPY … TO` writes.
EXPORT_SQL = f"""
SELECT b.belief_id AS id, b.statement, b.category, b.confidence, b.status, b.scope, b.subject, b.attribute,
       b.valid_from, b.valid_to, b.evidence_type, b.importance, b.decay_sensitivity, b.superseded_by, b.supersedes,
       b.conflicts_with, b.evidence_count, b.sessions, strftime(b.first_seen, {_ISO}) AS first_seen,
       strftime(b.last_seen, {_ISO}) AS last_seen, b.extractor, b.model, b.prompt_version,
       coalesce((SELECT list(k.key ORDER BY k.key) FROM belief_keys k WHERE k.belief_id = b.belief_id),
                []::VARCHAR[]) AS keys,
       coalesce((SELECT list({{'message_id': e.message_id, 'session': e.session_id, 'agent': e.agent, 'file': e.file,
                               'byte_start': e.byte_start, 'byte_end': e.byte_end, 'ts': strftime(e.ts, {_ISO}),
                               'quote': e.quote, 'run': e.run_id, 'statement': e.statement,
                               'confidence': e.confidence,
                               'evidence_type': CASE WHEN e.explicit THEN 'explicit' ELSE 'implied' END}}
                             ORDER BY e.ts, e.session_id, e.message_id)
                 FROM evidence e WHERE e.belief_id = b.belief_id), []) AS evidence
FROM beliefs b
WHERE $all OR b.status IN (SELECT unnest($statuses::VARCHAR[]))
ORDER BY b.first_seen, b.belief_id
"""


def copy_to(con: duckdb.DuckDBPyConnection, path: str, fmt: str, statuses: list[str] | None) -> int:
    """Write the beliefs in export form (those with one of `statuses`, or all) to `path` with DuckDB's COPY, in
    `fmt` (parquet); the number of beliefs written."""
    quoted = path.replace("'", "''")
    return scalars.count(con, f"COPY ({EXPORT_SQL}) TO '{quoted}' (FORMAT {fmt})",
                         {"all": statuses is None, "statuses": list(statuses or [])})
