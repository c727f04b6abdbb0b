"""The term table recall ranks beliefs by (BM25 in SQL): each belief's statement terms, and its quotes' terms apart.

DuckDB's `fts` extension cannot be installed offline for the version in use, so the store keeps the equivalent
table itself, in the same transaction as the beliefs: a row per (belief, part, term) with its count, where the part
is the statement (`session_id` and `message_id` empty) or one evidence item's quote (its session and message ids).
Keyed so, each write touches only what changed — a new evidence item adds its quote's rows, a new wording replaces
the statement's rows, a forgotten source deletes its quotes' rows — and `rebuild` is the plain path every shortcut
must equal (tests/test_recall_terms.py checks it after generated sequences of writes and forgetting).

`belief_lengths` keeps each belief's number of statement terms and quote terms (BM25's document length), updated
with the rows of the beliefs a write touched: summing them at query time costs 11 ms on 10,000 beliefs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import duckdb

from distiller.store import schema
from distiller.store.bulk import pack, rows
from distiller.terms import terms

_ROWS = rows(schema.COLUMNS["belief_terms"])
_IDS = rows({"belief_id": "VARCHAR"})
_PARTS = rows({"belief_id": "VARCHAR", "session_id": "VARCHAR", "message_id": "VARCHAR"})

# (belief_id, session_id, message_id, text): the statement is the part whose ids are empty.
Part = tuple[str, str, str, str]


def add(con: duckdb.DuckDBPyConnection, parts: Iterable[Part]) -> None:
    """Insert the terms of these parts (none of them indexed yet)."""
    belief_ids: list[str] = []
    session_ids: list[str] = []
    message_ids: list[str] = []
    found: list[str] = []
    counts: list[int] = []
    for belief_id, session_id, message_id, text in parts:
        for term, tf in terms(text).items():
            belief_ids.append(belief_id)
            session_ids.append(session_id)
            message_ids.append(message_id)
            found.append(term)
            counts.append(tf)
    if found:
        packed = pack(belief_id=belief_ids, session_id=session_ids, message_id=message_ids, term=found, tf=counts)
        con.execute(f"INSERT INTO belief_terms SELECT * FROM {_ROWS}", {"rows": packed})
        _measure(con, belief_ids)


def _measure(con: duckdb.DuckDBPyConnection, ids: Iterable[str]) -> None:
    """These beliefs' lengths, from their rows as they now are."""
    param = {"rows": pack(belief_id=list(dict.fromkeys(ids)))}
    con.execute(f"DELETE FROM belief_lengths WHERE belief_id IN (SELECT belief_id FROM {_IDS})", param)
    con.execute(
        f"""INSERT INTO belief_lengths
            SELECT belief_id, sum(tf) FILTER (WHERE session_id = ''), sum(tf) FILTER (WHERE session_id <> '')
            FROM belief_terms WHERE belief_id IN (SELECT belief_id FROM {_IDS}) GROUP BY belief_id""", param)


def replace_statements(con: duckdb.DuckDBPyConnection, statements: dict[str, str]) -> None:
    """These beliefs' statement terms, as their statements now read."""
    if not statements:
        return
    ids = list(statements)
    con.execute(f"DELETE FROM belief_terms WHERE session_id = '' AND message_id = '' "
                f"AND belief_id IN (SELECT belief_id FROM {_IDS})", {"rows": pack(belief_id=ids)})
    add(con, ((belief_id, "", "", statement) for belief_id, statement in statements.items()))
    _measure(con, ids)


def drop_beliefs(con: duckdb.DuckDBPyConnection, ids: Sequence[str]) -> None:
    if ids:
        for table in ("belief_terms", "belief_lengths"):
            con.execute(f"DELETE FROM {table} WHERE belief_id IN (SELECT belief_id FROM {_IDS})",
                        {"rows": pack(belief_id=list(ids))})


def drop_quotes(con: duckdb.DuckDBPyConnection, evidence: Sequence[tuple[str, str, str]]) -> None:
    """The quote terms of these (belief_id, session_id, message_id) evidence items, deleted with them."""
    if evidence:
        con.execute(
            f"DELETE FROM belief_terms WHERE (belief_id, session_id, message_id) IN "
            f"(SELECT (belief_id, session_id, message_id) FROM {_PARTS})",
            {"rows": pack(belief_id=[e[0] for e in evidence], session_id=[e[1] for e in evidence],
                          message_id=[e[2] for e in evidence])},
        )
        _measure(con, (e[0] for e in evidence))


def rebuild(con: duckdb.DuckDBPyConnection) -> None:
    """The whole table from the beliefs and their evidence: the plain path, and the backfill of a migration."""
    con.execute("DELETE FROM belief_terms")
    con.execute("DELETE FROM belief_lengths")
    add(con, ((b, "", "", s) for b, s in con.execute("SELECT belief_id, statement FROM beliefs").fetchall()))
    add(con, con.execute("SELECT belief_id, session_id, message_id, quote FROM evidence").fetchall())


def live_statements(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The statements recall may show (live beliefs): what the echo screen compares new messages with."""
    return [row[0] for row in con.execute(
        "SELECT statement FROM beliefs WHERE status IN ('active', 'provisional')").fetchall()]
