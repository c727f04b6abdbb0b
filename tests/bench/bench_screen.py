"""Benchmark of the pure screening stages (not a test): canonical text, clean, prefilter, the injection check and
redact, apart and together, and `screen` itself (and followed by the split-key join, as the pipeline screens a
message).

    python tests/bench/bench_screen.py [--corpus DIR] [--mb 100] [--repeat 5]

The messages come from a synthetic OpenClaw corpus (tests/bench/corpus.py; written to a temp dir unless --corpus
names an existing one) through `openclaw.to_message`, so they are the texts the pipeline screens. Each stage is fed
what it gets in `screen`: clean the raw text, prefilter, check for injection and redact every cleaned part. Clean,
the injection check and redact are also timed without their shortcuts (every rule tried on every text), which is
what each shortcut saves; the injection check runs on every part here, where `screen` asks it of kept parts only.
Figures are the best of --repeat runs, in µs per message and MB/s of raw message text (UTF-8).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from distiller.canonical import canonical
from distiller.records import Message
from distiller.redact import redact, redact_every_rule
from distiller.screen import join_split, screen
from distiller.screen.clean import clean as clean_as
from distiller.screen.clean import clean_every_rule as clean_every_rule_as
from distiller.screen.injection import suspect_injection, suspect_injection_every_time
from distiller.screen.prefilter import prefilter
from distiller.sources.openclaw import parse as openclaw
from distiller.sources.openclaw.envelopes import CLEANING

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import write_corpus


def clean(text, role, extra_blocks=()):
    return clean_as(text, role, extra_blocks, CLEANING)


def clean_every_rule(text, role, extra_blocks=()):
    return clean_every_rule_as(text, role, extra_blocks, CLEANING)


def corpus_messages(root: Path) -> list[Message]:
    messages = []
    for path in sorted(root.rglob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            result = openclaw.to_message(
                orjson.loads(line), agent=path.parent.parent.name, session_id=path.stem, file=str(path),
                byte_start=0, byte_end=len(line),
            )  # fmt: skip
            if isinstance(result, Message):
                messages.append(result)
    return messages


def best_seconds(run: Callable[[], None], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=None, help="existing corpus dir (default: write one)")
    parser.add_argument("--mb", type=int, default=100, help="size of the corpus written when --corpus is not given")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if args.corpus is None:
        args.corpus = Path(tempfile.mkdtemp(prefix="distill-screen-")) / "corpus"
        write_corpus(args.corpus, target_bytes=args.mb * 1024 * 1024, agents=4, seed=1)
    messages = corpus_messages(args.corpus)
    texts = [(m.text, m.role) for m in messages]
    parts = [(part, role) for text, role in texts for part in clean(text, role).parts]
    mb = sum(len(text.encode()) for text, _ in texts) / 1e6

    def all_stages() -> None:
        for text, role in texts:
            for part in clean(text, role).parts:
                prefilter(part, role)
                suspect_injection(part)
                redact(part)

    def screen_and_join() -> None:
        previous = None
        for message in messages:
            screened = screen(message)
            join_split(previous, screened)
            previous = screened

    stages: dict[str, Callable[[], None]] = {
        "canonical text": lambda: [canonical(text) for text, _ in texts],
        "clean": lambda: [clean(text, role) for text, role in texts],
        "clean, every rule (no trigger shortcut)": lambda: [clean_every_rule(text, role) for text, role in texts],
        "prefilter": lambda: [prefilter(part, role) for part, role in parts],
        "injection check": lambda: [suspect_injection(part) for part, _ in parts],
        "injection check, every time (no needle shortcut)": lambda: [suspect_injection_every_time(p) for p, _ in parts],
        "redact": lambda: [redact(part) for part, _ in parts],
        "redact, every rule (no needle shortcut)": lambda: [redact_every_rule(part) for part, _ in parts],
        "all four": all_stages,
        "screen": lambda: [screen(message) for message in messages],
        "screen, then the split-key join (as the pipeline does)": screen_and_join,
    }
    print(f"{len(texts)} messages, {len(parts)} cleaned parts, {mb:.1f} MB of message text")
    width = max(map(len, stages))
    print(f"{'stage':<{width}} {'µs/message':>11} {'MB/s':>9}")
    for name, run in stages.items():
        seconds = best_seconds(run, args.repeat)
        print(f"{name:<{width}} {seconds / len(texts) * 1e6:>11.1f} {mb / seconds:>9.1f}")


if __name__ == "__main__":
    main()
