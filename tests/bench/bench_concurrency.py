"""Benchmark of model requests in flight at once (not a test): the real SDK against the fake Messages API.

    python tests/bench/bench_concurrency.py [--requests 200] [--latency 1.0] [--concurrency 4] [--sequential]

One batch of --requests requests (each long message in a request of its own), the fake answering each after
--latency seconds. Three figures:
- plain: wall time at the default concurrency (target: 200 requests at 1 s in ≤ 60 s), and the bytes the process
  wrote (from /proc/self/io: batch file, its journal, DuckDB and its WAL; the database is created first, not
  counted) against the transcript's size;
- pushed back: the same with every 20th call answered 429 (retry-after: 1 s) and every 33rd 529 (retry-after-ms:
  500): how often the API pushed back, how low the pace went, the wall time, and that every message and belief is
  committed exactly once;
- with --sequential, the plain run at concurrency 1 too (--requests × --latency seconds).
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent.parent)]
import duckdb
from conftest import append, message_line, new_session
from fakeapi import FakeAnthropic, Reply, error_body

from distiller.config import Settings
from distiller.extract.anthropic import AnthropicExtractor
from distiller.pipeline import run as pipeline
from distiller.pipeline import state as state_api

FILLER = " ".join(["and the notes I keep about the migration plan stay in the project wiki"] * 6)


def _written() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("write_bytes:"):
            return int(line.split()[1])
    return 0


def _corpus(root: Path, n: int) -> int:
    path = new_session(root)
    for i in range(n):
        append(path, message_line(f"I keep note {i:04d} in my journal, {FILLER}.", message_id=f"u{i:07d}"))
    return path.stat().st_size


def _settings(state: Path, concurrency: int) -> Settings:
    settings = Settings(state_dir=state, extractor="anthropic", request_budget_tokens=100)
    if "concurrency" in Settings.__dataclass_fields__:  # so the same bench measures a version without it
        settings = dataclasses.replace(settings, concurrency=concurrency)
    return settings


def _once(work: Path, name: str, fake: FakeAnthropic, concurrency: int) -> dict:
    extractor = AnthropicExtractor(api_key="bench", base_url=fake.base_url)
    state = work / name
    state_api.init(_settings(state, concurrency))  # creating the database is a fixed cost, not measured here
    before_calls = len(fake.message_requests())
    before, started = _written(), time.monotonic()
    summary = pipeline.run_once(_settings(state, concurrency), [work / "agents"], extractor=extractor)
    seconds, written = time.monotonic() - started, _written() - before
    with duckdb.connect(str(state / "distill.duckdb"), read_only=True) as con:
        ingested, distinct = con.execute("SELECT count(*), count(DISTINCT message_id) FROM ingested").fetchone()
        beliefs = con.execute("SELECT count(*) FROM beliefs").fetchone()[0]
    d = summary.as_dict()
    return {"seconds": seconds, "written": written, "calls": len(fake.message_requests()) - before_calls,
            "requests": d["requests"], "ingested": ingested, "distinct": distinct, "beliefs": beliefs,
            "overloaded": d.get("overloaded", 0), "lowest": d.get("concurrency_lowest"),
            "quarantined": d["quarantined_requests"]}


def _line(label: str, r: dict, size: int) -> str:
    return (f"{label}: {r['requests']} requests, {r['calls']} calls in {r['seconds']:.1f} s; "
            f"{r['ingested']} messages ({r['distinct']} distinct), {r['beliefs']} beliefs, "
            f"{r['quarantined']} quarantined; {r['written'] / 1e6:.2f} MB written "
            f"({r['written'] / size:.1f}× the transcript)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--sequential", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="distill-bench-concurrency-"))
    try:
        size = _corpus(work / "agents", args.requests)
        print(f"transcript: {args.requests} messages, {size / 1e6:.2f} MB; the fake answers in {args.latency:g} s")
        with FakeAnthropic(auto=True) as fake:
            fake.delay_seconds = args.latency
            plain = _once(work, "plain", fake, args.concurrency)
            print(_line(f"concurrency {args.concurrency}", plain, size))
            calls, lock = [0], threading.Lock()

            def push_back(_items, _earlier):
                with lock:
                    calls[0] += 1
                    n = calls[0]
                if n % 20 == 0:
                    return Reply(429, body=error_body("rate_limit_error", "bench"), headers={"retry-after": "1"})
                if n % 33 == 0:
                    return Reply(529, body=error_body("overloaded_error", "bench"), headers={"retry-after-ms": "500"})
                return None  # the auto answer

            fake.responder = push_back
            pushed = _once(work, "pushed", fake, args.concurrency)
            print(_line("with 429/529", pushed, size) + f"; pushed back {pushed['overloaded']} time(s), "
                  f"lowest concurrency {pushed['lowest']}")
            assert pushed["ingested"] == pushed["distinct"] == plain["ingested"], "a message committed twice or lost"
            assert pushed["beliefs"] == plain["beliefs"], "beliefs differ from the run that was not pushed back"
            fake.responder = None
            if args.sequential:
                print(_line("concurrency 1", _once(work, "sequential", fake, 1), size))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
