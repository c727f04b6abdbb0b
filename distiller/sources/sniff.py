"""Which assistant wrote a transcript, told from its first line: so an unsupported file is named, not misread.

The registered formats recognise their own first lines (`Format.recognises`); any other JSONL is `unknown`."""

from __future__ import annotations

import os
import stat
from collections import Counter
from pathlib import Path

import orjson

from distiller import compressed, sources

UNKNOWN, EMPTY = "unknown", "empty"
_UNSUPPORTED_LABELS = {UNKNOWN: "unrecognised JSONL"}
FIRST_LINE_BYTES = 64 * 1024
SURVEY_FILES = 50


def sniff_line(line: bytes) -> str:
    if not line.strip():
        return EMPTY
    try:
        entry = orjson.loads(line)
    except orjson.JSONDecodeError:
        return UNKNOWN
    if not isinstance(entry, dict):
        return UNKNOWN
    for fmt in sources.formats():
        if fmt.recognises(entry):
            return fmt.name
    return UNKNOWN


def label(kind: str) -> str:
    """What users call a format (or the kind of file) `sniff` names."""
    for fmt in sources.formats():
        if fmt.name == kind:
            return fmt.label
    return _UNSUPPORTED_LABELS.get(kind, kind)


def supported(kind: str) -> bool:
    return any(fmt.name == kind for fmt in sources.formats())


def sniff(path: str | Path) -> str:
    """The format of one file by its first line; never opens anything but a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return UNKNOWN
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return UNKNOWN
        if compressed.is_compressed(str(path)):
            with os.fdopen(os.dup(fd), "rb") as f:
                head = compressed.head(f, FIRST_LINE_BYTES).read()
        else:
            head = os.read(fd, FIRST_LINE_BYTES)
    except (OSError, compressed.Unreadable):
        return UNKNOWN
    finally:
        os.close(fd)
    return sniff_line(head.split(b"\n", 1)[0])


def survey(root: Path, depth: int = 3) -> Counter[str]:
    """Formats of the first JSONL files found under root (a bounded walk, for hints, never for reading)."""
    found: Counter[str] = Counter()
    pending = [(root, 0)]
    while pending and sum(found.values()) < SURVEY_FILES:
        directory, level = pending.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and level < depth:
                pending.append((Path(entry.path), level + 1))
            elif entry.name.endswith((".jsonl", ".jsonl.zst")) and entry.is_file(follow_symlinks=False):
                kind = sniff(entry.path)
                if kind != EMPTY:
                    found[kind] += 1
    return found
