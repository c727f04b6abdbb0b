"""Report for prompt caching (not a test): what a request and a run cost with and without the cached prefix.

    python tests/bench/bench_cache.py [CORPUS] [--model M]

1. The cost model: a `run --dry-run` of CORPUS (default: the bundled sample) gives the requests the packer makes
   and their average transcript size; each is priced at the model with the price table, for the old prompt
   (anthropic-v2, 2,183 estimated tokens: below every Haiku's minimum, so never cached), the current prompt with
   the marker dropped, and the current prompt cached (a cold run's first requests write the prefix at 1.25x the
   input price, the rest read it at 0.1x), for runs of several sizes.
2. Measured: the real CLI and SDK against the fake Messages API, which caches as the API does (marker present,
   prefix at or above the model's minimum); the run's own cost and cached share.
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
ROOT = HERE.parent.parent
sys.path[:0] = [str(HERE.parent), str(ROOT)]
from fakeapi import FakeAnthropic

from distiller import prices
from distiller.extract.prompt import STATIC_PREFIX_TOKENS
from distiller.extract.select import CACHE_WRITES_PER_RUN, OUTPUT_SHARE

OLD_PREFIX_TOKENS = 2183  # anthropic-v2: (7,409 + 1,325 characters) // 4, as the packer estimates it
RUN_SIZES = (1, 2, 4, 9, 50, 1000)


def _distill(state: Path, env: dict, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "distiller", "--json", "--state-dir", str(state), *args],
                          capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout)


def _run_cost(model: str, requests: int, transcript: float, prefix: int, *, cached: bool, writes: int) -> float:
    output = int(transcript * OUTPUT_SHARE)
    if not cached:
        return requests * prices.cost_usd(model, round(prefix + transcript), output, 0, 0)
    writes = min(writes, requests)
    return (writes * prices.cost_usd(model, round(transcript), output, 0, prefix)
            + (requests - writes) * prices.cost_usd(model, round(transcript), output, prefix, 0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=ROOT / "distiller" / "sample" / "agents")
    parser.add_argument("--model", default="claude-haiku-5-5")
    args = parser.parse_args()
    model = args.model
    work = Path(tempfile.mkdtemp(prefix="distill-bench-cache-"))
    try:
        base_env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "DISTILL_"))}
        dry = _distill(work / "dry", {**base_env, "DISTILL_MODEL": model}, "run", "--dry-run",
                       "--source", str(args.corpus))
        requests = dry["requests"]
        transcript = (dry["estimated_tokens"] - requests * STATIC_PREFIX_TOKENS) / max(1, requests)
        per_request = {
            "old_prompt_uncached": _run_cost(model, 1, transcript, OLD_PREFIX_TOKENS, cached=False, writes=0),
            "new_prompt_marker_dropped": _run_cost(model, 1, transcript, STATIC_PREFIX_TOKENS, cached=False,
                                                   writes=0),
            "new_prompt_cache_write": _run_cost(model, 1, transcript, STATIC_PREFIX_TOKENS, cached=True, writes=1),
            "new_prompt_cache_read": _run_cost(model, 1, transcript, STATIC_PREFIX_TOKENS, cached=True, writes=0),
        }
        runs = {}
        for n in (*RUN_SIZES, requests):
            old = _run_cost(model, n, transcript, OLD_PREFIX_TOKENS, cached=False, writes=0)
            runs[n] = {
                "old_prompt_uncached": round(old, 6),
                "new_prompt_marker_dropped": round(_run_cost(model, n, transcript, STATIC_PREFIX_TOKENS,
                                                             cached=False, writes=0), 6),
                "new_prompt_cached_sequential": round(_run_cost(model, n, transcript, STATIC_PREFIX_TOKENS,
                                                                cached=True, writes=1), 6),
                f"new_prompt_cached_{CACHE_WRITES_PER_RUN}_writes": round(
                    _run_cost(model, n, transcript, STATIC_PREFIX_TOKENS, cached=True, writes=CACHE_WRITES_PER_RUN),
                    6),
            }
        with FakeAnthropic(auto=True) as fake:
            env = {**base_env, "ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": fake.base_url,
                   "DISTILL_MODEL": model}
            measured = _distill(work / "state", env, "run", "--source", str(args.corpus))
        report = {
            "model": model,
            "min_cacheable_tokens": prices.min_cacheable_tokens(model),
            "static_prefix_tokens": {"old": OLD_PREFIX_TOKENS, "new": STATIC_PREFIX_TOKENS},
            "corpus": str(args.corpus),
            "dry_run": {"requests": requests, "estimated_tokens": dry["estimated_tokens"],
                        "avg_transcript_tokens_per_request": round(transcript),
                        "estimated_cost_usd": dry["estimated_cost_usd"],
                        "estimated_cache_read_tokens": dry["estimated_cache_read_tokens"]},
            "per_request_usd": {k: round(v, 7) for k, v in per_request.items()},
            "run_usd_by_requests": runs,
            "measured_with_fake_api": {k: measured[k] for k in (
                "requests", "model_calls", "input_tokens", "cache_write_tokens", "cache_read_tokens", "cached_share",
                "tokens", "cost_usd")},
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
