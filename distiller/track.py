"""Reconcile the files on disk with the stored cursors: what to read this run, from where, and why.

The key of a cursor is the fingerprint of the file's first line, or, when that line cannot tell files apart (no id in
it, a copied header), the fingerprint with the file's device and inode. A file at a tracked path whose inode changed
(write-temp-and-rename), that shrank below its cursor (truncation), or whose consumed bytes no longer end in a
newline (rewrite in place) is reread from 0; the ledger of ingested message ids keeps that from counting anything
twice. A tracked path that now holds another file, or none, is followed to its renamed continuation
(`<name>.reset.<ts>`, `<name>.deleted.<ts>`) so text written just before `/new` is not lost.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from distiller import compressed, sources
from distiller.events import Tally
from distiller.records import Cursor
from distiller.sources.base import Discovery
from distiller.store import cursors as cursor_rows
from distiller.tail import HEADER_PROBE_BYTES, Stat, open_regular, read_head, skip_reason, stat_of, tail_digest

if TYPE_CHECKING:  # connections are only handed in: a scan worker imports this module and loads no DuckDB
    import duckdb


def load_cursors(con: duckdb.DuckDBPyConnection) -> list[Cursor]:
    return cursor_rows.load(con)


def save_cursors(con: duckdb.DuckDBPyConnection, moves: Iterable[tuple[Cursor, int | None]]) -> None:
    """Insert new cursors, advance known ones by compare-and-set with the offset each replaces (store.cursors)."""
    cursor_rows.save(con, list(moves))


@dataclass(frozen=True, slots=True)
class ReadPlan:
    """Read `target.path` from `start` to `stop`, then move the cursor `target.file_id` off `expected_offset`."""

    target: Cursor
    start: int
    stop: int
    expected_offset: int | None
    event: str
    format: str  # the name of the transcript format that reads it


@dataclass(frozen=True, slots=True)
class Observed:
    path: str
    agent: str
    stat: Stat
    fingerprint: str
    session_id: str
    distinctive: bool  # the first line carries an id: its fingerprint tells this file from others
    format: str

    @property
    def by_inode(self) -> str:
        """The identity of a file whose first line does not tell it apart: fingerprint, device and inode."""
        return f"{self.fingerprint}@{self.stat.dev}:{self.stat.inode}"


def _unchanged(cursor: Cursor, stat: Stat) -> bool:
    return (cursor.dev, cursor.inode, cursor.size, cursor.mtime_ns) == (stat.dev, stat.inode, stat.size, stat.mtime_ns)


def _read_header(head_line: bytes | None, path: str, fmt: str) -> tuple[str, bool]:
    """The session id (from the header, else the file name) and whether the first line carries an id at all."""
    header = sources.named(fmt).header(head_line)
    return header.session_id or Path(path).name.split(".jsonl")[0], header.distinctive


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A file that cannot be observed (yet): the reason counted for it, and what the system said."""

    reason: str
    detail: str = ""


Look = Observed | Unreadable | None  # None: the file is gone


def look(path: str, agent: str, fmt: str, forced: bool = False) -> Look:
    """Stat and fingerprint a file. Depends on nothing but the file, so a scan worker may look ahead of the
    planning (`plan_reads`' `ahead`). `forced`: `fmt` is named by a format override, not guessed."""
    try:
        with open_regular(path) as f:
            stat = stat_of(os.fstat(f.fileno()))
            head = read_head(compressed.head(f, HEADER_PROBE_BYTES) if compressed.is_compressed(path) else f)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return Unreadable(skip_reason(exc), exc.strerror or str(exc))
    except compressed.Unreadable as exc:
        return Unreadable(exc.reason, str(exc))
    if head is None:
        return Unreadable("header_incomplete" if stat.size else "empty")
    if head.encoding is not None:  # never read line by line as garbage: skipped whole, by name
        return Unreadable(f"encoding_{head.encoding}")
    settled = _settled(head.line, fmt, forced)
    if settled is None and forced:
        return Unreadable("format_override_mismatch", f"format_overrides names {fmt}, but another format's first "
                                                      f"line opens it: not misread")
    if settled is None:
        return Unreadable("unsupported_format", "an unrecognised JSONL: no known assistant wrote its first line")
    return Observed(path, agent, stat, head.fingerprint, *_read_header(head.line, path, settled), settled)


