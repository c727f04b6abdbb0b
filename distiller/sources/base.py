"""The seam between distiller and the assistants' transcript formats: what a format must tell, and nothing more.

A format is a `Format` of plain functions, made by its own package (`sources/<name>/`) and listed in the registry
(`distiller.sources`). The reader, the tracker and screening know transcripts only through it:

- where its files are under a root (`discover`), and which archives continue a vanished file (`continuations`);
- the session id its first line gives (`header`);
- one parsed JSONL line → a `Message` or a `Skip` (`to_message`, with `skip_line` deciding on the raw bytes first
  where parsing would be waste);
- which sessions are skipped whole (`session_skip` by the key an index gives, `entry_session_skip` by a line);
- its own envelopes and noise (`cleaning`), applied by screening to every message of the format;
- for a format that writes one message over several lines, which lines belong together (`group`);
- for a format whose later lines take turns back, which lines are taken back (`retracted`).
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from distiller.records import Message
from distiller.sources.cleaning import Cleaning

Skip = str
"""Why a line is no message ("tool_result", "non_message", …): a plain string, made for most lines read, and counted
by that name."""


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A transcript found by a format's discovery."""

    path: str
    agent: str
    format: str
    subagent: bool = False  # a subagent's transcript by its path (Claude Code): left out when `read_subagents` is off
    forced: bool = False  # its format named by a `format_overrides` pattern, not guessed (`sources.settle`)


@dataclass(slots=True)
class Discovery:
    """Live transcripts are sources; archives are only followed as renamed continuations of tracked files."""

    live: list[SourceFile] = field(default_factory=list)
    archives: list[SourceFile] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    missing: list[str] = field(default_factory=list)
    session_keys: dict[str, str] = field(default_factory=dict)  # session id or file stem -> the index's session key

    def extend(self, other: Discovery) -> None:
        self.live.extend(other.live)
        self.archives.extend(other.archives)
        self.skipped.update(other.skipped)
        self.missing.extend(m for m in other.missing if m not in self.missing)
        self.session_keys.update(other.session_keys)


@dataclass(frozen=True, slots=True)
class Header:
    """What the first line of a transcript tells: the session id (None when it gives none, then the file name is
    used), and whether the line carries an id at all, which makes its fingerprint tell the file from others."""

    session_id: str | None
    distinctive: bool


def first_entry(line: bytes | None) -> object:
    """A transcript's first complete line parsed, or None when there is none yet or it is no JSON: what every
    format's `header` starts from."""
    if line is None:
        return None
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return None


def _link_problem(entry: os.DirEntry[str]) -> str | None:
    """Why a symlink is passed over (None: it leads to a regular file): `symlink_dangling`, `symlink_loop`,
    `symlink_unreadable`, `symlink_not_file` (a dir, FIFO, device)."""
    try:
        mode = os.stat(entry.path).st_mode
    except FileNotFoundError:
        return "symlink_dangling"
    except OSError as exc:
        return "symlink_loop" if exc.errno == errno.ELOOP else "symlink_unreadable"
    return None if stat.S_ISREG(mode) else "symlink_not_file"


def transcript_file(entry: os.DirEntry[str], found: Discovery) -> bool:
    """Whether a directory entry may be read as a transcript: a regular file, or a symlink to one (read there, its
    identity the target's device and inode). Every other link is counted in `found.skipped` by reason, so no
    format passes a link over silently."""
    try:
        if entry.is_file(follow_symlinks=False):
            return True
        if not entry.is_symlink():
            return False
    except OSError:
        return False
    problem = _link_problem(entry)
    if problem is None:
        return True
    found.skipped[problem] += 1
    logging.getLogger("distiller").info("skipped %s (%s)", entry.path, problem)
    return False


def no_session_skip(key: str | None) -> Skip | None:
    return None


def no_entry_session_skip(entry: object) -> Skip | None:
    return None


def no_line_skip(data: bytes) -> Skip | None:
    return None


def no_continuations(path: str, dev: int, inode: int) -> list[str]:
    return []


@dataclass(frozen=True)
class Format:
    """One transcript format: its name (as `Message.format`), the label users read, and its functions."""

    name: str
    label: str
    recognises: Callable[[dict[str, Any]], bool]  # a parsed first line: is it this format's header?
    claims: Callable[[str], bool]  # a file name: may this format's discovery have found it?
    discover: Callable[[Iterable[Path], frozenset[str]], Discovery]  # roots, excluded agents
    default_source: Callable[[], Path]
    header: Callable[[bytes | None], Header]  # the first complete line, None when past the probe
    to_message: Callable[..., Message | Skip]  # (entry, *, agent, session_id, file, byte_start, byte_end)
    layout: str = ""  # where its files are, for a message naming a root that holds none ("<agent>/sessions/*.jsonl")
    skip_line: Callable[[bytes], Skip | None] = no_line_skip
    # A user turn's line always holds this: the look-back for the last user turn parses only such lines.
    user_line_marker: bytes = b'"user"'
    session_skip: Callable[[str | None], Skip | None] = no_session_skip
    entry_session_skip: Callable[[object], Skip | None] = no_entry_session_skip  # any parsed line that is no message
    continuations: Callable[[str, int, int], list[str]] = no_continuations  # path, device, inode
    cleaning: Cleaning | None = None  # its envelope and noise rules; None: only our own blocks are stripped
    # A format that writes one message over several lines (Claude Code: one line per content block, sharing the
    # API message's id) says which group a parsed line belongs to: (key, whether this line surely ends the group),
    # or None for a line of no group. The reader joins a group's lines into one message and never puts a cursor
    # inside a group (`pipeline.read.Reading`); the format's `to_message` makes each line's part (or a skip).
    group: Callable[[object], tuple[str, bool] | None] | None = None
    # A format whose later lines take earlier turns back (Codex's `thread_rolled_back`, Gemini's `$rewindTo`):
    # when a read's range holds `retraction_marker`, `retracted` gets every complete line of the file up to the
    # read's end, as (offset, bytes), and returns the offset of each line whose message is taken back, mapped to
    # the offset of the line that took it back. The reader skips those (`rolled_back`); one an earlier run read is
    # counted (`rolled_back_after_read`): what was committed stays, as the store keeps no undo of a commit
    # (`distill beliefs forget` removes what it taught).
    retraction_marker: bytes = b""
    retracted: Callable[[Iterable[tuple[int, bytes]]], dict[int, int]] | None = None
    # A format whose subagents' transcripts are told by their first line alone (Codex: the `session_meta` source)
    # says whether a parsed first line is a subagent's. The reader marks every message of such a file as not the
    # user's (`Message.inter_session`: its "user" is the parent model), or skips the session whole (`subagent-
    # session`) when `read_subagents` is off (`pipeline.read.open_reading`).
    subagent_header: Callable[[object], bool] | None = None
