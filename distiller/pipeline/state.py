"""`init` and `status`: create the state (optionally marking what is present as read) and report how far behind
the transcripts are."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from distiller import sources as registry
from distiller.config import Settings
from distiller.errors import DistillError
from distiller.events import Tally
from distiller.lock import held, run_lock
from distiller.pipeline.run import resolve_sources
from distiller.records import Cursor
from distiller.store import cursors, messages, runs
from distiller.store.db import connect_for, transaction
from distiller.tail import complete_lines_end, open_regular, tail_digest
from distiller.track import identity, load_cursors, observe, save_cursors


@dataclass(frozen=True)
class InitSummary:
    db_path: str
    mode: str
    files_marked: int
    files_reset: int

    def as_dict(self) -> dict[str, Any]:
        return {"db": self.db_path, "mode": self.mode, "files_marked": self.files_marked, "files_reset": self.files_reset}


def _present_ends(roots: list[str], settings: Settings, known: dict[str, Cursor]) -> list[tuple[Cursor, int | None]]:
    """A cursor at the last complete line of every live file, with the offset it replaces (None when new)."""
    marks: dict[str, tuple[Cursor, int | None]] = {}
    by_path = {c.path: c for c in known.values() if c.state == "active"}
    for candidate in registry.discover([Path(r) for r in roots], settings.excluded_agents,
                                       subagents=settings.read_subagents, state_dir=settings.state_dir,
                                       overrides=settings.format_overrides).live:
        seen = observe(candidate.path, candidate.agent, candidate.format, Tally(), candidate.forced)
        if seen is None:
            continue
        file_id = identity(seen, known, by_path, set(marks))
        if file_id in marks:
            continue
        try:
            with open_regular(seen.path) as f:
                end = complete_lines_end(f, seen.stat.size)
                digest = tail_digest(f, end)
        except OSError:
            continue  # gone or changed since it was observed: the next run reads it
        cursor = Cursor(file_id, seen.path, seen.agent, seen.session_id, seen.stat.dev, seen.stat.inode,
                        seen.stat.size, seen.stat.mtime_ns, end, digest)
        previous = known.get(file_id)
        marks[file_id] = (cursor, previous.offset if previous else None)
    return list(marks.values())


def init(settings: Settings, sources: Sequence[Path] | None = None, *, mode: str = "create") -> InitSummary:
    """Create the state; `from-now` marks every present complete line as read, `from-start` forgets all cursors.

    `from-now` with a source that does not exist is refused before anything is created: marking nothing as read
    would make the first real run read (and pay for) the whole history it was meant to skip."""
    roots = resolve_sources(sources, settings)
    missing = [root for root in roots if not os.path.exists(root)]
    if mode == "from-now" and missing:
        given = "" if sources else " (the default: every known assistant's tree, see README)"
        raise DistillError(f"source not found: {', '.join(missing)}{given}; nothing marked as read: pass --source "
                           f"with the directory that holds your transcripts")
    marks: list[tuple[Cursor, int | None]] = []
    reset = 0
    with run_lock(settings.lock_path):
        with connect_for(settings) as con:
            known = {c.file_id: c for c in load_cursors(con)}
        if mode == "from-now":
            marks = _present_ends(roots, settings, known)
        with connect_for(settings) as con, transaction(con):
            if mode == "from-start":
                reset = cursors.reset_all(con)
            save_cursors(con, marks)
    return InitSummary(str(settings.db_path), mode, len(marks), reset)


@dataclass(frozen=True)
class StatusReport:
    db_path: str
    files_tracked: int
    files_gone: int
    files_untracked: int
    bytes_behind: int
    messages_ingested: int
    last_run: runs.RunRecord | None

    def as_dict(self) -> dict[str, Any]:
        last = self.last_run
        return {
            "db": self.db_path,
            "files_tracked": self.files_tracked,
            "files_gone": self.files_gone,
            "files_untracked": self.files_untracked,
            "bytes_behind": self.bytes_behind,
            "messages_ingested": self.messages_ingested,
            "last_run": None
            if last is None
            else {
                "run_id": last.run_id,
                "started_at": last.started_at,
                "finished_at": last.finished_at,
                "status": last.status,
                "sources": list(last.sources),
                "error": last.error,
                **last.counters,
            },
        }


def status(settings: Settings, sources: Sequence[Path] | None = None) -> StatusReport:
    """What is tracked, how far behind the files are, and what the last run did (sources: the last run's)."""
    if not settings.db_path.exists():
        return StatusReport(str(settings.db_path), 0, 0, 0, 0, 0, None)
    with connect_for(settings, read_only=True) as con:
        tracked = load_cursors(con)
        recent = runs.recent(con, 1)
        ingested = messages.count(con)
    recent = runs.as_seen(recent, held(settings.lock_path))
    last = recent[0] if recent else None
    roots = resolve_sources(sources, settings) if sources or last is None else list(last.sources)
    behind = 0
    active = [c for c in tracked if c.state == "active"]
    for cursor in active:
        try:
            behind += max(0, os.stat(cursor.path).st_size - cursor.offset)
        except OSError:
            continue
    known_paths = {c.path for c in active}
    untracked = 0
    for candidate in registry.discover([Path(r) for r in roots], settings.excluded_agents,
                                       subagents=settings.read_subagents, state_dir=settings.state_dir,
                                       overrides=settings.format_overrides).live:
        if candidate.path not in known_paths:
            try:
                behind += os.stat(candidate.path).st_size
                untracked += 1
            except OSError:
                continue
    return StatusReport(
        str(settings.db_path), len(active), len(tracked) - len(active), untracked, behind, ingested, last
    )

