"""Find transcript files under the sources and classify every other file found there, with a reason."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import orjson

ARCHIVE_MARKERS = (".jsonl.reset.", ".jsonl.deleted.")


@dataclass(frozen=True, slots=True)
class Candidate:
    path: str
    agent: str


@dataclass(slots=True)
class Discovery:
    """Live transcripts are sources; archives are only followed as renamed continuations of tracked files."""

    live: list[Candidate] = field(default_factory=list)
    archives: list[Candidate] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    missing: list[str] = field(default_factory=list)
    session_keys: dict[str, str] = field(default_factory=dict)  # session id or file stem -> sessions.json key


def default_source() -> Path:
    state = os.environ.get("OPENCLAW_STATE_DIR")
    return (Path(state).expanduser() if state else Path.home() / ".openclaw") / "agents"


def classify(name: str) -> str:
    """'live', 'archive', or the reason a file in a sessions directory is not a source."""
    if name == "sessions.json" or name.startswith("sessions.json."):
        return "index"
    if any(marker in name for marker in ARCHIVE_MARKERS):
        return "compressed_archive" if name.endswith(".zst") else "archive"
    if name.endswith(".lock"):
        return "lock"
    if ".bak" in name:
        return "backup"
    if name.endswith(".tmp"):
        return "tmp"
    if ".checkpoint." in name:
        return "checkpoint"
    if ".trajectory" in name:
        return "trajectory"
    if name.endswith(".jsonl"):
        return "live"
    return "other"


def agent_of(path: Path) -> str:
    parent = path.parent
    return parent.parent.name if parent.name == "sessions" else parent.name


def _read_session_index(path: Path, found: Discovery) -> None:
    """sessions.json tells what kind of session a transcript is (its key marks cron and dreaming runs)."""
    try:
        index = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        found.skipped["unreadable_index"] += 1
        return
    if not isinstance(index, dict):
        return
    for key, entry in index.items():
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("sessionId"), str):
            found.session_keys[entry["sessionId"]] = key
        if isinstance(entry.get("sessionFile"), str):
            found.session_keys[Path(entry["sessionFile"]).name.split(".jsonl")[0]] = key


def _scan_sessions_dir(directory: Path, agent: str, found: Discovery) -> None:
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        found.skipped["unreadable_dir"] += 1
        return
    for entry in entries:
        if not entry.is_file(follow_symlinks=False):
            continue
        kind = classify(entry.name)
        if kind == "live":
            found.live.append(Candidate(entry.path, agent))
        elif kind == "archive":
            found.archives.append(Candidate(entry.path, agent))
        elif kind == "index":
            if entry.name == "sessions.json":
                _read_session_index(Path(entry.path), found)
        else:
            found.skipped[kind] += 1


def _is_sessions_dir(directory: Path) -> bool:
    return directory.name == "sessions" or any(
        classify(entry.name) in ("live", "archive") for entry in os.scandir(directory) if entry.is_file()
    )


def discover(sources: Iterable[Path], excluded_agents: Iterable[str]) -> Discovery:
    """Accept an agents dir (`<agent>/sessions/*.jsonl`), an OpenClaw state dir, a sessions dir or one file."""
    excluded = frozenset(excluded_agents)
    found = Discovery()
    for source in sources:
        source = Path(source).expanduser()
        if source.is_file():
            agent = agent_of(source)
            if agent in excluded:
                found.skipped["excluded_agent"] += 1
            else:
                found.live.append(Candidate(str(source), agent))
            continue
        if not source.is_dir():
            found.missing.append(str(source))
            continue
        if (source / "agents").is_dir() and not (source / "sessions").is_dir():
            source = source / "agents"
        if _is_sessions_dir(source):
            agent = agent_of(source / "x.jsonl")
            if agent in excluded:
                found.skipped["excluded_agent"] += 1
            else:
                _scan_sessions_dir(source, agent, found)
            continue
        for agent_dir in sorted(p for p in source.iterdir() if p.is_dir()):
            if agent_dir.name in excluded:
                found.skipped["excluded_agent"] += 1
                continue
            sessions = agent_dir / "sessions"
            if sessions.is_dir():
                _scan_sessions_dir(sessions, agent_dir.name, found)
    return found


def session_skip(key: str | None) -> str | None:
    """Cron runs and memory "dreaming" runs are machine talk, skipped as whole sessions."""
    if not key:
        return None
    if ":cron:" in key and ":run:" in key:
        return "cron-session"
    if "dreaming" in key:
        return "dreaming-session"
    return None
