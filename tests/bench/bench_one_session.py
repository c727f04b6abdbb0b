"""Peak RSS of a first run on one huge session (not a test): memory is bounded by the batch budget, not the file.

    python tests/bench/bench_one_session.py [--messages 72000] [--repeat 1] [--tracemalloc]

One session file of --messages messages (about 19 MB at the default: distinct ids, user and assistant turns of
varied length, some of them facts the rules extractor learns, tool calls and results between them), read by a
real `python -m distiller run --extractor rules` subprocess; peak RSS is its ru_maxrss (the median of --repeat fresh
first runs). The target: at most 200 MB for any single file. `--tracemalloc` also prints where the child's Python
allocations peaked (top lines), to find what grows with the session.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

CHILD = """
import resource, runpy, sys, os
trace = os.environ.get("BENCH_TRACEMALLOC")
if trace:
    import tracemalloc
    tracemalloc.start(8)
sys.argv = ["distill", *sys.argv[1:]]
try:
    runpy.run_module("distiller", run_name="__main__")
finally:
    if trace:
        peak = tracemalloc.get_traced_memory()[1]
        snapshot = tracemalloc.take_snapshot()
        print(f"tracemalloc peak {peak / 2**20:.1f} MB; held at exit, by line:", file=sys.stderr)
        for stat in snapshot.statistics("lineno")[:12]:
            print("  ", stat, file=sys.stderr)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""

TOPICS = ["I live in Lisbon near the river crossing {i}", "I prefer green tea over coffee, blend {i}",
          "We decided to move the launch of project {i} to March", "My daughter plays the violin in orchestra {i}",
          "Can you check the build log {i} for me?", "thanks!", "ok", "What's the weather like at station {i}?",
          "I work as a nurse on night shifts at ward {i}", "Please summarise this article {i} about trains"]


def write_session(path: Path, messages: int) -> int:
    """Streamed to disk line by line: this process stays small, since a child's peak RSS starts from its parent's."""
    path.parent.mkdir(parents=True, exist_ok=True)
    total = 0
    with open(path, "wb") as f:
        total += f.write(orjson.dumps({"type": "session", "version": 3, "id": "one-huge-session",
                                       "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/home/u"}) + b"\n")
        for i in range(messages):
            minute, second = divmod(i, 60)
            day, hour = 1 + (minute // 1440) % 28, (minute // 60) % 24
            stamp = f"2026-03-{day:02d}T{hour:02d}:{minute % 60:02d}:{second:02d}.000Z"
            role = "user" if i % 2 == 0 else "assistant"
            text = TOPICS[(i // 2) % len(TOPICS)].format(i=i)
            if role == "assistant":
                text = f"Sure, here is what I found about item {i}: " + "details " * (i % 40)
            total += f.write(orjson.dumps({
                "type": "message", "id": f"{i:08x}", "parentId": f"{i - 1:08x}" if i else None, "timestamp": stamp,
                "message": {"role": role, "content": [{"type": "text", "text": text}]},
            }) + b"\n")
    return total


def first_run(state: Path, agents: Path, trace: bool) -> tuple[float, dict, str]:
    env = {**__import__("os").environ, **({"BENCH_TRACEMALLOC": "1"} if trace else {})}
    proc = subprocess.run([sys.executable, "-c", CHILD, "--json", "--state-dir", str(state), "run", "--extractor",
                           "rules", "--source", str(agents)], capture_output=True, text=True, env=env)
    rss_kb = int(proc.stderr.strip().splitlines()[-1])
    if proc.returncode != 0:
        raise SystemExit(f"run failed ({proc.returncode}): {proc.stderr}")
    return rss_kb / 1024, json.loads(proc.stdout), proc.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=72_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--tracemalloc", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="distill-bench-one-"))
    try:
        size = write_session(work / "agents" / "main" / "sessions" / "huge.jsonl", args.messages)
        peaks, summary, stderr = [], {}, ""
        for r in range(args.repeat):
            peak, summary, stderr = first_run(work / f"state{r}", work / "agents", args.tracemalloc)
            peaks.append(peak)
        if args.tracemalloc:
            print("\n".join(line for line in stderr.splitlines() if line.startswith(("tracemalloc", "   "))))
        print(json.dumps({
            "file_mb": round(size / 2**20, 1), "messages": args.messages,
            "first_run_peak_rss_mb": [round(p, 1) for p in peaks],
            "median_peak_rss_mb": round(statistics.median(peaks), 1),
            "messages_ingested": summary["messages"], "batches": summary["batches"],
            "candidates": summary["candidates"], "rejected": summary["rejected"], "beliefs": summary["beliefs"],
            "target_mb": 200,
        }, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
