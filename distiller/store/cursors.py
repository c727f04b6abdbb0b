"""Per-file cursors: where each identified transcript was read up to."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from distiller.errors import DistillError


@dataclass(frozen=True, slots=True)
class Cursor:
    file_id: str
    path: str
    agent: str
    session_id: str
    dev: int
    inode: int
    size: int
    mtime_ns: int
    offset: int
    tail_digest: str
    state: str = "active"


_COLUMNS = "file_id, path, agent, session_id, dev, inode, size, mtime_ns, \"offset\", tail_digest, state"


def load(con: duckdb.DuckDBPyConnection) -> list[Cursor]:
    return [Cursor(*row) for row in con.execute(f"SELECT {_COLUMNS} FROM files ORDER BY path").fetchall()]


class CursorConflict(DistillError):
    """A cursor moved under us: another writer advanced it, so this chunk must not be committed."""


def save(con: duckdb.DuckDBPyConnection, cursor: Cursor, expected_offset: int | None) -> None:
    """Insert a new cursor, or advance one only if it still holds `expected_offset` (compare-and-set)."""
    values = [
        cursor.path, cursor.agent, cursor.session_id, cursor.dev, cursor.inode,
        cursor.size, cursor.mtime_ns, cursor.offset, cursor.tail_digest, cursor.state, cursor.file_id,
    ]
    if expected_offset is None:
        con.execute(
            f"INSERT INTO files ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [cursor.file_id, *values[:-1]],
        )
        return
    changed = con.execute(
        """
        UPDATE files SET path = ?, agent = ?, session_id = ?, dev = ?, inode = ?, size = ?, mtime_ns = ?,
               "offset" = ?, tail_digest = ?, state = ?, updated_at = now()
        WHERE file_id = ? AND "offset" = ?
        RETURNING file_id
        """,
        [*values, expected_offset],
    ).fetchall()
    if not changed:
        raise CursorConflict(f"cursor of {cursor.path} moved during this run; nothing from it was committed")


def mark_gone(con: duckdb.DuckDBPyConnection, file_ids: list[str]) -> None:
    if file_ids:
        con.execute(
            "UPDATE files SET state = 'gone', updated_at = now() WHERE file_id IN (SELECT unnest(?))", [file_ids]
        )


def reset_all(con: duckdb.DuckDBPyConnection) -> int:
    return len(con.execute("DELETE FROM files RETURNING file_id").fetchall())
