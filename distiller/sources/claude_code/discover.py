"""Find Claude Code transcripts: `<config>/projects/<slug>/<sessionId>.jsonl`, and the subagents' beside them.

A source may be the config dir (`~/.claude`, `$CLAUDE_CONFIG_DIR`), its `projects/` dir, one project dir or one
file. The agent is the project: its slug (the working directory with `/ . \\ :` made `-`) without the leading
dashes, so `-Users-alice-src-app` is agent `Users-alice-src-app`. Subagents write
`<sessionId>/subagents/agent-<id>.jsonl` (older builds `agent-<id>.jsonl` beside the session): read as the same
agent, their turns marked as not the user's (`parse.to_message`), found as `SourceFile(subagent=True)` so a setting
can leave them out. Large tool outputs (`<sessionId>/tool-results/`) and the `memory/` dir are not read.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import orjson

from distiller.sources.base import Discovery, SourceFile, transcript_file

FORMAT = "claude-code"


def default_source() -> Path:
    config = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(config).expanduser() if config else Path.home() / ".claude") / "projects"


DEFAULT_CLEANUP_DAYS = 30


def cleanup_period_days(projects: Path | None = None) -> int:
    """How many days Claude Code keeps a transcript: `cleanupPeriodDays` in the settings.json of its config dir
    (the parent of `projects/`), 30 when unset or unreadable."""
    settings = (projects or default_source()).parent / "settings.json"
    try:
        days = orjson.loads(settings.read_bytes()).get("cleanupPeriodDays")
    except (OSError, orjson.JSONDecodeError, AttributeError):
        return DEFAULT_CLEANUP_DAYS
    return days if isinstance(days, int) and not isinstance(days, bool) and days > 0 else DEFAULT_CLEANUP_DAYS


def agent_of_slug(slug: str) -> str:
    return slug.lstrip("-") or "root"


def agent_of(path: Path) -> str:
    """The project of a transcript: the dir holding it, or for a subagent's the dir holding its session's dir."""
    parent = path.parent
    if parent.name == "subagents":
        parent = parent.parent.parent
    return agent_of_slug(parent.name)


def claims(name: str) -> bool:
    return name.endswith(".jsonl")


def _entries(directory: Path, found: Discovery, counted: bool = True) -> list[os.DirEntry[str]]:
    """A dir's entries; one that cannot be read is counted only where no other format looks (a source itself, or
    a dir OpenClaw's discovery also tries, is counted by it)."""
    try:
        with os.scandir(directory) as listing:
            return sorted(listing, key=lambda e: e.name)
    except OSError:
        if counted:
            found.skipped["unreadable_dir"] += 1
        return []


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file(follow_symlinks=False)
    except OSError:
        return False


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _project(directory: Path, found: Discovery, excluded: frozenset[str],
             entries: list[os.DirEntry[str]] | None = None) -> None:
    agent = agent_of_slug(directory.name)
    if agent in excluded:
        found.skipped["excluded_agent"] += 1
        return
    for entry in entries if entries is not None else _entries(directory, found, counted=False):
        if entry.name.endswith(".jsonl") and transcript_file(entry, found):
            found.live.append(SourceFile(entry.path, agent, FORMAT, entry.name.startswith("agent-")))
        elif _is_dir(entry):
            subagents = Path(entry.path) / "subagents"
            if subagents.is_dir() and not subagents.is_symlink():
                for sub in _entries(subagents, found):
                    if sub.name.endswith(".jsonl") and transcript_file(sub, found):
                        found.live.append(SourceFile(sub.path, agent, FORMAT, True))


def discover(sources: Iterable[Path], excluded_agents: Iterable[str]) -> Discovery:
    """Every Claude Code transcript under the sources; what is not one is left to the other formats (a file given
    as a source is settled by its first line, `track.look`)."""
    excluded = frozenset(excluded_agents)
    found = Discovery()
    for source in sources:
        source = Path(source).expanduser()
        try:
            if source.is_file():
                found.live.append(SourceFile(str(source), agent_of(source), FORMAT,
                                             source.name.startswith("agent-")))
                continue
            if not source.is_dir():
                continue  # missing sources are named by the format that owns the default tree
            if (source / "projects").is_dir():
                source = source / "projects"
        except OSError:
            continue
        entries = _entries(source, found, counted=False)
        if any(e.name.endswith(".jsonl") and _is_file(e) for e in entries):
            _project(source, found, excluded, entries)
        elif source.name == "projects" or source == default_source():
            for entry in entries:
                if _is_dir(entry):
                    _project(Path(entry.path), found, excluded)
    return found
