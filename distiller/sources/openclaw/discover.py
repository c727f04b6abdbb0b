"""Find transcript files under the sources and classify every other file found there, with a reason."""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections.abc import Iterable
from pathlib import Path

import orjson

from distiller.sources.base import Discovery, SourceFile, transcript_file

log = logging.getLogger("distiller")

FORMAT = "openclaw"

ARCHIVE_MARKERS = (".jsonl.reset.", ".jsonl.deleted.")


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
        _passed_over(found, "unreadable_index", path)
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


def _passed_over(found: Discovery, reason: str, path: Path | str) -> None:
    """A file (or agent dir) not read, counted by reason and named with -v: every skipped file can be told."""
    found.skipped[reason] += 1
    log.info("skipped %s (%s)", path, reason)


def _skip(found: Discovery, path: Path | str, exc: OSError) -> None:
    """A directory or link that cannot be followed is skipped with a counted reason; the rest is still read."""
    reason = "symlink_loop" if exc.errno == errno.ELOOP else "unreadable_dir"
    found.skipped[reason] += 1
    log.warning("skipped %s (%s): %s", path, reason, exc.strerror or exc)


def _entries(directory: Path, found: Discovery) -> list[os.DirEntry[str]] | None:
    try:
        with os.scandir(directory) as listing:
            return sorted(listing, key=lambda e: e.name)
    except OSError as exc:
        _skip(found, directory, exc)
        return None


def _is_dir(path: Path | os.DirEntry[str], found: Discovery) -> bool:
    """Whether a path is a directory (following links); a loop or an unreadable parent is counted, not raised."""
    try:
        return path.is_dir() if isinstance(path, os.DirEntry) else stat.S_ISDIR(os.stat(path).st_mode)
    except FileNotFoundError:
        return False
    except OSError as exc:
        _skip(found, path.path if isinstance(path, os.DirEntry) else path, exc)
        return False


def _scan_sessions_dir(directory: Path, agent: str, found: Discovery, entries: list[os.DirEntry[str]] | None = None) -> None:
    if entries is None:
        entries = _entries(directory, found)
    for entry in entries or ():
        if not transcript_file(entry, found):
            continue
        kind = classify(entry.name)
        if kind == "live":
            found.live.append(SourceFile(entry.path, agent, FORMAT))
        elif kind == "archive":
            found.archives.append(SourceFile(entry.path, agent, FORMAT))
        elif kind == "index":
            if entry.name == "sessions.json":
                _read_session_index(Path(entry.path), found)
        else:
            _passed_over(found, kind, entry.path)


def _is_sessions_dir(directory: Path, entries: list[os.DirEntry[str]]) -> bool:
    def transcript(entry: os.DirEntry[str]) -> bool:
        try:
            return entry.is_file() and classify(entry.name) in ("live", "archive")
        except OSError:
            return False

    return directory.name == "sessions" or any(transcript(entry) for entry in entries)  # a link to a file too


def discover(sources: Iterable[Path], excluded_agents: Iterable[str]) -> Discovery:
    """Accept an agents dir (`<agent>/sessions/*.jsonl`), an OpenClaw state dir, a sessions dir or one file.

    A directory that cannot be read, a symlink loop or an unreadable source is skipped with a counted reason
    (never an error): one bad entry must not stop the hourly run from reading everything else."""
    excluded = frozenset(excluded_agents)
    found = Discovery()
    for source in sources:
        source = Path(source).expanduser()
        try:
            mode = os.stat(source).st_mode
        except FileNotFoundError:
            found.missing.append(str(source))
            continue
        except OSError as exc:
            _skip(found, source, exc)
            continue
        if stat.S_ISREG(mode):
            agent = agent_of(source)
            if agent in excluded:
                _passed_over(found, "excluded_agent", source)
            else:
                found.live.append(SourceFile(str(source), agent, FORMAT))
            continue
        if not stat.S_ISDIR(mode):
            _passed_over(found, "not_regular", source)
            continue
        try:
            nested = stat.S_ISDIR(os.stat(source / "agents").st_mode) and not (source / "sessions").is_dir()
        except FileNotFoundError:
            nested = False
        except OSError as exc:
            _skip(found, source, exc)
            continue
        if nested:
            source = source / "agents"
        entries = _entries(source, found)
        if entries is None:
            continue
        if _is_sessions_dir(source, entries):
            agent = agent_of(source / "x.jsonl")
            if agent in excluded:
                _passed_over(found, "excluded_agent", source)
            else:
                _scan_sessions_dir(source, agent, found, entries)
            continue
        for agent_dir in entries:
            if not _is_dir(agent_dir, found):
                continue
            if agent_dir.name in excluded:
                _passed_over(found, "excluded_agent", agent_dir.path)
                continue
            sessions = Path(agent_dir.path) / "sessions"
            if _is_dir(sessions, found):
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


def continuations(path: str, dev: int, inode: int) -> list[str]:
    """Archives next to a vanished tracked path that may be its renamed continuation (`<name>.reset.<ts>`,
    `<name>.deleted.<ts>`), those named after it first."""
    directory, name = os.path.split(path)
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    found = []
    for entry in entries:
        if classify(entry.name) != "archive" or entry.path == path:
            continue
        try:
            same_inode = (entry.stat().st_dev, entry.stat().st_ino) == (dev, inode)
        except OSError:
            continue
        if same_inode or entry.name.startswith(name + "."):
            found.append(entry.path)
    return sorted(found, key=lambda p: not p.startswith(path + "."))
