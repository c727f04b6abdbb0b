"""One row per run, with its counters, so `status` and `runs` can tell what happened and when."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import duckdb
import orjson


@dataclass(frozen=True, slots=True)
class RunRecord:
    run_id: str
    started_at: str
    finished_at: str | None
    status: str
    sources: tuple[str, ...]
    counters: dict[str, object]  # as the run recorded them (Tally.as_dict), older runs' too
    error: str | None


DIED = "died"


def start(con: duckdb.DuckDBPyConnection, run_id: str, sources: list[str]) -> None:
    """Record a new run; a run still marked running died (the run lock says none is alive)."""
    con.execute("UPDATE runs SET status = 'died' WHERE status = 'running'")
    con.execute("INSERT INTO runs (run_id, status, sources) VALUES (?, 'running', ?)", [run_id, sources])


def update(
    con: duckdb.DuckDBPyConnection, run_id: str, counters: Mapping[str, object], status: str = "running", error: str | None = None
) -> None:
    con.execute(
        """
        UPDATE runs SET counters = ?, status = ?, error = ?,
               finished_at = CASE WHEN ? = 'running' THEN NULL ELSE now() END
        WHERE run_id = ?
        """,
        [orjson.dumps(counters).decode(), status, error, status, run_id],
    )


def as_seen(records: list[RunRecord], alive: bool) -> list[RunRecord]:
    """The runs as they are: one still recorded `running` while no run holds the lock (`alive` False) died, and is
    shown so at once, by a reading command that cannot write (the next run records it so)."""
    if alive:
        return records
    return [replace(r, status=DIED) if r.status == "running" else r for r in records]


def recent(con: duckdb.DuckDBPyConnection, limit: int = 20) -> list[RunRecord]:
    rows = con.execute(
        """
        SELECT run_id, strftime(started_at, '%Y-%m-%dT%H:%M:%SZ'), strftime(finished_at, '%Y-%m-%dT%H:%M:%SZ'),
               status, sources, counters, error
        FROM runs ORDER BY started_at DESC LIMIT ?
        """,
        [limit],
    ).fetchall()
    return [
        RunRecord(r[0], r[1], r[2], r[3], tuple(r[4]), orjson.loads(r[5]) if r[5] else {}, r[6]) for r in rows
    ]
