"""What holding the store open saves (not a test): DuckDB opens per run, and wall time, with and without holding.

    python tests/bench/bench_store_opens.py [--mb 30] [--repeat 5] [--work DIR] [--code DIR]

A real `python -m distiller run --extractor rules` subprocess, first on a synthetic corpus (tests/bench/corpus.py,
--mb, first run), then hourly: ~20 KB appended to three sessions, then a run, --repeat times. Each run is made twice,
interleaved so both see the same machine: as the code is (`held`), and with every span that keeps the database open
across several connections made a no-op (`plain`: each `connect` opens the file itself; `Store.open`/`hold`, or
the older `held`/`held_ahead`). The child counts its `duckdb.connect` calls (`connects`), the seconds spent in them,
and those that took over 3 ms (`file_opens`: a connect to a database already open in the process costs ~0.2 ms;
opening the file, a new DuckDB instance, 11-15 ms). Medians are printed as JSON. `--code` runs
the package found in DIR instead of this checkout's (e.g. an older commit exported with `git archive`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import append_session_lines, write_corpus

# The child: counts the database opens; with BENCH_PLAIN, holds nothing open across connections.
CHILD = r"""
import atexit, contextlib, json, os, sys, time
import duckdb
opened = [0, 0.0, 0]
real_connect = duckdb.connect
def counting_connect(*args, **kwargs):
    started = time.perf_counter()
    try:
        return real_connect(*args, **kwargs)
    finally:
        took = time.perf_counter() - started
        opened[0] += 1
        opened[1] += took
        opened[2] += took > 0.003  # opened the file (a new DuckDB instance), not joined one already open
duckdb.connect = counting_connect
from distiller.store import db
if os.environ.get("BENCH_PLAIN") and hasattr(db, "Store"):
    db.Store.open = lambda self: None
    @contextlib.contextmanager
    def hold(self):
        yield
    db.Store.hold = hold
if os.environ.get("BENCH_PLAIN"):
    if hasattr(db, "held"):
        @contextlib.contextmanager
        def held(path, *, wait_seconds=5.0):
            yield
        db.held = held
    if hasattr(db, "held_ahead"):
        @contextlib.contextmanager
        def held_ahead(path, first, *, wait_seconds=5.0):
            with db.connect(path, wait_seconds=wait_seconds) as con:
                first(con)
            yield
        db.held_ahead = held_ahead
atexit.register(lambda: print("BENCH " + json.dumps({"connects": opened[0], "open_s": opened[1],
                                                     "file_opens": opened[2]}), file=sys.stderr))
from distiller.__main__ import main
sys.argv[0] = "distill"
main()
"""


def run(state: Path, source: Path, plain: bool, code: Path | None) -> dict:
    env = {**os.environ, "BENCH_PLAIN": "1" if plain else ""}
    if code is not None:
        env["PYTHONPATH"] = str(code)
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, "--json", "--state-dir", str(state), "run", "--extractor",
                           "rules", "--source", str(source)], capture_output=True, text=True, env=env, check=True,
                          cwd=code)
    wall = time.perf_counter() - started
    counted = json.loads(next(line for line in proc.stderr.splitlines() if line.startswith("BENCH "))[6:])
    return {"wall_s": wall, **counted, "messages": json.loads(proc.stdout)["messages"]}


def medians(runs: list[dict]) -> dict:
    return {"wall_s": round(statistics.median(r["wall_s"] for r in runs), 3),
            "connects": statistics.median(r["connects"] for r in runs),
            "file_opens": statistics.median(r["file_opens"] for r in runs),
            "open_s": round(statistics.median(r["open_s"] for r in runs), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--code", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="distill-bench-opens-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        corpus = work / "corpus"
        if not corpus.exists():
            write_corpus(corpus, target_bytes=args.mb * 1024 * 1024, agents=4, seed=3)
        sessions = sorted(corpus.rglob("*.jsonl"))
        results: dict[str, object] = {}
        for kind in ("held", "plain"):
            shutil.rmtree(work / f"state-{kind}", ignore_errors=True)
        first = {kind: [run(work / f"state-{kind}", corpus, kind == "plain", args.code)]
                 for kind in ("held", "plain")}
        results["first_run"] = {kind: medians(runs) for kind, runs in first.items()}
        hourly: dict[str, list[dict]] = {"held": [], "plain": []}
        for attempt in range(args.repeat):
            for kind in ("held", "plain"):
                copy = work / f"corpus-{kind}"
                if attempt == 0:
                    shutil.rmtree(copy, ignore_errors=True)
                    shutil.copytree(corpus, copy)
                    run(work / f"state-{kind}", copy, kind == "plain", args.code)  # the copy's first run
                for n, path in enumerate(sessions[:3]):
                    append_session_lines(copy / path.relative_to(corpus), 20 * 1024, seed=100 * attempt + n)
                hourly[kind].append(run(work / f"state-{kind}", copy, kind == "plain", args.code))
        results["hourly_run"] = {kind: medians(runs) for kind, runs in hourly.items()}
        held, plain = (results["hourly_run"][k]["wall_s"] for k in ("held", "plain"))  # type: ignore[index]
        results["hourly_saved_ms"] = round(1000 * (plain - held), 1)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
