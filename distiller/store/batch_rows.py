"""Committed batches, their model calls, and the requests quarantined for `distill batches retry|discard`."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import orjson

from distiller.batches.files import Batch, BatchItem
from distiller.extract.base import ExtractRequest, Item
from distiller.records import EvidenceItem


@dataclass(frozen=True, slots=True)
class Quarantined:
    batch_id: str
    run_id: str
    error: str
    requests: tuple[ExtractRequest, ...]
    items: tuple[BatchItem, ...]


def is_committed(con: duckdb.DuckDBPyConnection, batch_id: str) -> bool:
    return con.execute("SELECT count(*) FROM batches WHERE batch_id = ?", [batch_id]).fetchone()[0] > 0


def _quarantine_json(batch: Batch) -> str | None:
    if not batch.failed:
        return None
    cited = {item.item_id for request, _ in batch.failed for item in request.items}
    return orjson.dumps({
        "requests": [{"request_id": r.request_id, "agent": r.agent, "items": [i.item_id for i in r.items],
                      "error": error} for r, error in batch.failed],
        "items": [{"item": b.item, "request_id": b.request_id, "provenance": b.provenance}
                  for b in batch.items if b.item.item_id in cited],
    }).decode()


def record(
    con: duckdb.DuckDBPyConnection,
    batch: Batch,
    run_id: str,
    candidates: int,
    rejected: dict[str, int],
) -> None:
    usage = [u for extraction in batch.results for u in extraction.usage]
    con.execute(
        """
        INSERT INTO batches (batch_id, run_id, status, extractor, model, requests, items, candidates, rejected,
                             input_tokens, output_tokens, cost_usd, error, quarantine)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """,
        [
            batch.batch_id, run_id, "quarantined" if batch.failed else "committed", batch.extractor, batch.model,
            len(batch.requests), len(batch.items), candidates, orjson.dumps(rejected).decode(),
            sum(u.input_tokens for u in usage), sum(u.output_tokens for u in usage),
            sum(u.cost_usd for u in usage), "; ".join(error for _, error in batch.failed) or None,
            _quarantine_json(batch),
        ],
    )
    if usage:
        con.execute(
            """
            INSERT INTO llm_calls
            SELECT ?, ?, unnest(?), unnest(?), unnest(?), unnest(?), unnest(?), unnest(?), unnest(?), now()
            """,
            [
                batch.batch_id, run_id,
                [u.model for u in usage], [u.input_tokens for u in usage], [u.output_tokens for u in usage],
                [u.cache_read_tokens for u in usage], [u.cache_write_tokens for u in usage],
                [u.latency_ms for u in usage], [u.cost_usd for u in usage],
            ],
        )


def spent_today(con: duckdb.DuckDBPyConnection) -> tuple[int, float]:
    """Tokens and dollars of today's model calls (UTC), for the per-day budget."""
    tokens, cost = con.execute(
        """
        SELECT coalesce(sum(input_tokens + output_tokens), 0), coalesce(sum(cost_usd), 0)
        FROM llm_calls WHERE called_at >= date_trunc('day', now())
        """
    ).fetchone()
    return int(tokens), float(cost)


def quarantined(con: duckdb.DuckDBPyConnection) -> list[Quarantined]:
    rows = con.execute(
        "SELECT batch_id, run_id, error, quarantine FROM batches WHERE status = 'quarantined' ORDER BY batch_id"
    ).fetchall()
    found = []
    for batch_id, run_id, error, payload in rows:
        data = orjson.loads(payload)
        items = tuple(BatchItem(Item(**b["item"]), b["request_id"], EvidenceItem(**b["provenance"]))
                      for b in data["items"])
        by_id = {b.item.item_id: b.item for b in items}
        requests = tuple(ExtractRequest(r["request_id"], r["agent"], tuple(by_id[i] for i in r["items"]))
                         for r in data["requests"])
        found.append(Quarantined(batch_id, run_id, error or "", requests, items))
    return found


def settle(con: duckdb.DuckDBPyConnection, batch_id: str, status: str) -> bool:
    """Close a quarantined batch as retried or discarded; False when there is no such quarantined batch."""
    changed = con.execute(
        "UPDATE batches SET status = ?, quarantine = NULL WHERE batch_id = ? AND status = 'quarantined' "
        "RETURNING batch_id",
        [status, batch_id],
    ).fetchall()
    return bool(changed)
