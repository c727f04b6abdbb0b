"""Compressed transcripts (Codex's `rollout-….jsonl.zst`): read whole, once.

A compressed file is never appended to (Codex writes it whole from a finished plain rollout), so it is not tailed:
its first line is decompressed to tell the file and its format (`head`), and a read decompresses it whole into
memory (`whole`), its line offsets those of the plain file it came from, so a rollout distilled before Codex
compressed it gives the same message ids and is not counted twice. Its cursor keeps the compressed file's size and
mtime: a second run finds it unchanged and reads nothing. `zstandard` (wheels for every platform, no toolchain)
decompresses frames with or without a content size.
"""

from __future__ import annotations

import io
from typing import BinaryIO

import zstandard

SUFFIX = ".zst"
MAX_BYTES = 1 << 30  # what one compressed transcript may decompress to; a bigger one is skipped, counted


class Unreadable(Exception):
    """A compressed file that cannot be read: corrupt, cut off, or bigger than MAX_BYTES decompressed."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


def is_compressed(path: str) -> bool:
    return path.endswith(SUFFIX)


def _read(f: BinaryIO, limit: int) -> bytes:
    f.seek(0)
    try:
        with zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True, closefd=False) as reader:
            data = reader.read(limit + 1)
    except zstandard.ZstdError as exc:
        raise Unreadable("corrupt_compressed", str(exc)) from None
    return data


def head(f: BinaryIO, probe: int) -> BinaryIO:
    """The first `probe` decompressed bytes, as a file to read the first line from."""
    return io.BytesIO(_read(f, probe)[:probe])


def whole(f: BinaryIO) -> io.BytesIO:
    """The whole decompressed content, as a file to read lines from."""
    data = _read(f, MAX_BYTES)
    if len(data) > MAX_BYTES:
        raise Unreadable("compressed_too_large", f"decompresses to more than {MAX_BYTES:,} bytes")
    return io.BytesIO(data)
