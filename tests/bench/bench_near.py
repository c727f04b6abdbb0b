"""Benchmark of near-duplicate lookup (not a test): the set-similarity index against the plain per-group comparison.

    python tests/bench/bench_near.py [--beliefs 20000,100000] [--commit 50,500] [--repeats 7] [--work DIR]

A store of synthetic beliefs (bench_store.py's candidates, upserted in passes of 10,000) is built for each size;
then each run-sized commit of fresh candidates (the same generator continued: new statements, repeats and
rewordings of stored ones) looks up its near duplicates both ways, on the same database:

- `plain`: each candidate compared with every stored belief of its own (scope, category, subject) group and with
  the commit's other candidates of that group; Jaro-Winkler first, then the word-level Jaccard
  (store/near.py, what the store uses);
- `index`: the prefix-filtering index the store used before m020 (a few keys per wording, keyed by DuckDB's
  `hash()`), defined here as it was: the lookup through the keys, plus what keeping the index cost each commit
  (computing and inserting the new wordings' keys), plus building it once over the stored beliefs.

Both must return the same pairs; the figures are medians over `--repeats` commits, in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store import START, candidates

from distiller.store import near
from distiller.store import writes as store
from distiller.store.bulk import pack, rows
from distiller.store.db import connect, transaction
from distiller.store.keys import normalize, slot_part

INDEX_JACCARD = 0.6


def keys(source: str, words: str = "words") -> str:
    """The index's keys, (id, key) for every key of the `words` of each row of `source` (as word_index.py had it)."""
    return f"""(
        WITH ranked AS MATERIALIZED (
            SELECT id, n, word_key, row_number() OVER (PARTITION BY id ORDER BY word_key) AS r
            FROM (SELECT id, n, hash(scope, category, subject, token) AS word_key
                  FROM (SELECT id, scope, category, subject, len(string_split({words}, ' ')) AS n,
                               unnest(string_split({words}, ' ')) AS token
                        FROM {source} WHERE {words} <> ''))
        ),
        prefix AS MATERIALIZED (
            SELECT * FROM ranked WHERE n >= 3 AND r <= n - ceil({INDEX_JACCARD} * n - 1e-9)::BIGINT + 3
        )
        SELECT id, word_key AS key FROM ranked WHERE n = 1
        UNION ALL
        SELECT a.id, xor(a.word_key, b.word_key) FROM ranked a JOIN ranked b ON a.id = b.id AND a.r < b.r
        WHERE a.n <= 3
        UNION ALL
        SELECT a.id, xor(xor(a.word_key, b.word_key), c.word_key)
        FROM prefix a JOIN prefix b ON a.id = b.id AND a.r < b.r JOIN prefix c ON b.id = c.id AND b.r < c.r
    )"""


_CANDIDATES = {"id": "BIGINT", "scope": "VARCHAR", "category": "VARCHAR", "subject": "VARCHAR", "words": "VARCHAR",
               "sig": "VARCHAR"}
INDEX_SQL = f"""
WITH cand AS MATERIALIZED (SELECT * FROM {rows(_CANDIDATES)}),
probe AS MATERIALIZED {keys("cand")},
other AS MATERIALIZED (
    SELECT s.id, b.belief_id AS ref, b.sig, b.words, b.scope, b.category, b.subject
    FROM (SELECT DISTINCT p.id, w.belief_id FROM probe p JOIN bench_index w USING (key)) s
    JOIN beliefs b ON b.belief_id = s.belief_id
    UNION ALL
    SELECT x.id, '#' || x.other, o.sig, o.words, o.scope, o.category, o.subject
    FROM (SELECT DISTINCT p.id, q.id AS other FROM probe p JOIN probe q USING (key) WHERE p.id <> q.id) x
    JOIN cand o ON o.id = x.other
),
alike AS MATERIALIZED (
    SELECT o.id, o.ref, o.sig, c.words AS a, o.words AS b, jaro_winkler_similarity(c.words, o.words) AS jw
    FROM other o JOIN cand c USING (id)
    WHERE (o.scope, o.category, o.subject) = (c.scope, c.category, c.subject) AND jw >= $jaro_winkler
),
scored AS MATERIALIZED (
    SELECT id, ref, sig, jw, token_jaccard(string_split(a, ' '), string_split(b, ' ')) AS jac FROM alike
)
SELECT * FROM scored WHERE jac >= $jaccard
"""
MAINTAIN_SQL = f"INSERT INTO bench_index SELECT key, id::VARCHAR FROM {keys(f'(SELECT * FROM {rows(_CANDIDATES)})')}"


