"""The ingested-message ledger: one row per (session, message id), so a reread never counts a message twice."""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from distiller.records import Message
from distiller.store import scalars
from distiller.store.bulk import pack, rows
from distiller.store.schema import COLUMNS

_KEYS = rows({"session_id": "VARCHAR", "message_id": "VARCHAR"})
# The packed rows of a batch: the ledger's columns but run_id (one per batch), with the path each was read under.
_LEDGER = rows({name: kind for name, kind in COLUMNS["ingested"].items() if name != "run_id"} | {"path": "VARCHAR"})


def already_ingested(con: duckdb.DuckDBPyConnection, messages: Sequence[Message]) -> set[tuple[str, str]]:
    if not messages:
        return set()
    found = con.execute(
        f"SELECT i.session_id, i.message_id FROM ingested i JOIN {_KEYS} k USING (session_id, message_id)",
        {"rows": pack(session_id=[m.session_id for m in messages], message_id=[m.message_id for m in messages])},
    ).fetchall()
    return set(found)


def record(con: duckdb.DuckDBPyConnection, messages: Sequence[Message], decisions: Sequence[str],
           reasons: Sequence[str | None], file_ids: Sequence[str], run_id: str) -> None:
    """One ledger row per message read, with its screening decision and reason (the audit trail of every drop).

    A message already in the ledger is left alone, so replaying a batch can never count it twice. What a run's
    messages of one file share is written once, not on every row: the path they were read under to
    `ingested_paths` once per (file, path) (repeated, it was a third of the ledger: 5.2 of 15.3 MB on the persona
    corpus), the session, agent, file and run to `ledger_reads`, and the role and verdict to `ledger_verdicts`,
    which each `ledger` row names by number (m023: 157 of each row's 223 bytes in the WAL). `ingested` is the view
    joining them back."""
    if not messages:
        return
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE ledger_new AS
        SELECT * FROM {_LEDGER} n
        WHERE NOT EXISTS (
            SELECT 1 FROM ingested i WHERE i.session_id = n.session_id AND i.message_id = n.message_id
        )
        """,
        {
            "rows": pack(
                session_id=[m.session_id for m in messages],
                message_id=[m.message_id for m in messages],
                agent=[m.agent for m in messages],
                file_id=list(file_ids),
                path=[m.file for m in messages],
                byte_start=[m.byte_start for m in messages],
                byte_end=[m.byte_end for m in messages],
                role=[m.role for m in messages],
                ts=[m.ts for m in messages],
                inter_session=[m.inter_session for m in messages],
                decision=list(decisions),
                reason=list(reasons),
            ),
        },
    )
    # A (run, file, session, agent) the batch's new rows come from that the ledger has not numbered yet.
    con.execute(
        """
        INSERT INTO ledger_reads
        SELECT (SELECT coalesce(max(read_no), 0) FROM ledger_reads)
               + row_number() OVER (ORDER BY file_id, session_id, agent)::INTEGER,
               session_id, agent, file_id, $run_id
        FROM (SELECT DISTINCT session_id, agent, file_id FROM ledger_new) n
        WHERE NOT EXISTS (
            SELECT 1 FROM ledger_reads r
            WHERE r.run_id = $run_id AND r.file_id = n.file_id AND r.session_id = n.session_id AND r.agent = n.agent
        )
        """,
        {"run_id": run_id},
    )
    # A role and verdict the ledger has not numbered yet.
    con.execute(
        """
        INSERT INTO ledger_verdicts
        SELECT (SELECT coalesce(max(verdict_no), 0) FROM ledger_verdicts)
               + row_number() OVER (ORDER BY role, inter_session, decision, reason)::INTEGER,
               role, inter_session, decision, reason
        FROM (SELECT DISTINCT role, inter_session, decision, reason FROM ledger_new) n
        WHERE NOT EXISTS (
            SELECT 1 FROM ledger_verdicts v
            WHERE v.role = n.role AND v.inter_session = n.inter_session
                  AND v.decision IS NOT DISTINCT FROM n.decision AND v.reason IS NOT DISTINCT FROM n.reason
        )
        """
    )
    con.execute(
        """
        INSERT INTO ledger (read_no, verdict_no, message_id, byte_start, byte_end, ts)
        SELECT r.read_no, v.verdict_no, n.message_id, n.byte_start, n.byte_end, n.ts
        FROM ledger_new n
        JOIN ledger_reads r ON r.run_id = $run_id AND r.file_id = n.file_id AND r.session_id = n.session_id
                               AND r.agent = n.agent
        JOIN ledger_verdicts v ON v.role = n.role AND v.inter_session = n.inter_session
                                  AND v.decision IS NOT DISTINCT FROM n.decision
                                  AND v.reason IS NOT DISTINCT FROM n.reason
        """,
        {"run_id": run_id},
    )
    con.execute(
        """
        INSERT INTO ingested_paths
        SELECT DISTINCT n.file_id, n.path FROM ledger_new n
        WHERE NOT EXISTS (SELECT 1 FROM ingested_paths p WHERE p.file_id = n.file_id AND p.path = n.path)
        """
    )
    con.execute("DROP TABLE ledger_new")


def count(con: duckdb.DuckDBPyConnection) -> int:
    return scalars.count(con, "SELECT count(*) FROM ledger")
