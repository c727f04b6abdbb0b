"""Find Codex CLI rollouts: `<CODEX_HOME>/sessions/YYYY/MM/DD/rollout-*.jsonl` (`~/.codex` by default).

A source may be the Codex home, its `sessions/` dir (or `archived_sessions/`, which is read only when given: the
default reads `sessions/`), any dir below them, or one file. The agent is `codex`: a rollout names its working
directory only inside, and one agent keeps a user's Codex beliefs together. A compressed rollout (`.jsonl.zst`)
is read whole, once (`distiller.compressed`), unless its plain file is beside it (the plain file wins, as in Codex:
`compressed_duplicate`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from distiller.sources.base import Discovery, SourceFile, transcript_file

FORMAT = "codex"
AGENT = "codex"


def default_source() -> Path:
    home = os.environ.get("CODEX_HOME")
    return (Path(home).expanduser() if home else Path.home() / ".codex") / "sessions"


def claims(name: str) -> bool:
    return name.startswith("rollout-") and name.endswith((".jsonl", ".jsonl.zst"))


def _walk(directory: Path, found: Discovery, depth: int) -> None:
    try:
        with os.scandir(directory) as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except OSError:
        if depth:  # a source itself that cannot be read is counted by OpenClaw's discovery, which tries every one
            found.skipped["unreadable_dir"] += 1
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                if depth < 3 and entry.name.isdigit():  # YYYY/MM/DD: no other dir is Codex's
                    _walk(Path(entry.path), found, depth + 1)
            elif entry.name.startswith("rollout-") and transcript_file(entry, found):
                if entry.name.endswith(".jsonl"):
                    found.live.append(SourceFile(entry.path, AGENT, FORMAT))
                elif entry.name.endswith(".jsonl.zst"):
                    if os.path.exists(entry.path[: -len(".zst")]):
                        found.skipped["compressed_duplicate"] += 1  # the plain file wins, as in Codex
                    else:
                        found.live.append(SourceFile(entry.path, AGENT, FORMAT))
        except OSError:
            continue


def discover(sources: Iterable[Path], excluded_agents: Iterable[str]) -> Discovery:
    found = Discovery()
    if AGENT in frozenset(excluded_agents):
        return found
    for source in sources:
        source = Path(source).expanduser()
        try:
            if source.is_file():
                found.live.append(SourceFile(str(source), AGENT, FORMAT))
                continue
            if not source.is_dir():
                continue
            if (source / "sessions").is_dir():
                source = source / "sessions"
        except OSError:
            continue
        _walk(source, found, 0)
    return found
