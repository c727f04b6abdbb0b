"""Committed batches, their model calls, and the requests quarantined for `distill batches retry|discard`.

Plain rows in and out: what a batch is, and how its quarantined requests are encoded, is `batches.model`'s."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import duckdb
import orjson

from distiller.store import scalars


def is_committed(con: duckdb.DuckDBPyConnection, batch_id: str) -> bool:
    return scalars.count(con, "SELECT count(*) FROM batches WHERE batch_id = ?", [batch_id]) > 0



class CallUsage(Protocol):
    """One model call as recorded (extract.base.Usage has these): the store does not import the extractors."""

    @property
    def model(self) -> str: ...
    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def cache_read_tokens(self) -> int: ...
    @property
    def cache_write_tokens(self) -> int: ...
    @property
    def latency_ms(self) -> int: ...
    @property
    def cost_usd(self) -> float: ...

def record(
    con: duckdb.DuckDBPyConnection,
    batch_id: str,
    run_id: str,
    *,
    status: str,
    extractor: str,
    model: str | None,
    requests: int,
    items: int,
    candidates: int,
    rejected: dict[str, int],
    usage: Sequence[CallUsage],
    error: str | None,
    quarantine: str | None,
) -> None:
    """A committed batch and its model calls; `usage` holds one record per call (the attributes of
    `extract.base.Usage`)."""
    con.execute(
        """
        INSERT INTO batches (batch_id, run_id, status, extractor, model, requests, items, candidates, rejected,
                             input_tokens, output_tokens, cost_usd, error, quarantine)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """,
        [
            batch_id, run_id, status, extractor, model, requests, items, candidates, orjson.dumps(rejected).decode(),
            sum(u.input_tokens for u in usage), sum(u.output_tokens for u in usage),
            sum(u.cost_usd for u in usage), error, quarantine,
        ],
    )
    record_calls(con, batch_id, run_id, usage)


def record_calls(con: duckdb.DuckDBPyConnection, batch_id: str, run_id: str, usage: Sequence[CallUsage]) -> None:
    """Model calls, each with its tokens and cost: what the per-day budgets add up (spent_today)."""
    if usage:
        con.execute(
            """
            INSERT INTO llm_calls
            SELECT ?, ?, unnest(?), unnest(?), unnest(?), unnest(?), unnest(?), unnest(?), unnest(?), now()
            """,
            [
                batch_id, run_id,
                [u.model for u in usage], [u.input_tokens for u in usage], [u.output_tokens for u in usage],
                [u.cache_read_tokens for u in usage], [u.cache_write_tokens for u in usage],
                [u.latency_ms for u in usage], [u.cost_usd for u in usage],
            ],
        )


def spent_today(con: duckdb.DuckDBPyConnection) -> tuple[int, float]:
    """Tokens and dollars of today's model calls (UTC), for the per-day budget."""
    tokens, cost = scalars.one_row(
        con,
        """
        SELECT coalesce(sum(input_tokens + cache_write_tokens + cache_read_tokens + output_tokens), 0),
               coalesce(sum(cost_usd), 0)
        FROM llm_calls WHERE called_at >= date_trunc('day', now())
        """,
    )
    return int(tokens), float(cost)


def quarantined(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str | None, str]]:
    """(batch id, run id, error, quarantine payload) of every quarantined batch."""
    return con.execute(
        "SELECT batch_id, run_id, error, quarantine FROM batches WHERE status = 'quarantined' ORDER BY batch_id"
    ).fetchall()


def settle(con: duckdb.DuckDBPyConnection, batch_id: str, status: str) -> bool:
    """Close a quarantined batch as retried or discarded; False when there is no such quarantined batch."""
    changed = con.execute(
        "UPDATE batches SET status = ?, quarantine = NULL WHERE batch_id = ? AND status = 'quarantined' "
        "RETURNING batch_id",
        [status, batch_id],
    ).fetchall()
    return bool(changed)
