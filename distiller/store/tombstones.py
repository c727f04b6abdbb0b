"""Tombstones: hashes of what was forgotten, so that a replay or a reprocess never brings it back."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

import duckdb

from distiller.store import scalars
from distiller.store.bulk import pack, rows


def any_recorded(con: duckdb.DuckDBPyConnection) -> bool:
    """Nothing forgotten yet (the usual case) spares hashing every candidate's keys."""
    return scalars.exists(con, "SELECT EXISTS (SELECT 1 FROM tombstones)")


def matching(con: duckdb.DuckDBPyConnection, keys: Collection[str]) -> dict[str, datetime]:
    """The tombstoned keys among `keys`, with when they were forgotten."""
    if not keys:
        return {}
    found = con.execute(
        f"SELECT key, created_at FROM tombstones SEMI JOIN {rows({'key': 'VARCHAR'})} k USING (key)",
        {"rows": pack(key=list(keys))},
    ).fetchall()
    return dict(found)


def add(con: duckdb.DuckDBPyConnection, entries: Sequence[tuple[str, str]], reason: str, now: datetime) -> int:
    """Record (key, kind) tombstones; forgetting a key again moves its time forward."""
    unique = dict(entries)
    if not unique:
        return 0
    con.execute(
        """
        INSERT INTO tombstones SELECT unnest(?), unnest(?), ?, ?
        ON CONFLICT (key) DO UPDATE SET created_at = greatest(tombstones.created_at, excluded.created_at)
        """,
        [list(unique), list(unique.values()), now, reason],
    )
    return len(unique)


def every(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str, str]]:
    """(key, kind, forgotten at as RFC 3339, reason) of every tombstone: what an export carries."""
    return con.execute(
        "SELECT key, kind, strftime(created_at, '%Y-%m-%dT%H:%M:%S.%fZ'), reason FROM tombstones ORDER BY key"
    ).fetchall()


def restore(con: duckdb.DuckDBPyConnection, entries: Sequence[tuple[str, str, datetime, str]]) -> int:
    """Apply exported tombstones, each keeping the time it was forgotten (the later one wins on a repeat)."""
    if not entries:
        return 0
    keys, kinds, times, reasons = (list(column) for column in zip(*entries, strict=True))
    con.execute(
        """
        INSERT INTO tombstones SELECT unnest(?), unnest(?), unnest(?::TIMESTAMPTZ[]), unnest(?)
        ON CONFLICT (key) DO UPDATE SET created_at = greatest(tombstones.created_at, excluded.created_at)
        """,
        [keys, kinds, times, reasons],
    )
    return len(entries)
