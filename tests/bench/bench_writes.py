"""Bytes a first full run writes into its state dir, by file, against the corpus's size (not a test).

    python tests/bench/bench_writes.py [--corpus persona|synthetic | --source DIR] [--mb 30] [--work DIR] [--code DIR]

A real `python -m distiller run --extractor rules` subprocess over a fresh state dir, traced with strace (every
write, pwrite and writev of it and its scan workers, with the file each went to): the bytes that reached each file
of the state dir (the database, its WAL, batch files, anything else) are summed and divided by the corpus's bytes.
`persona` is the Synthetic-Persona-Chat conversations as transcripts (tests/bench/personachat.py: short turns, the
most ledger per byte read); `synthetic` is tests/bench/corpus.py's OpenClaw corpus (--mb; big tool results and
images, few bytes of conversation); `--source` any tree of transcripts. `--code DIR` runs the package found in DIR (e.g. an older commit exported with
`git archive`) for a before/after figure. Needs strace (Linux).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

_WRITE = re.compile(r"^\d+\s+\w+\(\d+<([^>]*)>.*\)\s+=\s+(\d+)")


def corpus_bytes(root: Path) -> int:
    return sum(path.stat().st_size for path in root.rglob("*.jsonl"))


def make_corpus(kind: str, work: Path, mb: int) -> Path:
    if kind == "persona":
        import personachat

        out = work / "persona"
        if not out.exists():
            subprocess.run([sys.executable, str(Path(personachat.__file__)), str(out)], check=True,
                           stdout=subprocess.DEVNULL)
        return out / "agents"
    from corpus import write_corpus

    out = work / f"synthetic-{mb}"
    if not out.exists():
        write_corpus(out, target_bytes=mb * 1024 * 1024, agents=4, seed=5)
    return out


def traced_run(state: Path, source: Path, trace: Path, code: Path | None) -> tuple[Counter[str], float, dict]:
    env = {**os.environ}
    if code is not None:
        env["PYTHONPATH"] = str(code)
    started = time.perf_counter()
    proc = subprocess.run(["strace", "-f", "-y", "-qq", "-e", "trace=write,pwrite64,writev,pwritev,pwritev2", "-o",
                           str(trace), sys.executable, "-m", "distiller", "--json", "--state-dir", str(state), "run",
                           "--extractor", "rules", "--source", str(source)], capture_output=True, text=True, env=env,
                          check=True, cwd=code)  # in code's dir: `-m` puts the cwd first on the path
    wall = time.perf_counter() - started
    written: Counter[str] = Counter()
    prefix = str(state.resolve()) + os.sep
    with open(trace) as lines:
        for line in lines:
            match = _WRITE.match(line)
            if match and match.group(1).startswith(prefix):
                name = match.group(1)[len(prefix):]
                written["batches/*" if name.startswith("batches") else name] += int(match.group(2))
    return written, wall, json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=("persona", "synthetic"), default="persona")
    parser.add_argument("--source", type=Path, default=None, help="a tree of transcripts instead")
    parser.add_argument("--mb", type=int, default=30, help="size of the synthetic corpus")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--code", type=Path, default=None, help="run the package found in this dir")
    args = parser.parse_args()
    if shutil.which("strace") is None:
        sys.exit("bench_writes needs strace")
    work = args.work or Path(tempfile.mkdtemp(prefix="distill-bench-writes-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        source = args.source or make_corpus(args.corpus, work, args.mb)
        size = corpus_bytes(source)
        state = work / "state"
        shutil.rmtree(state, ignore_errors=True)
        state, source = state.resolve(), source.resolve()
        written, wall, summary = traced_run(state, source, work / "trace.txt", args.code)
        total = sum(written.values())
        print(json.dumps({
            "corpus": str(args.source) if args.source else args.corpus, "corpus_bytes": size, "messages": summary["messages"],
            "written_bytes": total, "written_per_corpus_byte": round(total / size, 2),
            "by_file": dict(written.most_common()),
            "left_in_state_dir": {p.name: p.stat().st_size for p in sorted(state.iterdir()) if p.is_file()},
            "wall_s_traced": round(wall, 2),
        }, indent=2))
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