def _settled(head_line: bytes | None, fmt: str, forced: bool = False) -> str | None:
    """The format of a file by its first line (`sources.settle`): the discovery's guess is only a guess, since
    one format's layout may hold another's files (a Claude Code project dir looks like an OpenClaw sessions dir)."""
    if head_line is None:
        return fmt
    try:
        entry = orjson.loads(head_line)
    except orjson.JSONDecodeError:
        return fmt
    return sources.settle(fmt, entry, forced)


def _noted(seen: Look, path: str, tally: Tally) -> Observed | None:
    if isinstance(seen, Unreadable):
        tally.file_skipped(seen.reason, path, seen.detail)
        return None
    return seen


def observe(path: str, agent: str, fmt: str, tally: Tally, forced: bool = False) -> Observed | None:
    """Stat and fingerprint a file; None (with the reason counted) when it cannot be read or is not ready."""
    return _noted(look(path, agent, fmt, forced), path, tally)


def _still_there(cursor: Cursor) -> bool:
    try:
        st = os.stat(cursor.path)
    except OSError:
        return False
    return cursor.state == "active" and (st.st_dev, st.st_ino) == (cursor.dev, cursor.inode)


def _archived(cursor: Cursor) -> bool:
    """The tracked file itself (its device and inode) lives on as one of its archives (`.reset.`, `.deleted.`):
    a file elsewhere with its first line is a copy, and the archive its continuation."""
    for path in _continuations(cursor, sources.for_path(cursor.path).name):
        try:
            st = os.stat(path)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (cursor.dev, cursor.inode):
            return True
    return False


def identity(seen: Observed, by_id: dict[str, Cursor], by_path: dict[str, Cursor], claimed: set[str]) -> str:
    """The cursor key of a file: the fingerprint of its first line, or fingerprint + device + inode when that
    fingerprint cannot tell it from another file (no id in the first line, a copied header, a header already
    claimed this run). A file keeps the key its cursor has at its path; a fingerprint whose tracked file has left
    its path is a rename, followed."""
    here = by_path.get(seen.path)
    if (here is not None and here.file_id not in claimed and (here.dev, here.inode) == (seen.stat.dev, seen.stat.inode)
            and here.file_id in (seen.fingerprint, seen.by_inode)):
        return here.file_id
    if not seen.distinctive or seen.fingerprint in claimed:
        return seen.by_inode
    tracked = by_id.get(seen.fingerprint)
    if tracked is not None and tracked.path != seen.path and (
            _still_there(tracked)
            or ((tracked.dev, tracked.inode) != (seen.stat.dev, seen.stat.inode) and _archived(tracked))):
        return seen.by_inode  # a copy of a tracked file that is still where it was, or lives on as its archive
    return seen.fingerprint


def _consumed_bytes_intact(path: str, cursor: Cursor) -> bool:
    try:
        with open_regular(path) as f:
            return tail_digest(f, cursor.offset) == cursor.tail_digest
    except OSError:
        return False


def _plan(seen: Observed, file_id: str, tracked: Cursor | None) -> ReadPlan:
    target = Cursor(
        file_id=file_id,
        path=seen.path,
        agent=seen.agent,
        session_id=seen.session_id,
        dev=seen.stat.dev,
        inode=seen.stat.inode,
        size=seen.stat.size,
        mtime_ns=seen.stat.mtime_ns,
        offset=0,
        tail_digest="",
    )
    if tracked is None:
        return ReadPlan(target, 0, seen.stat.size, None, "new", seen.format)
    # A session marked as skipped earlier in the file stays skipped when reading resumes mid-file.
    resumed = replace(target, session_skip=tracked.session_skip)
    moved = tracked.path != seen.path
    same_inode = (tracked.dev, tracked.inode) == (seen.stat.dev, seen.stat.inode)
    if seen.stat.size < tracked.offset:
        event, start = "truncated", 0
    elif not moved and not same_inode:
        event, start = "replaced", 0
    elif not _consumed_bytes_intact(seen.path, tracked):
        event, start = "rewritten", 0
    else:
        event, start = ("renamed" if moved else "appended"), tracked.offset
        target = resumed
    return ReadPlan(target, start, seen.stat.size, tracked.offset, event, seen.format)


