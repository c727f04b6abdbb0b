"""Per-file cursors: where each identified transcript was read up to, one `records.Cursor` per row of `files`
(its fields in the table's column order)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from distiller.errors import DistillError
from distiller.records import CURSOR_FIELDS, Cursor
from distiller.store.bulk import pack, rows
from distiller.store.schema import COLUMNS

if TYPE_CHECKING:  # connections are only handed in: a scan worker (track.py imports this) loads no DuckDB
    import duckdb

FIELDS = CURSOR_FIELDS
_COLUMNS = ", ".join(f'"{name}"' if name == "offset" else name for name in FIELDS)

def load(con: duckdb.DuckDBPyConnection) -> list[Cursor]:
    return [Cursor(*row) for row in con.execute(f"SELECT {_COLUMNS} FROM files ORDER BY path").fetchall()]


class CursorConflict(DistillError):
    """A cursor moved under us: another writer advanced it, so this chunk must not be committed."""


# The packed column of each field: "offset" is an SQL keyword, packed as new_offset.
_PACKED = tuple("new_offset" if name == "offset" else name for name in FIELDS)
_TYPES = {packed: COLUMNS["files"][name] for packed, name in zip(_PACKED, FIELDS, strict=True)}
_NEW = rows(_TYPES)
_MOVES = rows({**_TYPES, "expected": "BIGINT"})


def _packed(cursors: Sequence[Cursor], **more: Sequence[object]) -> str:
    values = [cursor.row() for cursor in cursors]
    return pack(**{name: [row[i] for row in values] for i, name in enumerate(_PACKED)}, **more)


def save(con: duckdb.DuckDBPyConnection, moves: Sequence[tuple[Cursor, int | None]]) -> None:
    """Insert new cursors and advance known ones only where they still hold the expected offset (compare-and-set).

    Bulk statements over packed columns: a first run over thousands of files is one INSERT and one UPDATE.
    """
    new = [cursor for cursor, expected in moves if expected is None]
    known = [(cursor, expected) for cursor, expected in moves if expected is not None]
    if new:
        selected = ", ".join(f"u.{name}" for name in _PACKED)
        con.execute(f"INSERT INTO files ({_COLUMNS}) SELECT {selected} FROM {_NEW} u", {"rows": _packed(new)})
    if known:
        batch = [cursor for cursor, _ in known]
        changed = con.execute(
            f"""
            UPDATE files SET path = u.path, agent = u.agent, session_id = u.session_id, dev = u.dev, inode = u.inode,
                   size = u.size, mtime_ns = u.mtime_ns, "offset" = u.new_offset, tail_digest = u.tail_digest,
                   state = u.state, session_skip = u.session_skip, updated_at = now()
            FROM {_MOVES} u
            WHERE files.file_id = u.file_id AND files."offset" = u.expected
            RETURNING files.file_id
            """,
            {"rows": _packed(batch, expected=[expected for _, expected in known])},
        ).fetchall()
        updated = {row[0] for row in changed}
        moved = sorted(cursor.path for cursor in batch if cursor.file_id not in updated)
        if moved:
            raise CursorConflict(f"cursor(s) moved during this run, nothing was committed: {', '.join(moved[:3])}")


def mark_gone(con: duckdb.DuckDBPyConnection, file_ids: list[str]) -> None:
    if file_ids:
        con.execute(
            "UPDATE files SET state = 'gone', updated_at = now() WHERE file_id IN (SELECT unnest(?))", [file_ids]
        )


def reset_all(con: duckdb.DuckDBPyConnection) -> int:
    return len(con.execute("DELETE FROM files RETURNING file_id").fetchall())
