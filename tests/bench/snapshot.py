"""What distill makes of a corpus, as one canonical JSON document, so a refactoring can prove it changed nothing.

    python tests/bench/snapshot.py CORPUS OUT.json
    diff <(python tests/bench/snapshot.py CORPUS /dev/stdout) before.json

Runs the real CLI in a subprocess with the rules extractor: `run --dry-run --show all`, `run`, a second `run`
(nothing new), then `reprocess --yes`. After each store-changing step every table is dumped with the columns that
depend on the wall clock, the machine or random ids left out and the rows sorted; paths are made relative to
the corpus. Tables that are an index's private structure (and migration records) are left out: a refactoring may
change those.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb

_VOLATILE = {
    "created_at", "updated_at", "added_at", "at", "committed_at", "started_at", "finished_at", "applied_at",
    "called_at", "run_id", "batch_id", "job_id", "dev", "inode", "mtime_ns", "latency_ms", "first_seen_wall",
}
_VOLATILE_IN = {"files": {"first_seen"}}
_JOB_ID = re.compile(r"\brp-[0-9a-f]{8,}\b")  # a reprocess job's id is random
_PRIVATE_TABLES = {"schema_migrations", "belief_words"}
_VOLATILE_COUNTER_HINTS = ("seconds", "elapsed", "duration", "_ms", "rate", "run_id", "started", "finished")


def _distill(state: Path, *args: str) -> str:
    env = dict(os.environ, DISTILL_EXTRACTOR="rules")
    env.pop("ANTHROPIC_API_KEY", None)
    done = subprocess.run([sys.executable, "-m", "distiller", "--state-dir", str(state), "--json", *args],
                          capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"distill {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def _wall_clock(text: str) -> str | None:
    """The transcript clock is capped at the wall clock plus a day: such a value depends on when the run was."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    now = datetime.now(UTC)
    for label, at in (("<now>", now), ("<now+1d>", now + timedelta(days=1))):
        if abs((moment - at).total_seconds()) < 3600:
            return label
    return None


def _clean(value, corpus: str, state: str):
    if isinstance(value, str):
        return _JOB_ID.sub("rp-<job>", value.replace(corpus, "<corpus>").replace(state, "<state>"))
    if isinstance(value, dict):
        return {k: _clean(v, corpus, state) for k, v in sorted(value.items())
                if not any(h in k for h in _VOLATILE_COUNTER_HINTS)}
    if isinstance(value, (list, tuple)):
        return [_clean(v, corpus, state) for v in value]
    return value


def _dump(db: Path, corpus: str, state: str) -> dict:
    con = duckdb.connect(str(db), read_only=True)
    try:
        out = {}
        tables = [r[0] for r in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' ORDER BY 1").fetchall()]
        for table in tables:
            if table in _PRIVATE_TABLES:
                continue
            columns = [r[0] for r in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
                [table]).fetchall() if r[0] not in _VOLATILE | _VOLATILE_IN.get(table, set())]
            if not columns:
                continue
            quoted = ", ".join(f'"{c}"::VARCHAR' for c in columns)
            rows = con.execute(f'SELECT {quoted} FROM "{table}"').fetchall()
            decoded = []
            for row in rows:
                record = {}
                for column, cell in zip(columns, row, strict=True):
                    if isinstance(cell, str) and cell[:1] in "[{":
                        try:
                            cell = json.loads(cell)
                        except ValueError:
                            pass
                    if table == "store_meta" and isinstance(cell, str):
                        cell = _wall_clock(cell) or cell
                    record[column] = _clean(cell, corpus, state)
                decoded.append(record)
            decoded.sort(key=lambda r: json.dumps(r, sort_keys=True))
            out[table] = decoded
        return out
    finally:
        con.close()


def snapshot(corpus: Path) -> dict:
    corpus_text = str(corpus.resolve())
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state"
        state_text = str(state)
        dry = _distill(Path(tmp) / "dry", "run", "--source", corpus_text, "--dry-run", "--show", "all")
        dry_lines = sorted(dry.splitlines())
        steps = {}
        for step, args in (("run", ["run", "--source", corpus_text]),
                           ("run-again", ["run", "--source", corpus_text]),
                           ("reprocess", ["reprocess", "--source", corpus_text, "--yes"])):
            _distill(state, *args)
            steps[step] = _dump(state / "distill.duckdb", corpus_text, state_text)
        return {"dry-run": [_clean(json.loads(line), corpus_text, state_text) for line in dry_lines if line.strip()],
                **steps}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    document = snapshot(args.corpus)
    args.out.write_text(json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
