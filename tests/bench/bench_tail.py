"""Benchmark of the spine (not a test): scan and first-run throughput, no-op reruns, incremental cost, peak RSS.

    python tests/bench/bench_tail.py [--mb 1024] [--work DIR] [--repeat 3] [--compare-commit REV]

Every figure comes from a real `python -m distiller run` subprocess over a synthetic OpenClaw corpus
(tests/bench/corpus.py); peak RSS is the child's ru_maxrss. Throughput is JSONL bytes per second of wall time
and per CPU second (user + sys), the latter being the one-core figure. The scan is `run --dry-run` (read, parse,
screen, pack batches), the best of --repeat runs; the first run adds the offline extractor, verification and the
belief store. --compare-commit also scans with the package as it was at REV (exported with `git archive`, the
checkout untouched), its runs interleaved with the current ones so that both see the same machine, and reports how
much scan throughput the current code gives up against it (e.g. REV = 4a558de, the spine).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import append_session_lines, many_small_sessions, write_corpus

REPO = Path(__file__).resolve().parents[2]


def distill_run(state: Path, source: Path, *extra: str, code: Path | None = None) -> dict:
    """One CLI run (of the package in `code` when given); returns wall seconds, CPU seconds, peak RSS (MB) and the
    JSON summary."""
    env = None if code is None else {**os.environ, "PYTHONPATH": str(code)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "distiller", "--json", "--state-dir", str(state), "run", "--source", str(source),
         *extra],
        capture_output=True, text=True, check=True, cwd=code, env=env,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss_mb": after.ru_maxrss / 1024, "summary": json.loads(proc.stdout)}


def export_package(commit: str, into: Path) -> Path:
    """The distiller package as it was at commit, written under into."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, "distiller"], capture_output=True,
                             check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into)
    return into


def scan_figures(run: dict, mb: float) -> dict:
    return {"wall_s": round(run["wall_s"], 2), "mb_per_s_wall": round(mb / run["wall_s"], 1),
            "mb_per_s_cpu": round(mb / run["cpu_s"], 1)}


def python_startup_seconds() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import distiller.cli"], check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1024, help="size of the big corpus")
    parser.add_argument("--small-files", type=int, default=10_000)
    parser.add_argument("--work", type=Path, default=None, help="scratch dir (default: a temp dir, removed after)")
    parser.add_argument("--repeat", type=int, default=3, help="scans to take the best of")
    parser.add_argument("--compare-commit", metavar="REV", help="also scan with the package at this commit")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="distill-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, object] = {}
    try:
        big = work / "big"
        stats = write_corpus(big, target_bytes=args.mb * 1024 * 1024, agents=8, seed=1)
        mb = stats.bytes / 1e6
        results["corpus"] = {"files": stats.files, "mb": round(mb, 1), "lines": stats.lines}

        old_code = export_package(args.compare_commit, work / "old-code") if args.compare_commit else None
        scans, old_scans = [], []
        for attempt in range(args.repeat):
            scans.append(distill_run(work / f"state-scan-{attempt}", big, "--dry-run"))
            if old_code is not None:
                old_scans.append(distill_run(work / f"state-old-scan-{attempt}", big, "--dry-run", code=old_code))
        scan = min(scans, key=lambda r: r["wall_s"])
        results["scan_dry_run"] = scan_figures(scan, mb)
        if old_scans:
            old_scan = min(old_scans, key=lambda r: r["wall_s"])
            results["scan_dry_run_at_commit"] = {"commit": args.compare_commit, **scan_figures(old_scan, mb)}
            results["scan_throughput_cut_pct"] = round(100 * (1 - old_scan["wall_s"] / scan["wall_s"]), 1)
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

        victim = min(big.rglob("*.jsonl"))
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
