"""Bytes a first full run writes into its state dir, by file, against the corpus's size (not a test).

    python tests/bench/bench_writes.py [--corpus persona|one-session|synthetic | --source DIR] [--mb 30]
                                       [--messages 20000] [--work DIR] [--code DIR]

A real `python -m distiller run --extractor rules` subprocess over a fresh state dir, traced with strace (every
write, pwrite and writev of it and its scan workers, with the file each went to): the bytes that reached each file
of the state dir (the database, its WAL, batch files, anything else) are summed and divided by the corpus's bytes.
`persona` is the Synthetic-Persona-Chat conversations as transcripts (tests/bench/personachat.py: short turns, the
most ledger per byte read); `one-session` is one session file of --messages turns as
tests/bench/bench_one_session.py writes it (5.7 MB at 20,000: a fact every fourth turn, each replacing the last,
so the most beliefs, terms and history per byte read); `synthetic` is tests/bench/corpus.py's OpenClaw corpus (--mb;
big tool results and images, few bytes of conversation); `--source` any tree of transcripts. `--code DIR` runs the package found in DIR (e.g. an older commit exported with
`git archive`) for a before/after figure. Needs strace (Linux).

The target (issue #26): a first full run writes at most 2× the corpus. Figures (bytes written / corpus bytes; WAL
and database file in MB):

    corpus                        before (3ff7fbd)        after
    persona (15.9 MB)             2.13× (18.7 + 15.2)     1.15× (12.5 + 5.8)
    one-session, 20,000 (5.7 MB)  3.54× (12.2 + 7.9)      2.31× (9.6 + 3.5)

What made the difference (store/migrations.py m023, store/db.py), in steps (persona; one-session):
- the ledger row names its (run, file, session, agent) by number: 2.13× → 1.80×; 3.54× → 3.20×;
- a run's store checkpoints past 32 MB of WAL, not 16 (DuckDB checkpointed persona's first run once before its
  end, writing its database 1.6×): → 1.51×; 3.20× (its WAL never reached 16 MB);
- 16 kB blocks for a new database (the same rows in 5.6 MB instead of 9.7): → 1.25×; → 2.40×;
- the ledger row names its (role, inter-session, decision, reason) by number too: → 1.15×; → 2.31×.
The ledger's own WAL went 12.4 → 3.6 MB on persona.

Where the WAL goes now (`--wal-split 10`; 4 for one-session, whose run commits 4 batches): persona 3.6 MB ledger,
3.1 recall terms (`belief_terms`), 2.5 evidence, 1.3 beliefs, 0.6 files; one-session 3.3 terms, 2.1 beliefs,
1.6 evidence, 1.3 ledger, 1.0 belief history.

Measured and left:
- `belief_terms` naming its (belief, session, message) by number: its WAL 3.1 → 1.4 MB (persona), 3.3 → 1.5 MB
  (one-session, about 2.0× then). Recall's queries and terms.py's keyed deletes read it, and m021 backfills it
  through terms.py: a change for its own step.
- the ledger's `ts` as a TIMESTAMPTZ: 1.2 MB less, but it drops the stamp as the transcript wrote it (its offset,
  its precision, a stamp that does not parse), which is what the ledger records; not worth it with the target met.
- DuckDB's optimistic writes (row groups written straight to the database file) apply only to an empty table or
  to 122,880+ rows of one table in one transaction, which one commit per batch never reaches: 55,408 ledger rows
  in one transaction still went to the WAL (5.36 MB, as in ten).
- forced zstd compression makes the database bigger (11.3 MB against 9.7 with DuckDB's choice per column); the
  WAL is never compressed.
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


def make_corpus(kind: str, work: Path, mb: int, messages: int) -> Path:
    if kind == "one-session":
        import bench_one_session

        out = work / f"one-session-{messages}"
        if not out.exists():
            bench_one_session.write_session(out / "main" / "sessions" / "huge.jsonl", messages)
        return out
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


def wal_by_table(db: Path, commits: int, work: Path) -> dict[str, int]:
    """Where the WAL's bytes go: each table of the run's store appended again, in `commits` transactions, to an
    empty copy of its schema that never checkpoints; the WAL's growth per table. (An estimate of the run's own WAL:
    the run also updates and deletes, and its commits are its batches.)"""
    import duckdb

    copy = work / "wal-split.duckdb"
    for leftover in (copy, copy.with_name(copy.name + ".wal")):
        leftover.unlink(missing_ok=True)
    wal = copy.with_name(copy.name + ".wal")
    grown: dict[str, int] = {}
    with duckdb.connect(str(copy)) as con:
        con.execute(f"ATTACH '{db}' AS run_store (READ_ONLY)")
        tables = con.execute("SELECT table_name, sql FROM duckdb_tables() WHERE database_name = 'run_store'").fetchall()
        for _, ddl in tables:
            con.execute(ddl)
        con.execute("CHECKPOINT")
        con.execute("PRAGMA disable_checkpoint_on_shutdown")
        con.execute("SET checkpoint_threshold = '100GB'")
        for table, _ in tables:
            before = wal.stat().st_size if wal.exists() else 0
            count = con.execute(f'SELECT count(*) FROM run_store."{table}"').fetchone()[0]
            step = max(1, -(-count // commits))
            for start in range(0, count, step):
                con.execute(f'INSERT INTO "{table}" SELECT * FROM run_store."{table}" LIMIT {step} OFFSET {start}')
            if count:
                grown[table] = wal.stat().st_size - before
    return dict(sorted(grown.items(), key=lambda item: -item[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=("persona", "one-session", "synthetic"), default="persona")
    parser.add_argument("--source", type=Path, default=None, help="a tree of transcripts instead")
    parser.add_argument("--mb", type=int, default=30, help="size of the synthetic corpus")
    parser.add_argument("--messages", type=int, default=20_000, help="turns of the one-session corpus")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--code", type=Path, default=None, help="run the package found in this dir")
    parser.add_argument("--wal-split", type=int, default=0, metavar="COMMITS",
                        help="also estimate the WAL's bytes by table, its rows replayed in this many commits")
    args = parser.parse_args()
    if shutil.which("strace") is None:
        sys.exit("bench_writes needs strace")
    work = args.work or Path(tempfile.mkdtemp(prefix="distill-bench-writes-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        source = args.source or make_corpus(args.corpus, work, args.mb, args.messages)
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
            **({"wal_by_table_estimate": wal_by_table(state / "distill.duckdb", args.wal_split, work)}
               if args.wal_split else {}),
        }, indent=2))
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
