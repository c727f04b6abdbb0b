"""Byte-offset reading of complete lines, and the identity of a transcript file.

A file is identified by a fingerprint of its first complete line (for OpenClaw, the session header with its
UUID), the way Vector's file source does it; device, inode and path only help to find renamed continuations.
Only newline-terminated lines are consumed, memory stays bounded by the chunk size and the line cap, and a
line over the cap is streamed past without ever being held whole.

Damaged bytes: NUL bytes (what a crashed writer or preallocation leaves, never part of JSON text) are stripped
from every line and do not count toward the cap, so a NUL-filled tail never swallows the line appended after it; a
run of NULs ending the file is consumed as a line of its own (the cursor passes it, nothing stays behind for
ever), and a sparse hole is skipped with SEEK_DATA where the OS offers it instead of being read. A UTF-8 byte
order mark before the first line is dropped; a file in UTF-16 or UTF-32 (by its byte order mark, or by the
zeros around the `{` a JSON line starts with) is named, for the caller to skip whole.
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
UTF8_BOM = b"\xef\xbb\xbf"
_SEEK_DATA = getattr(os, "SEEK_DATA", None)
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
    nul: bool = False  # NUL bytes were stripped from it


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
    line: bytes | None  # without a UTF-8 byte order mark or NUL bytes
    encoding: str | None = None  # "utf16" or "utf32": a file this reader does not decode, to be skipped whole


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


def wide_encoding(probe: bytes) -> str | None:
    """"utf16" or "utf32" when the file starts with that encoding's byte order mark, or its first character
    (leading NULs aside) is followed by a zero byte, as an ASCII "{" is in UTF-16 and UTF-32 (either byte order:
    a big-endian file's leading zeros are stripped with the NULs); None for UTF-8, which JSON text in it never
    is so."""
    if probe.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "utf32"
    if probe.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf16"
    start = probe.lstrip(b"\x00")[:4]
    if len(start) >= 2 and start[1] == 0:
        return "utf32" if start[1:4] == b"\x00\x00\x00" else "utf16"
    return None


def read_head(f: BinaryIO) -> Head | None:
    """Fingerprint the first line; None while that line is still incomplete (the file is not ready). A file of
    nothing but NULs (a crashed writer's) has an empty first line, so it is read, and its NULs consumed."""
    f.seek(0)
    probe = f.read(HEADER_PROBE_BYTES)
    encoding = wide_encoding(probe)
    newline = probe.find(b"\n")
    if newline >= 0:
        first = probe[:newline]
        return Head(hashlib.blake2b(first, digest_size=16).hexdigest(), _bare(first, 0), encoding)
    if len(probe) == HEADER_PROBE_BYTES or (probe and not probe.strip(b"\x00")):
        return Head(hashlib.blake2b(probe, digest_size=16).hexdigest(), None, encoding)
    return None


def _bare(line: bytes, start: int) -> bytes:
    """A line without NUL bytes, and without a UTF-8 byte order mark when it is the first (at offset 0)."""
    if b"\x00" in line:
        line = line.replace(b"\x00", b"")
    if start == 0 and line.startswith(UTF8_BOM):
        line = line[len(UTF8_BOM):]
    return line


def next_data(f: BinaryIO, position: int, stop: int) -> int:
    """Where data resumes at or after `position` (at most `stop`): past a sparse hole where the OS can tell,
    else `position` itself."""
    if _SEEK_DATA is None:
        return position
    try:
        found = os.lseek(f.fileno(), position, _SEEK_DATA)
    except (OSError, ValueError) as exc:  # ValueError: no file descriptor (an in-memory file)
        return stop if getattr(exc, "errno", None) == errno.ENXIO else position  # ENXIO: a hole to the end
    return min(max(found, position), stop)


def _all_nul(f: BinaryIO, start: int, stop: int) -> bool:
    position = start
    while position < stop:
        position = next_data(f, position, stop)
        if position >= stop:
            break
        f.seek(position)
        block = f.read(min(CHUNK_BYTES, stop - position))
        if not block or block.count(0) != len(block):
            return False
        position += len(block)
    return True


def tail_digest(f: BinaryIO, offset: int) -> str:
    """A checksum of the last consumed bytes: if it changes, the file was rewritten under its cursor."""
    position = f.tell()
    start = max(0, offset - TAIL_DIGEST_BYTES)
    f.seek(start)
    digest = hashlib.blake2b(f.read(offset - start), digest_size=16).hexdigest()
    f.seek(position)
    return digest


def complete_lines_end(f: BinaryIO, size: int) -> int:
    """Offset just past the last newline before `size` (0 when there is none), or `size` when all after it is NUL
    (read_lines consumes such a tail); reads backwards in chunks."""
    position, end = size, 0
    while position > 0:
        start = max(0, position - CHUNK_BYTES)
        f.seek(start)
        block = f.read(position - start)
        newline = block.rfind(b"\n")
        if newline >= 0:
            end = start + newline + 1
            break
        if block.count(0) != len(block):
            return 0 if start == 0 else _line_start(f, start)
        position = _data_end_before(f, start)  # over a sparse hole at once
    return size if end < size and _all_nul(f, end, size) else end


def _data_end_before(f: BinaryIO, position: int) -> int:
    """Where the last stretch of data before `position` ends (0 when none), found with SEEK_DATA and SEEK_HOLE
    where the OS offers them (a dense file is one stretch), else `position` itself."""
    if _SEEK_DATA is None or position == 0:
        return position
    found, at = 0, 0
    try:
        fd = f.fileno()
        while at < position:
            data = os.lseek(fd, at, _SEEK_DATA)
            if data >= position:
                break
            at = os.lseek(fd, data, os.SEEK_HOLE)
            found = min(at, position)
    except (OSError, ValueError) as exc:
        if getattr(exc, "errno", None) != errno.ENXIO:
            return position
    return found


def _line_start(f: BinaryIO, position: int) -> int:
    """Offset just past the last newline before `position` (0 when there is none)."""
    while position > 0:
        start = max(0, position - CHUNK_BYTES)
        f.seek(start)
        newline = f.read(position - start).rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        position = start
    return 0


def read_lines(
    f: BinaryIO, start: int, stop: int, *, max_line_bytes: int, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[Line]:
    """Yield the complete lines in [start, stop); a trailing partial line is left for the next run, unless it is
    nothing but NULs (then it is yielded, empty and `nul`, so the cursor passes it).

    NUL bytes are stripped from each line and do not count toward the cap; a chunk of nothing but NULs is
    followed by a jump over the sparse hole it may begin (next_data). A UTF-8 byte order mark at offset 0 is
    dropped. Newlines are found with `find` (a memchr) and each line is sliced out: `split` tests every byte
    itself, and on transcripts of large tool results that costs more than reading the file."""
    f.seek(start)
    line_start = start
    pending: list[bytes] = []
    pending_bytes = 0  # bytes of the file the partial line spans so far
    pending_data = 0  # of which not NUL
    nul = False  # the partial line had NULs stripped
    oversized = False
    position = start
    while position < stop:
        chunk = f.read(min(chunk_bytes, stop - position))
        if not chunk:
            return
        position += len(chunk)
        has_nul = b"\x00" in chunk
        pos = 0
        newline = chunk.find(b"\n")
        while newline != -1:
            line_end = line_start + pending_bytes + newline - pos + 1
            if oversized:
                yield Line(line_start, line_end, None)
                oversized = False
            else:
                piece = chunk[pos:newline]
                if has_nul and b"\x00" in piece:
                    piece = piece.replace(b"\x00", b"")
                    nul = True
                if pending:
                    pending.append(piece)
                    piece = b"".join(pending)
                    pending.clear()
                fits = len(piece) <= max_line_bytes
                if line_start == 0 and piece.startswith(UTF8_BOM):
                    piece = piece[len(UTF8_BOM):]
                yield Line(line_start, line_end, piece if fits else None, nul)
            pending_bytes = pending_data = 0
            nul = False
            line_start = line_end
            pos = newline + 1
            newline = chunk.find(b"\n", pos)
        if pos < len(chunk):
            tail = chunk[pos:]
            pending_bytes += len(tail)
            if has_nul and b"\x00" in tail:
                tail = tail.replace(b"\x00", b"")
                nul = True
                if not tail and position < stop:  # nothing but NULs: skip the hole they may begin
                    after = next_data(f, position, stop)
                    if after > position:
                        pending_bytes += after - position
                        position = after
                        f.seek(position)
            pending_data += len(tail)
            if not oversized:
                if pending_data > max_line_bytes:
                    pending.clear()
                    oversized = True
                elif tail:
                    pending.append(tail)
    if pending_bytes and not pending_data and not oversized:
        yield Line(line_start, line_start + pending_bytes, b"", True)  # a NUL tail: consumed, the cursor passes