def build(db: Path, n_beliefs: int) -> int:
    """A store of about n_beliefs beliefs; the number of candidates that took."""
    n = int(n_beliefs / 0.795)  # bench_store's mix leaves about 0.8 beliefs per candidate
    data = candidates(n)
    now = START + timedelta(seconds=30 * n)
    with connect(db) as con:
        for number, start in enumerate(range(0, n, store.PASS_SIZE)):
            with transaction(con):
                store.upsert(con, data[start:start + store.PASS_SIZE], f"build{number}", now=now)
    return n


def params(batch) -> dict:
    norms = [normalize(b.statement) for b in batch]
    return {"rows": pack(id=list(range(len(batch))), scope=[b.scope for b in batch],
                         category=[b.category for b in batch], subject=[slot_part(b.subject) for b in batch],
                         words=[" ".join(n.tokens) for n in norms], sig=[n.sig for n in norms])}


def timed(fn) -> tuple[float, object]:
    started = time.perf_counter()
    result = fn()
    return (time.perf_counter() - started) * 1000, result


def measure(db: Path, stored: int, commit: int, repeats: int) -> dict:
    fresh = candidates(stored + commit * repeats)[stored:]
    thresholds = {"jaro_winkler": store.StoreSettings().near_jaro_winkler, "jaccard": store.StoreSettings().near_jaccard}
    plain, lookup, upkeep = [], [], []
    with connect(db) as con:
        con.execute("CREATE OR REPLACE TEMP TABLE bench_index (key UBIGINT, belief_id VARCHAR)")
        build_ms, _ = timed(lambda: con.execute(
            f"INSERT INTO bench_index SELECT key, id FROM "
            f"{keys('(SELECT belief_id AS id, scope, category, subject, words FROM beliefs)')}"))
        size = con.execute("SELECT count(*) FROM bench_index").fetchone()[0]
        for r in range(repeats):
            p = params(fresh[r * commit:(r + 1) * commit])
            ms, by_plain = timed(lambda p=p: con.execute(near.NEAR_SQL, {**p, **thresholds}).fetchall())
            plain.append(ms)
            ms, by_index = timed(lambda p=p: con.execute(INDEX_SQL, {**p, **thresholds}).fetchall())
            lookup.append(ms)
            if sorted(by_plain) != sorted(by_index):
                raise SystemExit(f"the two paths disagree on commit {r}: {len(by_plain)} vs {len(by_index)} pairs")
            con.execute("BEGIN TRANSACTION")
            ms, _ = timed(lambda p=p: con.execute(MAINTAIN_SQL, p))
            con.execute("ROLLBACK")
            upkeep.append(ms)
    med = statistics.median
    return {"commit": commit, "plain_ms": round(med(plain), 1), "index_lookup_ms": round(med(lookup), 1),
            "index_upkeep_ms": round(med(upkeep), 1), "index_total_ms": round(med(lookup) + med(upkeep), 1),
            "index_build_ms": round(build_ms), "index_rows": size, "pairs_found": len(by_plain)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--beliefs", default="20000,100000")
    parser.add_argument("--commit", default="50,500")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--work", type=Path, default=None, help="scratch dir (default: a temp dir, removed after)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="distill-bench-near-"))
    work.mkdir(parents=True, exist_ok=True)
    report = []
    try:
        for size in (int(s) for s in args.beliefs.split(",")):
            db = work / f"near{size}.duckdb"
            stored = build(db, size) if not db.exists() else int(size / 0.795)
            with connect(db, read_only=True) as con:
                beliefs, groups, largest = con.execute(
                    "SELECT sum(n), count(*), max(n) FROM (SELECT count(*) AS n FROM beliefs "
                    "GROUP BY scope, category, subject)").fetchone()
            for commit in (int(c) for c in args.commit.split(",")):
                report.append({"beliefs": int(beliefs), "groups": groups, "largest_group": largest,
                               **measure(db, stored, commit, args.repeats)})
                print(json.dumps(report[-1]), file=sys.stderr)
        json.dump(report, sys.stdout, indent=2)
        print()
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
