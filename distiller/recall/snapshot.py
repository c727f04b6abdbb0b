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
from typing import TYPE_CHECKING, TypedDict, cast

import orjson

from distiller.recall import SNAPSHOT_FILE
from distiller.recall.lines import (
    BM25_B,
    BM25_K1,
    CORE_CATEGORIES,
    CORE_CONFIDENCE,
    SCORE_DECIMALS,
    Found,
    Limits,
    Line,
    dedupe,
)
from distiller.terms import terms

if TYPE_CHECKING:
    import duckdb

    from distiller.store.activation import Decay

VERSION = 1

Stamp = list[list[int] | None]  # per file (the database, its WAL): inode, size, mtime in ns; None: no such file
# A belief as the snapshot keeps it: id, scope, category, statement, confidence, status, importance, activation,
# length, normalised statement.
Row = tuple[str, str, str, str, float, str, int, float, float, str]


class Snapshot(TypedDict):
    """The snapshot's layout (see build); `version` changes with it."""

    version: int
    stamp: Stamp
    n: int  # beliefs with a length
    avgdl: float
    beliefs: list[str]  # each a JSON Row
    scopes: list[str]
    scope_of: str  # per belief, the index of its scope in `scopes`, comma-separated
    lengths: str
    core: str  # positions in `beliefs`, in the tier's order, comma-separated
    active: str
    postings: dict[str, str]  # term: "position,doubled count,…"
    df: dict[str, int]


def stamp(db_path: Path) -> Stamp:
    """What any write to the database changes: its file's and its WAL's inode, size and mtime."""
    found: Stamp = []
    for path in (db_path, db_path.with_name(db_path.name + ".wal")):
        try:
            st = os.stat(path)
        except FileNotFoundError:
            found.append(None)
        else:
            found.append([st.st_ino, st.st_size, st.st_mtime_ns])
    return found


def build(con: duckdb.DuckDBPyConnection, db_path: Path, *, settings: Decay | None = None,
          now: datetime) -> Snapshot:
    """The snapshot of the store `con` reads (a read-only connection holds off every writer while it is open).

    Laid out to be parsed in a few ms whatever the store's size: each belief is one JSON text decoded only when a
    recall looks at it; the core and active tiers' orders are precomputed (prompt-independent: a scope filter
    keeps their order); each term's postings are one text of "position,count,…" split only for the prompt's
    terms, and the scope and length of every belief are one text each. Counts are twice the weighted count (a
    quote's term weighs half), so they stay integers. Each belief carries its normalised statement (the dedupe's
    key), so the hook need not import the normalisation."""
    from distiller.recall.select import LENGTH, WEIGHTED_TF, live_cte  # the same beliefs, activation and BM25F
    from distiller.store import scalars
    from distiller.store.activation import activation_params

    live, params = live_cte(None)
    params |= activation_params(settings, now)
    weighted, length = WEIGHTED_TF, LENGTH
    beliefs = con.execute(
        f"WITH {live} SELECT v.belief_id, v.scope, v.category, v.statement, v.confidence, v.status, v.importance, "
        f"v.activation, "
        f"coalesce(({length})::DOUBLE, 0) FROM live v LEFT JOIN belief_lengths l USING (belief_id) "
        "ORDER BY v.belief_id",
        params).fetchall()
    position = {row[0]: n for n, row in enumerate(beliefs)}
    postings: dict[str, list[str]] = {}
    for term, belief_id, tf in con.execute(
            f"WITH {live} SELECT t.term, t.belief_id, (2 * sum({weighted}))::INTEGER FROM belief_terms t "
            "SEMI JOIN live USING (belief_id) GROUP BY t.term, t.belief_id ORDER BY ALL", params).fetchall():
        postings.setdefault(term, []).append(f"{position[belief_id]},{tf}")
    n, avgdl = scalars.one_row(con, f"SELECT greatest(count(*), 1), (greatest(sum({length}), 1) / greatest(count(*), "
                               "1))::DOUBLE FROM belief_lengths l")
    df = dict(con.execute("SELECT term, count(DISTINCT belief_id) FROM belief_terms GROUP BY term").fetchall())
    from distiller.store.keys import normalize

    scopes = sorted({row[1] for row in beliefs})
    core = sorted((n for n, r in enumerate(beliefs) if r[5] == "active" and r[2] in CORE_CATEGORIES
                   and r[4] >= CORE_CONFIDENCE), key=lambda n: (-beliefs[n][6], -beliefs[n][4], -beliefs[n][7],
                                                                beliefs[n][0]))
    active = sorted(range(len(beliefs)), key=lambda n: (-beliefs[n][7], beliefs[n][0]))
    return {"version": VERSION, "stamp": stamp(db_path), "n": n, "avgdl": avgdl,
            "beliefs": [orjson.dumps([*row, normalize(row[3]).text]).decode() for row in beliefs],
            "scopes": scopes, "scope_of": ",".join(str(scopes.index(row[1])) for row in beliefs),
            "lengths": ",".join(repr(row[8]) for row in beliefs),
            "core": ",".join(map(str, core)), "active": ",".join(map(str, active)),
            "postings": {term: ",".join(items) for term, items in postings.items()},
            "df": {term: df[term] for term in postings}}


