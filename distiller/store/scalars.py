"""The single answer of an aggregate or EXISTS query, typed (DuckDB's `fetchone()` may be None and holds Any)."""

from __future__ import annotations

from typing import Any

import duckdb


def _row(con: duckdb.DuckDBPyConnection, sql: str, params: object) -> tuple[Any, ...]:
    row = con.execute(sql, params).fetchone()
    if row is None:  # an aggregate always answers one row: None means the query is not one
        raise LookupError(f"no row from a query that must answer one: {sql}")
    return row


def count(con: duckdb.DuckDBPyConnection, sql: str, params: object = None) -> int:
    """`SELECT count(*) …` (or any single integer)."""
    return int(_row(con, sql, params)[0])


def exists(con: duckdb.DuckDBPyConnection, sql: str, params: object = None) -> bool:
    """`SELECT EXISTS (…)` (or any single truth value)."""
    return bool(_row(con, sql, params)[0])
