"""The one row of an aggregate query, and the single answer of a count or EXISTS, typed (DuckDB's `fetchone()`
may be None)."""

from __future__ import annotations

from typing import Any

import duckdb


def one_row(con: duckdb.DuckDBPyConnection, sql: str, params: object = None) -> tuple[Any, ...]:
    """The row of a query that always answers one (an aggregate without GROUP BY)."""
    row = con.execute(sql, params).fetchone()
    if row is None:  # an aggregate always answers one row: None means the query is not one
        raise LookupError(f"no row from a query that must answer one: {sql}")
    return row


def count(con: duckdb.DuckDBPyConnection, sql: str, params: object = None) -> int:
    """`SELECT count(*) …` (or any single integer)."""
    return int(one_row(con, sql, params)[0])


def exists(con: duckdb.DuckDBPyConnection, sql: str, params: object = None) -> bool:
    """`SELECT EXISTS (…)` (or any single truth value)."""
    return bool(one_row(con, sql, params)[0])
