"""The progress of `distill reprocess` jobs: committed offsets per file, the messages re-extracted and the beliefs
drawn again, written in the transaction of each batch so that a resumed job pays for nothing twice."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import duckdb
import orjson

from distiller.store.bulk import pack, rows
from distiller.store.lifecycle import ARCHIVED, history

DONE = "done"


@dataclass(frozen=True, slots=True)
class Job:
    job_id: str
    status: str
    started_at: str
    finished_at: str | None
    retired: int | None


def find(con: duckdb.DuckDBPyConnection, job_id: str) -> Job | None:
    row = con.execute(
        "SELECT job_id, status, started_at::VARCHAR, finished_at::VARCHAR, retired FROM reprocess_jobs "
        "WHERE job_id = ?", [job_id]).fetchone()
    return Job(*row) if row else None


def start(con: duckdb.DuckDBPyConnection, job_id: str, params: Mapping[str, object], extractor: str, model: str | None,
          prompt_version: str) -> None:
    con.execute("INSERT INTO reprocess_jobs (job_id, status, params, extractor, model, prompt_version) "
                "VALUES (?, 'running', ?, ?, ?, ?) ON CONFLICT (job_id) DO NOTHING",
                [job_id, orjson.dumps(params).decode(), extractor, model, prompt_version])


def progress(con: duckdb.DuckDBPyConnection, job_id: str) -> dict[str, int]:
    return dict(con.execute('SELECT file_id, "offset" FROM reprocess_files WHERE job_id = ?', [job_id]).fetchall())


def record_batch(con: duckdb.DuckDBPyConnection, job_id: str, moves: Sequence[tuple[str, str, int]],
                 kept: Sequence[tuple[str, str]], belief_ids: Sequence[str]) -> None:
    """In the batch's transaction: how far each file is done ((file id, path, offset)), the kept messages it
    re-extracted ((session id, message id)), and the beliefs it drew."""
    if moves:
        con.execute(
            f"""
            INSERT INTO reprocess_files SELECT $job, file_id, path, "offset"
            FROM {rows({"file_id": "VARCHAR", "path": "VARCHAR", "offset": "BIGINT"})}
            ON CONFLICT (job_id, file_id) DO UPDATE SET "offset" = greatest(excluded."offset", reprocess_files."offset")
            """,
            {"job": job_id, "rows": pack(file_id=[m[0] for m in moves], path=[m[1] for m in moves],
                                         offset=[m[2] for m in moves])},
        )
    items = [("message", session_id, message_id) for session_id, message_id in kept] + [
        ("belief", "", b) for b in belief_ids]
    if items:
        con.execute(
            f"INSERT INTO reprocess_items SELECT $job, kind, session_id, id "
            f"FROM {rows({'kind': 'VARCHAR', 'session_id': 'VARCHAR', 'id': 'VARCHAR'})}",
            {"job": job_id, "rows": pack(kind=[i[0] for i in items], session_id=[i[1] for i in items],
                                         id=[i[2] for i in items])},
        )


def retire(con: duckdb.DuckDBPyConnection, job_id: str, extractor: str, model: str | None, prompt_version: str,
           now: datetime) -> int:
    """Archive (reason `reprocessed`) the live beliefs whose every evidence item is a message this job re-extracted,
    that an older extractor, model or prompt drew, and that this job did not draw again."""
    retired = [row[0] for row in con.execute(
        """
        WITH mine AS (SELECT DISTINCT session_id, id AS message_id FROM reprocess_items
                      WHERE job_id = $job AND kind = 'message'),
             drawn AS (SELECT DISTINCT id AS belief_id FROM reprocess_items WHERE job_id = $job AND kind = 'belief'),
             outside AS (SELECT DISTINCT e.belief_id FROM evidence e
                         ANTI JOIN mine m ON m.session_id = e.session_id
                                          AND m.message_id = split_part(e.message_id, '#', 1))
        SELECT b.belief_id FROM beliefs b
        WHERE b.status <> $archived
          AND (b.extractor, coalesce(b.model, ''), b.prompt_version) <> ($extractor, coalesce($model, ''), $prompt)
          AND b.belief_id NOT IN (SELECT belief_id FROM drawn)
          AND b.belief_id NOT IN (SELECT belief_id FROM outside)
          AND b.belief_id IN (SELECT belief_id FROM evidence)
        ORDER BY 1
        """,
        {"job": job_id, "archived": ARCHIVED, "extractor": extractor, "model": model, "prompt": prompt_version},
    ).fetchall()]
    if retired:
        con.execute(f"UPDATE beliefs SET status = '{ARCHIVED}', updated_at = $now "
                    f"WHERE belief_id IN (SELECT belief_id FROM {rows({'belief_id': 'VARCHAR'})})",
                    {"rows": pack(belief_id=retired), "now": now})
        history(con, [(belief_id, "reprocessed", None) for belief_id in retired], job_id, now)
    return len(retired)


def finish(con: duckdb.DuckDBPyConnection, job_id: str, retired: int) -> None:
    con.execute("UPDATE reprocess_jobs SET status = 'done', finished_at = now(), retired = ? WHERE job_id = ?",
                [retired, job_id])
