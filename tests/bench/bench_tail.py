"""Benchmark of the spine (not a test): scan and first-run throughput, no-op reruns, incremental cost, peak RSS.

    python tests/bench/bench_tail.py [--mb 1024] [--work DIR]

Every figure comes from a real `python -m distiller run` subprocess over a synthetic OpenClaw corpus
(tests/bench/corpus.py); peak RSS is the child's ru_maxrss. Throughput is JSONL bytes per second of wall time
and per CPU second (user + sys), the latter being the one-core figure. The scan is `run --dry-run` (read, parse,
screen, pack batches); the first run adds the offline extractor, verification and the belief store.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import append_session_lines, many_small_sessions, write_corpus  # noqa: E402


def distill_run(state: Path, source: Path, *extra: str) -> dict:
    """One CLI run; returns wall seconds, CPU seconds, peak RSS (MB) and the JSON summary."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "distiller", "--json", "--state-dir", str(state), "run", "--source", str(source),
         *extra],
        capture_output=True, text=True, check=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss_mb": after.ru_maxrss / 1024, "summary": json.loads(proc.stdout)}


def python_startup_seconds() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import distiller.cli"], check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1024, help="size of the big corpus")
    parser.add_argument("--small-files", type=int, default=10_000)
    parser.add_argument("--work", type=Path, default=None, help="scratch dir (default: a temp dir, removed after)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="distill-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, object] = {}
    try:
        big = work / "big"
        stats = write_corpus(big, target_bytes=args.mb * 1024 * 1024, agents=8, seed=1)
        mb = stats.bytes / 1e6
        results["corpus"] = {"files": stats.files, "mb": round(mb, 1), "lines": stats.lines}

        scan = distill_run(work / "state-scan", big, "--dry-run")
        results["scan_dry_run"] = {
            "wall_s": round(scan["wall_s"], 2),
            "mb_per_s_wall": round(mb / scan["wall_s"], 1),
            "mb_per_s_cpu": round(mb / scan["cpu_s"], 1),
        }
        first = distill_run(work / "state-big", big)
        results["first_run"] = {
            "wall_s": round(first["wall_s"], 2),
            "cpu_s": round(first["cpu_s"], 2),
            "mb_per_s_wall": round(mb / first["wall_s"], 1),
            "mb_per_s_cpu": round(mb / first["cpu_s"], 1),
            "peak_rss_mb": round(first["peak_rss_mb"], 1),
            "messages": first["summary"]["messages"],
        }

        noop_big = distill_run(work / "state-big", big)
        results["noop_rerun_big"] = {"wall_s": round(noop_big["wall_s"], 3), "files": stats.files}

        victim = sorted((big).rglob("*.jsonl"))[0]
        append_session_lines(victim, 1024 * 1024, seed=7)
        incremental = distill_run(work / "state-big", big)

        fresh = work / "fresh"
        write_corpus(fresh, target_bytes=1024 * 1024, agents=1, seed=9, sessions_per_agent=1)
        fresh_run = distill_run(work / "state-fresh", fresh)
        results["append_1mb"] = {
            "incremental_wall_s": round(incremental["wall_s"], 3),
            "incremental_bytes": incremental["summary"]["bytes_read"],
            "fresh_1mb_wall_s": round(fresh_run["wall_s"], 3),
            "fresh_bytes": fresh_run["summary"]["bytes_read"],
            "ratio": round(incremental["wall_s"] / fresh_run["wall_s"], 2),
        }

        small = work / "small"
        many_small_sessions(small, args.small_files)
        distill_run(work / "state-small", small)
        noop_small = distill_run(work / "state-small", small)
        results["noop_rerun_small_files"] = {
            "files": args.small_files,
            "wall_s": round(noop_small["wall_s"], 3),
            "python_startup_s": round(python_startup_seconds(), 3),
        }
        results["peak_rss_mb_max"] = round(max(r["peak_rss_mb"] for r in (first, incremental, noop_small)), 1)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