def refresh(state_dir: Path, db_path: Path, *, now: datetime) -> bool:
    """After a run, a new snapshot in place of one the hook uses (none is made for a state dir without one), so
    the first prompt after the run is as quick as the others. True when one was written."""
    from distiller.store.db import connect

    if not (state_dir / SNAPSHOT_FILE).exists() or load(state_dir, db_path) is not None:
        return False
    with connect(db_path, read_only=True) as con:
        made = build(con, db_path, now=now)
    save(state_dir, made)
    return True


def save(state_dir: Path, snapshot: Snapshot) -> None:
    from distiller.recall import write_if_changed

    write_if_changed(state_dir / SNAPSHOT_FILE, orjson.dumps(snapshot).decode())


def load(state_dir: Path, db_path: Path, *, current: bool = True) -> Snapshot | None:
    """The saved snapshot when it matches the database files as they are (any, with current=False), else None."""
    try:
        snapshot = orjson.loads((state_dir / SNAPSHOT_FILE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(snapshot, dict) or snapshot.get("version") != VERSION:
        return None
    if current and snapshot.get("stamp") != stamp(db_path):
        return None
    # Our own file, of this version: taken as laid out. A field that is not (a damaged file) fails in rank(),
    # and the hook turns any failure into no context and a line in its log.
    return cast(Snapshot, snapshot)


def rank(snapshot: Snapshot, prompt: str, *, agent: str | None = None, limits: Limits = Limits()) -> list[Line]:
    """select.select's lines, from the snapshot (without their evidence ids: the block does not show them)."""
    texts = snapshot["beliefs"]
    wanted = None if agent is None else {"global", f"agent:{agent}"}
    allowed = [wanted is None or scope in wanted for scope in snapshot["scopes"]]
    decoded: dict[int, Row] = {}

    def row(place: int) -> Row:
        if place not in decoded:
            decoded[place] = tuple(orjson.loads(texts[place]))
        return decoded[place]

    scope_of = None  # per belief, whether it is in scope (None: every belief is)
    if wanted is not None:
        scope_of = [allowed[int(i)] for i in snapshot["scope_of"].split(",")] if texts else []

    def first(order: str, count: int) -> list[Row]:
        taken: list[Row] = []
        for place in map(int, order.split(",")) if order and count > 0 else ():
            if scope_of is None or scope_of[place]:
                taken.append(row(place))
                if len(taken) == count:
                    break
        return taken

    # rows as select.py's query gives them: (tier, id, category, statement, confidence, score, rank)
    found: list[Found] = [("core", r[0], r[2], r[3], r[4], r[4], place)
                          for place, r in enumerate(first(snapshot["core"], limits.core), 1)]
    found += [("active", r[0], r[2], r[3], r[4], r[7], place)
              for place, r in enumerate(first(snapshot["active"], limits.core + limits.active), 1)]
    query = terms(prompt)
    if query and limits.recalled > 0:
        n, avgdl, df = snapshot["n"], snapshot["avgdl"], snapshot["df"]
        lengths: list[float] | None = None
        scores: dict[int, float] = {}
        for term, qtf in query.items():
            posting = snapshot["postings"].get(term)
            if not posting:
                continue
            if lengths is None:
                lengths = [float(x) for x in snapshot["lengths"].split(",")]
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            numbers = list(map(int, posting.split(",")))
            for place, doubled in zip(numbers[::2], numbers[1::2], strict=True):
                if scope_of is not None and not scope_of[place]:
                    continue
                tf = doubled / 2
                scores[place] = scores.get(place, 0.0) + qtf * idf * tf * (BM25_K1 + 1) / (
                    tf + BM25_K1 * (1 - BM25_B + BM25_B * lengths[place] / avgdl))
        # the best by score alone, then their ties settled by activation and id as the SQL does
        keep = limits.core + limits.active + limits.recalled
        best = sorted(scores, key=lambda p: -round(scores[p], SCORE_DECIMALS))
        if len(best) > keep:
            edge = round(scores[best[keep - 1]], SCORE_DECIMALS)
            best = [p for p in best if round(scores[p], SCORE_DECIMALS) >= edge]
        ranked = sorted(best, key=lambda p: (-round(scores[p], SCORE_DECIMALS), -row(p)[7], row(p)[0]))[:keep]
        found += [("recalled", row(p)[0], row(p)[2], row(p)[3], row(p)[4], scores[p], place)
                  for place, p in enumerate(ranked, 1)]
    normalized = {r[0]: r[9] for r in decoded.values()}
    return [Line(r[1], r[0], r[2], r[3], r[4], float(r[5]), ()) for r in dedupe(found, limits, normalized)]
