"""Benchmark of reading a whole history (not a test): the stdlib reference, `run --dry-run`, a full offline run.

    python tests/bench/bench_history.py [--mb 95] [--sessions 8704] [--full-mb 6] [--repeat 3] [--corpus DIR]

The corpus is tests/bench/corpus.py's synthetic OpenClaw sessions, message-text heavy (no large tool results or
images) and with distinct session ids (8 agents, --sessions in all). Three figures, each the median of --repeat runs, in MB/s of transcript bytes:
- reference: every line parsed with stdlib `json`, and a handful of regexes over each message's text, the floor
  a scan that does its work should beat;
- dry run: `run_once(dry_run=True)`: parse, clean, prefilter, redact and pack, nothing recorded; with the scan
  spread over worker processes as configured by default (scan_workers = auto), then in the main process alone,
  each with the CPU seconds of the main process and of the workers;
- full run: `run_once` with the rules extractor into a fresh state dir, over the first --full-mb of sessions,
  with the bytes the process wrote (from /proc/self/io: batch files, DuckDB and its WAL).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent.parent)]
import corpus

from distiller import pipeline
from distiller.config import Settings

_REFERENCE_PATTERNS = [re.compile(p) for p in (
    r"<relevant-memories>.*?</relevant-memories>", r"sk-ant-[A-Za-z0-9_-]{20,}", r"\b(?:password|token)\s*[:=]",
    r"^\s*(?:ok|thanks|hi|hello)\b", r"HEARTBEAT_OK|NO_REPLY",
)]


def message_heavy_corpus(root: Path, target_bytes: int, sessions: int, agents: int = 8, seed: int = 0) -> None:
    """Distinct sessions of conversation, no large tool results or images: what screening and extraction work on.
    Each session gets an equal share of the bytes (it stops after the turn that crosses it)."""
    budget = max(2_000, int(target_bytes / sessions * 0.54))  # a session overshoots its share by about 85 %
    stats = corpus.CorpusStats()
    per_agent: dict[int, list] = {a: [] for a in range(agents)}
    pools = [corpus._pools("anthropic" if a % 2 == 0 else "openai") for a in range(agents)]
    for i in range(sessions):
        a = i % agents
        sdir = root / corpus._agent_name(a) / "sessions"
        sdir.mkdir(parents=True, exist_ok=True)
        rng = random.Random(f"history:{seed}:{i}")
        start = corpus.BASE_TIME_MS + rng.randint(0, 400 * 86_400_000)
        per_agent[a].append(corpus._write_session(sdir, rng, pools[a], start, budget, stats, large=False))
    for a, written in per_agent.items():
        corpus._write_index(root / corpus._agent_name(a), corpus._agent_name(a), written)


def _files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.jsonl"))


def reference(root: Path) -> int:
    """Parse every line with json and run the patterns over each message's text; returns bytes read."""
    total = 0
    for path in _files(root):
        data = path.read_bytes()
        total += len(data)
        for line in data.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            message = entry.get("message") if isinstance(entry, dict) else None
            if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
                continue
            content = message.get("content")
            texts = [content] if isinstance(content, str) else [
                c.get("text", "") for c in content or () if isinstance(c, dict) and c.get("type") == "text"]
            for text in texts:
                for pattern in _REFERENCE_PATTERNS:
                    pattern.search(text)
    return total


def _written() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("write_bytes:"):
            return int(line.split()[1])
    return 0


def _cpu() -> tuple[float, float]:
    """CPU seconds used so far by this process, and by its children that ended (the scan workers)."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, children.ru_utime + children.ru_stime


def _timed(fn) -> tuple[float, object]:
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def _subset(root: Path, out: Path, limit: int) -> int:
    """Copy whole sessions, agent by agent in turn, until `limit` bytes."""
    by_agent = [sorted((d / "sessions").glob("*.jsonl")) for d in sorted(root.iterdir()) if d.is_dir()]
    total = 0
    for group in zip(*by_agent, strict=False):  # as many rounds as the smallest agent has sessions
        for path in group:
            target = out / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            total += path.stat().st_size
            if total >= limit:
                return total
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=95.0)
    parser.add_argument("--sessions", type=int, default=8704)
    parser.add_argument("--full-mb", type=float, default=6.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--corpus", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="distill-bench-history-"))
    try:
        root = args.corpus
        if root is None:
            root = work / "agents"
            message_heavy_corpus(root, int(args.mb * 1e6), args.sessions)
        size = sum(p.stat().st_size for p in _files(root))
        print(f"corpus: {len(_files(root))} sessions, {size / 1e6:.1f} MB")
        ref = [_timed(lambda: reference(root))[0] for _ in range(args.repeat)]
        print(f"reference (stdlib json + regexes): {size / 1e6 / statistics.median(ref):.1f} MB/s")
        for label, workers in (("", "auto"), (" in the main process alone (scan_workers = 0)", 0)):
            dry, cpu = [], []
            for _ in range(args.repeat):
                before = _cpu()
                dry.append(_timed(lambda workers=workers: pipeline.run_once(
                    Settings(state_dir=work / "dry", scan_workers=workers), [root], dry_run=True))[0])
                cpu.append(tuple(after - was for after, was in zip(_cpu(), before, strict=True)))
            main_cpu, workers_cpu = (statistics.median(c[i] for c in cpu) for i in (0, 1))
            print(f"run --dry-run scan{label}: {size / 1e6 / statistics.median(dry):.1f} MB/s "
                  f"(CPU: main process {main_cpu:.2f} s, scan workers {workers_cpu:.2f} s)")
        subset = work / "subset"
        sub_size = _subset(root, subset, int(args.full_mb * 1e6))
        runs, written = [], []
        for n in range(args.repeat):
            before = _written()
            state = work / f"state-{n}"
            runs.append(_timed(lambda state=state: pipeline.run_once(Settings(state_dir=state, extractor="rules"), [subset]))[0])
            written.append(_written() - before)
        print(f"full offline run (rules) over {sub_size / 1e6:.1f} MB: {sub_size / 1e6 / statistics.median(runs):.2f} "
              f"MB/s, {statistics.median(written) / 1e6:.1f} MB written ({statistics.median(written) / sub_size:.1f}× "
              "the corpus)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