def _in_scope(path: str, roots: list[str]) -> bool:
    for root in roots:
        if path == root or path.startswith((root + os.sep, root + ".")):
            return True
    return False


def _continuations(cursor: Cursor, fmt: str) -> list[str]:
    """Archives next to a vanished tracked path that may be its renamed continuation."""
    return sources.named(fmt).continuations(cursor.path, cursor.dev, cursor.inode)


_UNSEEN = Unreadable("")  # a file not looked at ahead


def plan_reads(
    discovery: Discovery, cursors: Iterable[Cursor], roots: list[str], excluded_agents: Iterable[str], tally: Tally,
    ahead: Iterator[Look] | None = None,
) -> tuple[list[ReadPlan], list[str]]:
    """The reads of this run, and the ids of tracked files that are gone for good. `ahead` is what `look` finds of
    each of `discovery.live` in order, looked at ahead (by scan workers); one is taken for each, needed or not."""
    cursors = list(cursors)
    excluded = frozenset(excluded_agents)
    by_path = {c.path: c for c in cursors if c.state == "active"}
    by_id = {c.file_id: c for c in cursors}
    claimed: set[str] = set()
    inodes: set[tuple[int, int]] = set()  # of the files claimed: a hard link is the same file under two names
    plans: list[ReadPlan] = []

    def consider(seen: Observed, file_id: str) -> None:
        inode = (seen.stat.dev, seen.stat.inode)
        if file_id in claimed or inode in inodes:
            tally.file_skipped("duplicate_identity", seen.path)
            return
        claimed.add(file_id)
        inodes.add(inode)
        plan = _plan(seen, file_id, by_id.get(file_id))
        tally.file_event(plan.event, seen.path)
        plans.append(plan)

    for candidate in discovery.live:
        looked = _UNSEEN if ahead is None else next(ahead)
        tracked = by_path.get(candidate.path)
        if tracked is not None:
            try:
                if _unchanged(tracked, stat_of(os.stat(candidate.path))):
                    claimed.add(tracked.file_id)
                    inodes.add((tracked.dev, tracked.inode))
                    tally.file_event("unchanged", candidate.path)
                    continue
            except OSError:
                pass
        if looked is _UNSEEN:
            looked = look(candidate.path, candidate.agent, candidate.format, candidate.forced)
        seen = _noted(looked, candidate.path, tally)
        if seen is not None:
            consider(seen, identity(seen, by_id, by_path, claimed))

    gone: list[str] = []
    for cursor in cursors:
        if (
            cursor.state != "active"
            or cursor.file_id in claimed
            or cursor.agent in excluded
            or not _in_scope(cursor.path, roots)
        ):
            continue
        fmt = sources.for_path(cursor.path).name
        for path in [cursor.path, *_continuations(cursor, fmt)]:
            try:
                if path == cursor.path and _unchanged(cursor, stat_of(os.stat(path))):
                    claimed.add(cursor.file_id)
                    inodes.add((cursor.dev, cursor.inode))
                    tally.file_event("unchanged", path)
                    break
            except OSError:
                continue
            seen = observe(path, cursor.agent, fmt, tally)
            if seen is not None and cursor.file_id in (seen.fingerprint, seen.by_inode):
                consider(seen, cursor.file_id)
                break
        else:
            gone.append(cursor.file_id)
            tally.file_event("gone", cursor.path)
    followed = {p.target.path for p in plans} | {c.path for c in cursors if c.file_id in claimed}
    for archive in discovery.archives:
        if archive.path not in followed:
            tally.file_skipped("archive", archive.path)
    return plans, gone

