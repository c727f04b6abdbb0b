"""Peak RSS of a first run on hostile input (not a test): the memory promise must hold when transcripts are odd.

    python tests/bench/bench_hostile.py [--sessions 40] [--messages 100] [--id-kb 100] [--repeat 3]

Each session's lines carry message ids, parent ids and a session id of --id-kb KB each (distinct per session), with
short texts, so ids rather than text make up most of what a commit holds. Every figure is a real
`python -m distiller run` subprocess; peak RSS is its ru_maxrss (the median of --repeat fresh first runs). A forked
child's ru_maxrss starts from its parent's RSS, so this script keeps itself small.. The README promises under 200 MB.
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
import resource, runpy, sys
sys.argv = ["distill", *sys.argv[1:]]
try:
    runpy.run_module("distiller", run_name="__main__")
finally:
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""


def write_hostile(agents: Path, sessions: int, messages: int, id_kb: int) -> int:
    """Streamed to disk line by line: this process stays small, since a child's peak RSS starts from its parent's."""
    total = 0
    pad = "x" * (id_kb * 1024)
    for s in range(sessions):
        sessions_dir = agents / f"agent{s % 4}" / "sessions"
        sessions_dir.mkdir(parents=True, exist_ok=True)
        with open(sessions_dir / f"session-{s:04d}.jsonl", "wb") as f:
            total += f.write(orjson.dumps({"type": "session", "version": 3, "id": f"s{s:04d}-{pad}",
                                           "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/home/u"}) + b"\n")
            for i in range(messages):
                total += f.write(orjson.dumps({
                    "type": "message", "id": f"m{s:04d}-{i:05d}-{pad}", "parentId": f"m{s:04d}-{i - 1:05d}-{pad}",
                    "timestamp": "2026-03-01T10:00:01.000Z",
                    "message": {"role": "user" if i % 2 == 0 else "assistant",
                                "content": [{"type": "text", "text": f"I prefer tea number {s}-{i} over coffee"}]},
                }) + b"\n")
    return total


def first_run(state: Path, agents: Path) -> tuple[float, dict]:
    proc = subprocess.run([sys.executable, "-c", CHILD, "--json", "--state-dir", str(state), "run", "--source",
                           str(agents)], capture_output=True, text=True)
    rss_kb = int(proc.stderr.strip().splitlines()[-1])
    if proc.returncode != 0:
        raise SystemExit(f"run failed ({proc.returncode}): {proc.stderr}")
    return rss_kb / 1024, json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--messages", type=int, default=100)
    parser.add_argument("--id-kb", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="distill-bench-hostile-"))
    try:
        size = write_hostile(work / "agents", args.sessions, args.messages, args.id_kb)
        peaks, summary = [], {}
        for r in range(args.repeat):
            peak, summary = first_run(work / f"state{r}", work / "agents")
            peaks.append(peak)
        second_peak, second = first_run(work / "state0", work / "agents")
        print(json.dumps({
            "corpus_mb": round(size / 2**20, 1), "sessions": args.sessions, "messages": args.messages,
            "id_kb": args.id_kb, "first_run_peak_rss_mb": [round(p, 1) for p in peaks],
            "median_peak_rss_mb": round(statistics.median(peaks), 1), "messages_ingested": summary["messages"],
            "batches": summary["batches"], "rerun_peak_rss_mb": round(second_peak, 1),
            "rerun_messages": second["messages"],
        }, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
