"""Report for distillation (not a test): a synthetic corpus through `distill run` and the fake Messages API.

    python tests/bench/bench_distill.py [--mb 20]

Prints requests per 1,000 kept messages, input tokens per kept message (uncached + cache read + cache write),
the share of input tokens served from the prompt cache, and candidates accepted vs rejected per reason.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
from corpus import write_corpus
from fakeapi import FakeAnthropic


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=20)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="distill-bench-distill-"))
    try:
        write_corpus(work / "agents", target_bytes=args.mb * 1024 * 1024, agents=4, seed=3)
        with FakeAnthropic(auto=True) as fake:
            env = {**os.environ, "ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": fake.base_url}
            proc = subprocess.run(
                [sys.executable, "-m", "distiller", "--json", "--state-dir", str(work / "state"), "run",
                 "--source", str(work / "agents")],
                capture_output=True, text=True, env=env, check=True,
            )
        s = json.loads(proc.stdout)
        kept = s["decisions"].get("keep", 0)
        prompt_input = s["input_tokens"] + s["cache_read_tokens"] + s["cache_write_tokens"]
        accepted = sum(v for k, v in s["beliefs"].items() if not k.startswith("refused")) if s["beliefs"] else 0
        report = {
            "corpus_mb": args.mb,
            "messages": s["messages"],
            "kept_messages": kept,
            "requests": s["requests"],
            "requests_per_1000_kept": round(1000 * s["requests"] / kept, 1) if kept else None,
            "input_tokens_per_kept_message": round(prompt_input / kept, 1) if kept else None,
            "cache_share_of_input_tokens": round(s["cache_read_tokens"] / prompt_input, 3) if prompt_input else None,
            "candidates": s["candidates"],
            "accepted_by_verification": s["candidates"] - sum(s["rejected"].values()),
            "rejected_by_reason": s["rejected"],
            "store_outcomes": s["beliefs"],
            "stored_or_reinforced": accepted,
            "cost_usd": s["cost_usd"],
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
