"""Byte-offset reading of complete lines, and the identity of a transcript file.

A file is identified by a fingerprint of its first complete line (for OpenClaw, the session header with its
UUID), the way Vector's file source does it; device, inode and path only help to find renamed continuations.
Only newline-terminated lines are consumed, memory stays bounded by the chunk size and the line cap, and a
line over the cap is streamed past without ever being held whole.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat as stat_module
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

CHUNK_BYTES = 1 << 20
HEADER_PROBE_BYTES = 64 * 1024
TAIL_DIGEST_BYTES = 4096


@dataclass(slots=True)
class Line:
    """A complete line at [start, end) of the file; `data` is None when it exceeded the line cap.

    Not frozen: one is made for every line read, and a frozen dataclass sets each field through
    object.__setattr__, several times slower."""

    start: int
    end: int
    data: bytes | None


@dataclass(frozen=True, slots=True)
class Stat:
    dev: int
    inode: int
    size: int
    mtime_ns: int


@dataclass(frozen=True, slots=True)
class Head:
    """The first complete line of a file and its fingerprint; `line` is None when it is longer than the probe."""

    fingerprint: str
    line: bytes | None


def open_regular(path: str) -> BinaryIO:
    """Open a file for reading only if it is a regular file: opening a FIFO blocks until a writer comes, and a
    device never ends, so neither is ever read (OSError ENODEV "not a regular file" instead)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        if not stat_module.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.ENODEV, "not a regular file", path)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def skip_reason(exc: OSError) -> str:
    """The counted reason a file that could not be opened is skipped."""
    return "not_regular" if exc.errno == errno.ENODEV else "unreadable"


def stat_of(st: os.stat_result) -> Stat:
    return Stat(dev=st.st_dev, inode=st.st_ino, size=st.st_size, mtime_ns=st.st_mtime_ns)


def read_head(f: BinaryIO) -> Head | None:
    """Fingerprint the first line; None while that line is still incomplete (the file is not ready)."""
    f.seek(0)
    probe = f.read(HEADER_PROBE_BYTES)
    newline = probe.find(b"\n")
    if newline >= 0:
        first = probe[:newline]
        return Head(fingerprint=hashlib.blake2b(first, digest_size=16).hexdigest(), line=first)
    if len(probe) == HEADER_PROBE_BYTES:
        return Head(fingerprint=hashlib.blake2b(probe, digest_size=16).hexdigest(), line=None)
    return None


def tail_digest(f: BinaryIO, offset: int) -> str:
    """A checksum of the last consumed bytes: if it changes, the file was rewritten under its cursor."""
    position = f.tell()
    start = max(0, offset - TAIL_DIGEST_BYTES)
    f.seek(start)
    digest = hashlib.blake2b(f.read(offset - start), digest_size=16).hexdigest()
    f.seek(position)
    return digest


def complete_lines_end(f: BinaryIO, size: int) -> int:
    """Offset just past the last newline before `size` (0 when there is none); reads backwards in chunks."""
    position = size
    while position > 0:
        start = max(0, position - CHUNK_BYTES)
        f.seek(start)
        block = f.read(position - start)
        newline = block.rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        position = start
    return 0


def read_lines(
    f: BinaryIO, start: int, stop: int, *, max_line_bytes: int, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[Line]:
    """Yield the complete lines in [start, stop); a trailing partial line is left for the next run.

    Newlines are found with `find` (a memchr) and each line is sliced out: `split` tests every byte itself, and
    on transcripts of large tool results that costs more than reading the file."""
    f.seek(start)
    line_start = start
    pending: list[bytes] = []
    pending_bytes = 0
    oversized = False
    remaining = stop - start
    while remaining > 0:
        chunk = f.read(min(chunk_bytes, remaining))
        if not chunk:
            return
        remaining -= len(chunk)
        pos = 0
        newline = chunk.find(b"\n")
        while newline != -1:
            line_end = line_start + pending_bytes + newline - pos + 1
            if oversized:
                yield Line(line_start, line_end, None)
                oversized = False
            else:
                piece = chunk[pos:newline]
                if pending:
                    pending.append(piece)
                    piece = b"".join(pending)
                    pending.clear()
                yield Line(line_start, line_end, piece if len(piece) <= max_line_bytes else None)
            pending_bytes = 0
            line_start = line_end
            pos = newline + 1
            newline = chunk.find(b"\n", pos)
        if pos < len(chunk):
            tail = chunk[pos:]
            pending_bytes += len(tail)
            if not oversized:
                if pending_bytes > max_line_bytes:
                    pending.clear()
                    oversized = True
                else:
                    pending.append(tail)
