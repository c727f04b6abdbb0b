"""Benchmark of the belief store (not a test): candidate upserts per second, replay cost, DB size.

    python tests/bench/bench_store.py [--candidates 100000] [--batch 1000] [--work DIR] [--floor]

Synthetic candidates shaped like extractor output: most about the subject "user", six categories, four scopes,
about 10% exact repeats from later sessions, 5% reworded near duplicates, 30% with a slot (some superseding),
one or two evidence items each. Each batch is one transaction: `--batch 1000` is the size of a run's commit,
`--batch 10000` or more a bulk load (an import, a reprocess), which the store takes in passes of 10,000.

`--floor` also measures what no upsert can beat on this machine: the rows the first pass ended with, written into a
fresh database in as many transactions (packing, inserts, commits; no lookups, no decisions), and normalizing every
statement once.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from distiller.records import Belief, EvidenceItem
from distiller.store import writes as store
from distiller.store.bulk import pack, rows
from distiller.store.db import connect, transaction
from distiller.store.keys import normalize

VERBS = "likes prefers uses owns wants avoids enjoys dislikes reads plays visits builds studies collects".split()
TAILS = ("in the morning|at work|on weekends|with friends|for relaxing|every day|when travelling|at home|"
         "in winter|for focus|after lunch|before bed").split("|")
SYLLABLES = "ka lo mi ne ru sa te vo zi pa do ge hu ji ko".split()
CATEGORIES = ("identity", "goal", "preference", "decision", "fact", "implicit_inference")
SCOPES = ("agent:main", "agent:main", "agent:work", "global")
SUBJECTS = ("user",) * 8 + ("user's daughter", "user's team")
START = datetime(2026, 1, 1, tzinfo=UTC)


def candidates(n: int, seed: int = 1) -> list[Belief]:
    rng = random.Random(seed)
    # Content words follow Zipf's law over a 3,000-word vocabulary, as words in real statements do.
    vocabulary = sorted({"".join(rng.choices(SYLLABLES, k=rng.randint(2, 4))) for _ in range(4000)})[:3000]
    rng.shuffle(vocabulary)
    weights = [1 / rank for rank in range(1, len(vocabulary) + 1)]

    def words(k: int) -> str:
        return " ".join(rng.choices(vocabulary, weights, k=k))

    made: list[Belief] = []
    for i in range(n):
        ts = (START + timedelta(seconds=30 * i)).isoformat()
        session = f"s{i // 40}"
        roll = rng.random()
        if made and roll < 0.10:  # the same belief, said again in a later session
            old = rng.choice(made)
            statement, category, subject, attribute, scope = (old.statement, old.category, old.subject,
                                                              old.attribute, old.scope)
        elif made and roll < 0.15:  # reworded
            old = rng.choice(made)
            statement, category, subject, attribute, scope = (f"The {old.statement.lower()} too", old.category,
                                                              old.subject, old.attribute, old.scope)
        else:
            statement = (f"{rng.choice(['User', 'The user'])} {rng.choice(VERBS)} {words(rng.randint(2, 4))} "
                         f"{rng.choice(TAILS)}")
            category, subject, scope = rng.choice(CATEGORIES), rng.choice(SUBJECTS), rng.choice(SCOPES)
            attribute = f"slot{rng.randrange(2000)}" if rng.random() < 0.3 else ""
        evidence = tuple(
            EvidenceItem(f"m{i}-{k}", session, scope.removeprefix("agent:") if scope != "global" else "main",
                         f"/agents/main/sessions/{session}.jsonl", 1000 * i, 1000 * i + 400, ts, statement[:40])
            for k in range(1 + (rng.random() < 0.3))
        )
        made.append(Belief(statement, category, subject, attribute, round(rng.uniform(0.55, 0.95), 2),
                           rng.choice(["explicit", "implied"]), rng.randint(1, 10),
                           rng.choice(["low", "medium", "high"]), None, scope, evidence, "bench", None, "v1"))
    return made


def upsert_all(db: Path, batches: list[list[Belief]], now: datetime) -> tuple[float, dict]:
    totals: dict[str, int] = {}
    started = time.perf_counter()
    with connect(db) as con:
        for number, batch in enumerate(batches):
            with transaction(con):
                result = store.upsert(con, batch, f"run{number}", now=now)
            for key, value in result.as_dict().items():
                totals[key] = totals.get(key, 0) + value
    return time.perf_counter() - started, totals


WRITTEN = ("beliefs", "evidence", "belief_keys")


def write_floor(db: Path, copy: Path, transactions: int) -> float:
    """Seconds to write the final rows of `db` into `copy`, split by belief into `transactions` commits, each written
    in parts of at most PASS_SIZE beliefs (as the store writes its passes)."""
    with connect(db, read_only=True) as con:
        tables = {}
        for name in WRITTEN:
            cursor = con.execute(f"SELECT * FROM {name}")
            tables[name] = ([d[0] for d in cursor.description], [str(d[1]) for d in cursor.description],
                            cursor.fetchall())
    ids = sorted({row[0] for row in tables["beliefs"][2]})
    per_transaction = -(-len(ids) // transactions // store.PASS_SIZE)  # parts per transaction
    count = transactions * per_transaction
    part_of = {belief_id: i * count // len(ids) for i, belief_id in enumerate(ids)}
    parts = {name: [[] for _ in range(count)] for name in WRITTEN}
    for name, (columns, _, data) in tables.items():
        at = columns.index("belief_id")
        for row in data:
            parts[name][part_of.get(row[at], 0)].append(row)
    with connect(copy) as con:
        started = time.perf_counter()
        for number in range(transactions):
            with transaction(con):
                for part in range(number * per_transaction, (number + 1) * per_transaction):
                    for name, (columns, types, _) in tables.items():
                        chunk = parts[name][part]
                        con.execute(f"INSERT INTO {name} SELECT * FROM {rows(dict(zip(columns, types, strict=True)))}",
                                    {"rows": pack(**{c: [row[i] for row in chunk] for i, c in enumerate(columns)})})
        return time.perf_counter() - started


def normalize_floor(data: list[Belief]) -> float:
    normalize.cache_clear()
    started = time.perf_counter()
    for belief in data:
        normalize(belief.statement)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--work", type=Path, default=None, help="scratch dir (default: a temp dir, removed after)")
    parser.add_argument("--floor", action="store_true", help="also measure the write-only and normalize-only floor")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="distill-bench-store-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        data = candidates(args.candidates)
        batches = [data[i:i + args.batch] for i in range(0, len(data), args.batch)]
        now = START + timedelta(seconds=30 * args.candidates)
        db = work / "bench.duckdb"
        seconds, totals = upsert_all(db, batches, now)
        replay_seconds, replay = upsert_all(db, batches, now)
        with connect(db, read_only=True) as con:
            rows = dict(con.execute(
                "SELECT 'beliefs', count(*) FROM beliefs UNION ALL SELECT 'evidence', count(*) FROM evidence"
            ).fetchall())
        small = work / "small.duckdb"
        small_seconds, _ = upsert_all(small, [data[i:i + 20] for i in range(0, 2000, 20)], now)
        report = {
            "candidates": args.candidates,
            "batch": args.batch,
            "first_pass": {"seconds": round(seconds, 2), "candidates_per_s": round(args.candidates / seconds),
                           **totals},
            "replay": {"seconds": round(replay_seconds, 2),
                       "candidates_per_s": round(args.candidates / replay_seconds), "replayed": replay["replayed"]},
            "rows": rows,
            "db_mb": round(db.stat().st_size / 1e6, 1),
            "small_batches_of_20_ms_each": round(small_seconds / 100 * 1000, 1),
        }
        if args.floor:
            write_seconds = write_floor(db, work / "floor.duckdb", len(batches))
            normalize_seconds = normalize_floor(data)
            report["floor"] = {
                "write_only_seconds": round(write_seconds, 2), "normalize_only_seconds": round(normalize_seconds, 2),
                "candidates_per_s_at_best": round(args.candidates / (write_seconds + normalize_seconds)),
            }
        json.dump(report, sys.stdout, indent=2)
        print()
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
