"""Benchmark of the model extractors side by side (not a test): each real client against its fake server.

    python tests/bench/bench_extractors.py [--requests 100] [--latency 0.2] [--concurrency 4]

One run over the same corpus (--requests long messages, one request each) with the anthropic extractor against
tests/fakeapi.py and the openai-compatible one against tests/fakeopenai.py, both answering after --latency
seconds: wall time, model calls, beliefs committed. Then openai-compatible again against a server that refuses
json_schema (the mode found once, by the first request) and one that wraps every reply in prose (plain text mode).
What it shows is the pipeline's and the client's cost around a model call, not a model's speed or quality.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent.parent)]
import orjson
from conftest import append, message_line, new_session
from fakeapi import FakeAnthropic, auto_candidates
from fakeopenai import FakeOpenAI, Reply, user_text

from distiller.config import Settings
from distiller.extract.anthropic import AnthropicExtractor
from distiller.extract.base import Extractor
from distiller.extract.openai_compatible import OpenAICompatibleExtractor
from distiller.pipeline import run as pipeline

FILLER = " ".join(["and the notes I keep about the migration plan stay in the project wiki"] * 6)


def _corpus(root: Path, n: int) -> None:
    path = new_session(root)
    for i in range(n):
        append(path, message_line(f"I keep note {i:04d} in my journal, {FILLER}.", message_id=f"u{i:07d}"))


def _run(label: str, requests: int, concurrency: int, make: Callable[[], Extractor]) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="bench-extractors-"))
    try:
        agents = work / "agents"
        _corpus(agents, requests)
        settings = Settings(state_dir=work / "state", request_budget_tokens=100, concurrency=concurrency)
        started = time.monotonic()
        tally = pipeline.run_once(settings, [agents], extractor=make()).tally
        seconds = time.monotonic() - started
        row = {"run": label, "seconds": round(seconds, 2), "model_calls": tally.model_calls,
               "beliefs": sum(tally.beliefs.values()), "output_mode": tally.output_mode}
        print(orjson.dumps(row).decode(), flush=True)
        return row
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()

    with FakeAnthropic(auto=True) as fake:
        fake.delay_seconds = args.latency
        _run("anthropic", args.requests, args.concurrency,
             lambda: AnthropicExtractor(base_url=fake.base_url, api_key="bench"))

    def slow(reply: Reply | None = None) -> Callable[[Any, Any], Reply | None]:
        def answer(items: Any, earlier: Any) -> Reply | None:
            time.sleep(args.latency)
            return reply
        return answer

    for label, server in (("openai-compatible json_schema", FakeOpenAI(auto=True)),
                          ("openai-compatible, json_schema refused", FakeOpenAI(auto=True, rejects={"json_schema"}))):
        with server as fake_openai:
            fake_openai.responder = slow()
            _run(label, args.requests, args.concurrency,
                 lambda: OpenAICompatibleExtractor("bench-model", base_url=fake_openai.base_url))

    with FakeOpenAI(rejects={"json_schema", "json_object"}) as prose:
        def wrapped(items: Any, earlier: Any) -> Reply:
            time.sleep(args.latency)
            text = "\n".join(f'<item id="{i.item_id}" role="{i.role}" ts="{i.ts}" cite="{"yes" if i.citable else "no"}">'
                             f"\n{i.text}\n</item>" for i in items)
            found = auto_candidates(user_text({"messages": [{"role": "user", "content": text}]}))
            return Reply(content="Sure! Here is what I found:\n```json\n"
                         + orjson.dumps({"candidates": found}).decode() + "\n```\nAnything else?")
        prose.responder = wrapped
        _run("openai-compatible, plain text in prose", args.requests, args.concurrency,
             lambda: OpenAICompatibleExtractor("bench-model", base_url=prose.base_url))


if __name__ == "__main__":
    main()
