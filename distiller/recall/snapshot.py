"""A snapshot of what recall reads, so the Claude Code hook answers without DuckDB (its import alone is 60–80 ms of
the hook's 150 ms budget).

`build` reads, in SQL, exactly what select.py ranks: the live beliefs with their activation, each one's BM25
postings (weighted term counts) and length, and the store-wide statistics (the number of beliefs, their average
length, every term's document frequency). `rank` then does in Python what select.py does in SQL; a property test
(tests/test_recall_snapshot.py) proves both give the same lines on generated stores.

The snapshot names the database and WAL files it was read from (inode, size, mtime in ns); any write changes one
of them, and a snapshot that does not match the files as they are now is not used: the hook reads the store
instead, and writes a new snapshot. Only while a run holds the store (no reader may open it) does the hook use the
last snapshot as it is. Forgetting deletes it (drop_derived), so no forgotten statement outlives its belief on disk.
"""

from __future__ import annotations

import math
import os
from datetime import datetime
from pathlib import Path

import orjson

from distiller.recall.lines import (
    BM25_B,
    BM25_K1,
    CORE_CATEGORIES,
    CORE_CONFIDENCE,
    QUOTE_WEIGHT,
    SCORE_DECIMALS,
    Limits,
    Line,
    dedupe,
)
from distiller.recall import SNAPSHOT_FILE
from distiller.terms import terms

VERSION = 1


def stamp(db_path: Path) -> list:
    """What any write to the database changes: its file's and its WAL's inode, size and mtime."""
    found = []
    for path in (db_path, db_path.with_name(db_path.name + ".wal")):
        try:
            st = os.stat(path)
        except FileNotFoundError:
            found.append(None)
        else:
            found.append([st.st_ino, st.st_size, st.st_mtime_ns])
    return found


def build(con, db_path: Path, *, settings=None, now: datetime) -> dict:
    """The snapshot of the store `con` reads (a read-only connection holds off every writer while it is open)."""
    from distiller.recall.select import _live  # the same live beliefs and activation as a recall
    from distiller.store.activation import activation_params

    live, params = _live(None)
    params |= activation_params(settings, now)
    beliefs = con.execute(f"WITH {live} SELECT belief_id, scope, category, statement, confidence, status, "
                          "importance, activation FROM live ORDER BY belief_id", params).fetchall()
    weighted = f"CASE WHEN t.session_id = '' THEN t.tf ELSE {QUOTE_WEIGHT} * t.tf END"
    length = f"coalesce(l.statement, 0) + {QUOTE_WEIGHT} * coalesce(l.quotes, 0)"
    postings: dict[str, list] = {}
    for term, belief_id, tf in con.execute(
            f"WITH {live} SELECT t.term, t.belief_id, sum({weighted})::DOUBLE FROM belief_terms t "
            "SEMI JOIN live USING (belief_id) GROUP BY t.term, t.belief_id ORDER BY ALL", params).fetchall():
        postings.setdefault(term, []).append([belief_id, tf])
    lengths = dict(con.execute(f"SELECT l.belief_id, ({length})::DOUBLE FROM belief_lengths l").fetchall())
    n, avgdl = con.execute(f"SELECT greatest(count(*), 1), (greatest(sum({length}), 1) / greatest(count(*), 1))"
                           "::DOUBLE FROM belief_lengths l").fetchone()
    df = dict(con.execute("SELECT term, count(DISTINCT belief_id) FROM belief_terms GROUP BY term").fetchall())
    return {"version": VERSION, "stamp": stamp(db_path), "n": n, "avgdl": avgdl,
            "beliefs": [list(row) + [lengths.get(row[0], 0.0)] for row in beliefs],
            "postings": postings, "df": {term: df[term] for term in postings}}


def save(state_dir: Path, snapshot: dict) -> None:
    from distiller.recall import write_if_changed

    write_if_changed(state_dir / SNAPSHOT_FILE, orjson.dumps(snapshot).decode())


def load(state_dir: Path, db_path: Path, *, current: bool = True) -> dict | None:
    """The saved snapshot when it matches the database files as they are (any, with current=False), else None."""
    try:
        snapshot = orjson.loads((state_dir / SNAPSHOT_FILE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(snapshot, dict) or snapshot.get("version") != VERSION:
        return None
    if current and snapshot.get("stamp") != stamp(db_path):
        return None
    return snapshot


def rank(snapshot: dict, prompt: str, *, agent: str | None = None, limits: Limits = Limits()) -> list[Line]:
    """select.select's lines, from the snapshot (without their evidence ids: the block does not show them)."""
    scopes = None if agent is None else {"global", f"agent:{agent}"}
    live = {row[0]: row for row in snapshot["beliefs"] if scopes is None or row[1] in scopes}
    # rows as select.py's query gives them: (tier, id, category, statement, confidence, score, rank)
    found: list[tuple] = []
    core = sorted((row for row in live.values() if row[5] == "active" and row[2] in CORE_CATEGORIES
                   and row[4] >= CORE_CONFIDENCE), key=lambda r: (-r[6], -r[4], -r[7], r[0]))[:limits.core]
    found += [("core", r[0], r[2], r[3], r[4], r[4], place) for place, r in enumerate(core, 1)]
    active = sorted(live.values(), key=lambda r: (-r[7], r[0]))[:limits.core + limits.active]
    found += [("active", r[0], r[2], r[3], r[4], r[7], place) for place, r in enumerate(active, 1)]
    query = terms(prompt)
    if query and limits.recalled > 0:
        n, avgdl, df = snapshot["n"], snapshot["avgdl"], snapshot["df"]
        scores: dict[str, float] = {}
        for term, qtf in query.items():
            for belief_id, tf in snapshot["postings"].get(term, ()):
                row = live.get(belief_id)
                if row is None:
                    continue
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                scores[belief_id] = scores.get(belief_id, 0.0) + qtf * idf * tf * (BM25_K1 + 1) / (
                    tf + BM25_K1 * (1 - BM25_B + BM25_B * row[8] / avgdl))
        ranked = sorted(scores, key=lambda i: (-round(scores[i], SCORE_DECIMALS), -live[i][7], i))
        ranked = ranked[:limits.core + limits.active + limits.recalled]
        found += [("recalled", i, live[i][2], live[i][3], live[i][4], scores[i], place)
                  for place, i in enumerate(ranked, 1)]
    return [Line(row[1], row[0], row[2], row[3], row[4], float(row[5]), ()) for row in dedupe(found, limits)]
