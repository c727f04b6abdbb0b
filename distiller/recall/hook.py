"""Claude Code's UserPromptSubmit hook: the recall block for the prompt, as context the model sees with it.

Claude Code runs `distill hook claude-code --state-dir DIR` on every prompt, with the event on stdin
(`{"session_id", "transcript_path", "cwd", "hook_event_name": "UserPromptSubmit", "prompt"}`), and adds what the
hook prints as `{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": BLOCK}}`.

It never fails the user's prompt: whatever goes wrong (no database yet, a damaged one, bad input), it prints
nothing, exits 0 and appends one line to `<state-dir>/hook.log`.

It answers from the recall snapshot (snapshot.py) while the snapshot matches the database files, without importing
DuckDB (60–80 ms of the 150 ms budget on its own); otherwise it opens the store read-only, as it is, answers with
select.py's SQL and saves a new snapshot for the next prompts. While a run holds the store (DuckDB lets no reader
in beside a writer) it waits at most `BUSY_WAIT_SECONDS`, then answers from the last snapshot as it is. `__main__`
reaches `main` without importing click or the CLI.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from distiller.recall.lines import Line

BUSY_WAIT_SECONDS = 0.05
MAX_EVENT_BYTES = 8 << 20  # a prompt is read up to this size; the rest is not needed to pick beliefs
LOG_FILE = "hook.log"
LOG_MAX_BYTES = 1 << 20  # then it starts again from hook.log.1


def context(block: str) -> bytes:
    """Claude Code's hook output adding `block` to the prompt's context."""
    return orjson.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": block}})


def _prompt(raw: bytes) -> str:
    event = orjson.loads(raw)
    if not isinstance(event, dict):
        raise TypeError("the hook event is not a JSON object")
    prompt = event.get("prompt")
    return prompt if isinstance(prompt, str) else ""


def answer(raw: bytes, state_dir: Path, *, agent: str | None = None, max_chars: int = 2200) -> bytes:
    """What the hook prints for this event: the context, or b"" (and one line in the log) when anything fails."""
    from distiller.recall import render, snapshot

    db = state_dir / "distill.duckdb"
    try:
        prompt = _prompt(raw)
        saved = snapshot.load(state_dir, db)
        if saved is not None:
            lines = snapshot.rank(saved, prompt, agent=agent)
        else:
            lines = _from_store(state_dir, prompt, agent)
    except _Busy as exc:
        stale = snapshot.load(state_dir, db, current=False)
        log(state_dir, f"store busy, {'the last snapshot' if stale else 'no context'} given: {exc}")
        if stale is None:
            return b""
        lines = snapshot.rank(stale, prompt, agent=agent)
    except Exception as exc:  # noqa: BLE001  (never fail the prompt: any error is logged, none raised)
        log(state_dir, f"no context: {type(exc).__name__}: {exc}")
        return b""
    text = render(lines, max_chars=max_chars).text
    return context(text) if text else b""


class _Busy(Exception):
    pass


def _from_store(state_dir: Path, prompt: str, agent: str | None) -> list[Line]:
    """select.py's lines from the store as it is (read-only, not migrated), and a new snapshot of it."""
    from datetime import datetime

    from distiller.errors import Unavailable
    from distiller.recall import snapshot
    from distiller.recall.select import select
    from distiller.store.db import open_existing

    db = state_dir / "distill.duckdb"
    if not db.exists():
        raise FileNotFoundError(f"no database at {db} yet")
    now = datetime.now(UTC)
    try:
        with open_existing(db, wait_seconds=BUSY_WAIT_SECONDS) as con:
            lines = select(con, prompt, agent=agent, now=now)
            saved = snapshot.build(con, db, now=now)
    except Unavailable as exc:
        raise _Busy(str(exc)) from exc
    try:
        snapshot.save(state_dir, saved)
    except OSError as exc:
        log(state_dir, f"snapshot not saved: {exc}")
    return lines


def log(state_dir: Path, line: str) -> None:
    """One line, never raising: the hook's only report is its log."""
    path = state_dir / LOG_FILE
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    try:
        if path.exists() and path.stat().st_size > LOG_MAX_BYTES:
            os.replace(path, path.with_name(LOG_FILE + ".1"))
        with open(path, "a", encoding="utf-8") as out:
            out.write(f"{stamp} {' '.join(line.split())[:500]}\n")
    except OSError:
        pass


def _options(argv: list[str]) -> dict[str, str]:
    """`--name value` and `--name=value` pairs (argparse costs more to import than the hook has to spare)."""
    found, i = {}, 0
    while i < len(argv):
        name, equals, value = argv[i].partition("=")
        if name in ("--state-dir", "--agent", "--max-chars"):
            if not equals and i + 1 < len(argv):
                value, i = argv[i + 1], i + 1
            found[name] = value
        i += 1
    return found


def main(argv: list[str]) -> int:
    """`distill hook claude-code [--state-dir DIR] [--agent ID] [--max-chars N]` without the CLI: exit 0 always."""
    os.umask(os.umask(0o077) | 0o077)
    try:
        options = _options(argv)
        if "--state-dir" in options:
            state_dir = Path(options["--state-dir"])
        else:
            from distiller.config import default_state_dir

            state_dir = default_state_dir()
        max_chars = max(int(options.get("--max-chars", 2200)), 0)
    except Exception:  # noqa: BLE001  (never fail the prompt)
        return 0
    try:
        raw = sys.stdin.buffer.read(MAX_EVENT_BYTES)
    except (OSError, ValueError) as exc:
        log(state_dir, f"no context: stdin: {exc}")
        return 0
    out = answer(raw, state_dir, agent=options.get("--agent"), max_chars=max_chars)
    if out:
        try:
            sys.stdout.buffer.write(out + b"\n")
            sys.stdout.flush()
        except OSError:
            pass
    return 0
