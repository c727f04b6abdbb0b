"""Per-file format overrides (the `format_overrides` setting, and `--format` for the sources of one command): path
patterns, each naming the format that reads the files it matches, for a file whose first line does not settle its
format (a newer build's first line no format knows yet).

A pattern is an absolute path (`~` expanded) matched against a found file's absolute path: `*` and `?` stay within
one path segment, `[…]` is a set of characters, `**` spans any number of directories, and a pattern that names a
directory (no wildcard after its last `/`, or a trailing `/`) matches every file under it. The first pattern that
matches a file decides. An override changes how a found file is read, not which files are found: each format's
layout still decides that (`sources.discover`).

A forced file is read as its format when that format recognises its first line or no format does; a file whose first
line is another format's is not misread: it is skipped, counted `format_override_mismatch` (`track.look`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

MAX_PATTERN_CHARS = 4096
_WILDCARDS = frozenset("*?[")


class BadOverride(ValueError):
    """A pattern or format name that cannot be an override: the message says which and why."""


@dataclass(frozen=True, slots=True)
class Override:
    pattern: str  # absolute, `~` expanded
    format: str
    regex: re.Pattern[str]


def _segment(text: str, pattern: str) -> str:
    """One path segment's glob as a regex that never crosses a `/`."""
    out, i = [], 0
    while i < len(text):
        char = text[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            first = i + 1
            negate = text[first:first + 1] in ("!", "^")
            first += negate
            end = text.find("]", first + 1)  # a "]" right after "[" (or "[!") is one of the set
            if end < 0:
                raise BadOverride(f"format override pattern {pattern!r}: a '[' without its ']'")
            body = text[first:end].replace("\\", "\\\\").replace("[", "\\[")
            out.append("[" + ("^/" if negate else "") + body + "]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """The regex matching the absolute paths `pattern` names (see the module's docstring); BadOverride when it is
    empty, relative, over MAX_PATTERN_CHARS, holds a control character or an unclosed `[`."""
    if not pattern.strip():
        raise BadOverride("a format override pattern is empty")
    if len(pattern) > MAX_PATTERN_CHARS or any(ord(c) < 32 for c in pattern):
        raise BadOverride(f"format override pattern {pattern[:80]!r}: longer than {MAX_PATTERN_CHARS} characters or "
                          f"holding a control character")
    expanded = os.path.expanduser(pattern)
    if not os.path.isabs(expanded):
        raise BadOverride(f"format override pattern {pattern!r} is relative: give an absolute path (or one "
                          f"starting with ~)")
    under = expanded.endswith("/")
    parts = os.path.normpath(expanded).split("/")[1:]
    if parts == [""]:
        parts = []
    if parts and parts[-1] == "**":
        parts, under = parts[:-1], True
    elif not parts or not _WILDCARDS & set(parts[-1]):
        under = True  # a plain path: the file itself, or every file under the dir
    regex = ""
    for part in parts:
        regex += "(?:/[^/]+)*" if part == "**" else "/" + _segment(part, pattern)
    return re.compile(regex + ("(?:/.+)?" if under else ""), re.DOTALL)


def make(pattern: str, fmt: str, known: Iterable[str]) -> Override:
    """An override, checked: the format must be a registered one."""
    names = list(known)
    if fmt not in names:
        raise BadOverride(f"format override {pattern!r} = {fmt!r}: no such format (known: {', '.join(names)})")
    return Override(os.path.normpath(os.path.expanduser(pattern)), fmt, compile_pattern(pattern))


def forced(path: str, overrides: Sequence[Override]) -> str | None:
    """The format the first matching override names for a file, else None."""
    if not overrides:
        return None
    absolute = os.path.abspath(path)
    for override in overrides:
        if override.regex.fullmatch(absolute):
            return override.format
    return None
