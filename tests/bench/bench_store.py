"""Benchmark of the belief store (not a test): candidate upserts per second, replay cost, DB size.

    python tests/bench/bench_store.py [--candidates 100000] [--batch 1000] [--work DIR]

Synthetic candidates shaped like extractor output: most about the subject "user", six categories, four scopes,
about 10% exact repeats from later sessions, 5% reworded near duplicates, 30% with a slot (some superseding),
one or two evidence items each. Each batch is one transaction: `--batch 1000` is the size of a run's commit,
`--batch 10000` or more a bulk load (an import, a reprocess), which the store takes in passes of 10,000.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from distiller.records import Belief, EvidenceItem
from distiller.store import beliefs as store
from distiller.store.db import connect, transaction

VERBS = "likes prefers uses owns wants avoids enjoys dislikes reads plays visits builds studies collects".split()
TAILS = ("in the morning|at work|on weekends|with friends|for relaxing|every day|when travelling|at home|"
         "in winter|for focus|after lunch|before bed").split("|")
SYLLABLES = "ka lo mi ne ru sa te vo zi pa do ge hu ji ko".split()
CATEGORIES = ("identity", "goal", "preference", "decision", "fact", "implicit_inference")
SCOPES = ("agent:main", "agent:main", "agent:work", "global")
SUBJECTS = ("user",) * 8 + ("user's daughter", "user's team")
START = datetime(2026, 1, 1, tzinfo=timezone.utc)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--work", type=Path, default=None, help="scratch dir (default: a temp dir, removed after)")
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
        json.dump(report, sys.stdout, indent=2)
        print()
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
