"""Find Gemini CLI chat recordings: `~/.gemini/tmp/<project>/chats/session-*.jsonl` (`$GEMINI_CLI_HOME` moves
`~/.gemini`).

A source may be the Gemini dir, its `tmp/`, a project dir, its `chats/` or one file. The agent is `gemini`. The
older single-`.json` session files are counted (`legacy_json_session`) and not read: each is rewritten whole on
every turn, so no byte offset can track it. Subagents' recordings (`chats/<parent id>/<id>.jsonl`) are counted
(`subagent`) and not read: their "user" is the parent model.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from distiller.sources.base import Discovery, SourceFile, transcript_file

FORMAT = "gemini"
AGENT = "gemini"


def default_source() -> Path:
    home = os.environ.get("GEMINI_CLI_HOME")
    return (Path(home).expanduser() if home else Path.home()) / ".gemini" / "tmp"


def claims(name: str) -> bool:
    return name.startswith("session-") and name.endswith(".jsonl")


def _entries(directory: Path, found: Discovery, counted: bool = True) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as listing:
            return sorted(listing, key=lambda e: e.name)
    except OSError:
        if counted:  # a source itself is counted by OpenClaw's discovery, which tries every one
            found.skipped["unreadable_dir"] += 1
        return []


def _chats(directory: Path, found: Discovery) -> None:
    for entry in _entries(directory, found):
        try:
            if entry.name.startswith("session-") and transcript_file(entry, found):
                if entry.name.endswith(".jsonl"):
                    found.live.append(SourceFile(entry.path, AGENT, FORMAT))
                elif entry.name.endswith(".json"):
                    found.skipped["legacy_json_session"] += 1
            elif entry.is_dir(follow_symlinks=False):
                found.skipped["subagent"] += sum(1 for sub in _entries(Path(entry.path), found)
                                                 if sub.name.endswith(".jsonl"))
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
                if source.name.endswith(".jsonl"):
                    found.live.append(SourceFile(str(source), AGENT, FORMAT))
                continue
            if not source.is_dir():
                continue
            if (source / "tmp").is_dir():
                source = source / "tmp"
            if source.name == "chats":
                _chats(source, found)
            elif (source / "chats").is_dir():
                _chats(source / "chats", found)
            elif source.name == "tmp":
                for project in _entries(source, found, counted=False):
                    if project.is_dir(follow_symlinks=False) and (Path(project.path) / "chats").is_dir():
                        _chats(Path(project.path) / "chats", found)
        except OSError:
            continue
    return found
