"""The ingested-message ledger: one row per (session, message id), so a reread never counts a message twice."""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from distiller.records import Message


def already_ingested(con: duckdb.DuckDBPyConnection, messages: Sequence[Message]) -> set[tuple[str, str]]:
    if not messages:
        return set()
    rows = con.execute(
        """
        SELECT i.session_id, i.message_id
        FROM ingested i
        JOIN (SELECT unnest(?) AS session_id, unnest(?) AS message_id) k USING (session_id, message_id)
        """,
        [[m.session_id for m in messages], [m.message_id for m in messages]],
    ).fetchall()
    return set(rows)


def record(con: duckdb.DuckDBPyConnection, messages: Sequence[Message], decisions: Sequence[str],
           reasons: Sequence[str | None], file_ids: Sequence[str], run_id: str) -> None:
    """One ledger row per message read, with its screening decision and reason (the audit trail of every drop).

    A message already in the ledger is left alone, so replaying a batch can never count it twice."""
    if not messages:
        return
    con.execute(
        """
        INSERT INTO ingested
        SELECT n.* FROM (
            SELECT unnest(?) AS session_id, unnest(?) AS message_id, unnest(?) AS agent, unnest(?) AS file_id,
                   unnest(?) AS path, unnest(?) AS byte_start, unnest(?) AS byte_end, unnest(?) AS role,
                   unnest(?) AS ts, unnest(?) AS inter_session, ? AS run_id, unnest(?) AS decision,
                   unnest(?) AS reason
        ) n
        WHERE NOT EXISTS (
            SELECT 1 FROM ingested i WHERE i.session_id = n.session_id AND i.message_id = n.message_id
        )
        """,
        [
            [m.session_id for m in messages],
            [m.message_id for m in messages],
            [m.agent for m in messages],
            list(file_ids),
            [m.file for m in messages],
            [m.byte_start for m in messages],
            [m.byte_end for m in messages],
            [m.role for m in messages],
            [m.ts for m in messages],
            [m.inter_session for m in messages],
            run_id,
            list(decisions),
            list(reasons),
        ],
    )


def count(con: duckdb.DuckDBPyConnection) -> int:
    return con.execute("SELECT count(*) FROM ingested").fetchone()[0]
