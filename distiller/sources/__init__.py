"""The registry of transcript formats: the one place a format is listed. Everything else asks it.

The built-in formats are imported on first use: a command that never reads a transcript does not pay for them.
Screening looks each format's cleaning rules up here; the formats write those rules in `sources.cleaning` and never
import screening, so layers import downwards only."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from distiller.sources import overrides as overriding
from distiller.sources.base import Discovery, Format, SourceFile

log = logging.getLogger("distiller")
_registered: list[Format] = []
_by_name: dict[str, Format] = {}
_loaded = False


def _builtin() -> list[Format]:
    from distiller.sources import claude_code, codex, gemini, openclaw

    return [openclaw.FORMAT, claude_code.FORMAT, codex.FORMAT, gemini.FORMAT]


def formats() -> tuple[Format, ...]:
    """Every format, the built-in ones first; the first is the default."""
    global _loaded
    if not _loaded:
        _registered[:0] = _builtin()
        _by_name.update((fmt.name, fmt) for fmt in _registered)
        _loaded = True
    return tuple(_registered)


def builtin(name: str) -> bool:
    """Whether the format of that name is a built-in one, which a process started afresh (a scan worker) knows
    too; a format registered at run time is known only to the process that registered it."""
    return named(name) in _builtin()


def register(fmt: Format) -> None:
    """Add a format (a new package calls this once; a test may too, and `unregister` it after)."""
    formats()
    if any(known.name == fmt.name for known in _registered):
        raise ValueError(f"a format named {fmt.name!r} is registered already")
    _registered.append(fmt)
    _by_name[fmt.name] = fmt


def unregister(name: str) -> None:
    formats()
    _registered[:] = [fmt for fmt in _registered if fmt.name != name]
    _by_name.pop(name, None)


def named(name: str) -> Format:
    fmt = _by_name.get(name)
    if fmt is None:
        formats()
        fmt = _by_name.get(name)
        if fmt is None:
            raise KeyError(f"no transcript format named {name!r}")
    return fmt


def default() -> Format:
    return formats()[0]


def for_path(path: str) -> Format:
    """The format of a tracked file found again by its path (a vanished file's continuation): the first that claims
    its name, else the default."""
    name = os.path.basename(path)
    for fmt in formats():
        if fmt.claims(name):
            return fmt
    return default()


def default_sources(skip: Iterable[str] = ()) -> list[Path]:
    """The default tree of every format not skipped that is present on this machine; when none is, the first
    format's (so a run names what it expected)."""
    chosen = [fmt for fmt in formats() if fmt.name not in set(skip)]
    present = [fmt.default_source() for fmt in chosen if fmt.default_source().exists()]
    return list(dict.fromkeys(present or [fmt.default_source() for fmt in chosen[:1] or formats()[:1]]))


def discover(roots: Iterable[Path], excluded_agents: Iterable[str], *, subagents: bool = True,
             state_dir: Path | None = None, overrides: Sequence[tuple[str, str]] = ()) -> Discovery:
    """What every format finds under the roots, in registration order, each file once: a file two formats'
    layouts both take is listed by the first, and its own first line settles which format reads it
    (`track.look`). A file an override names (`overrides`: (pattern, format) pairs, `sources.overrides`) is the
    named format's, `forced`. Subagents' transcripts are left out (counted) unless `subagents`. Nothing inside
    `state_dir` (its database, WAL, lock, batch files) is ever a source, whatever link or root leads there: such a
    file is counted `inside_state_dir`."""
    roots, excluded = list(roots), frozenset(excluded_agents)
    names = [fmt.name for fmt in formats()]
    table = [overriding.make(pattern, name, names) for pattern, name in overrides]
    found = Discovery()
    for fmt in formats():
        found.extend(fmt.discover(roots, excluded))
    by_path: dict[str, list[SourceFile]] = {}
    for candidate in found.live:
        by_path.setdefault(candidate.path, []).append(candidate)
    live = []
    for path, candidates in by_path.items():
        candidate = candidates[0]
        forced = overriding.forced(path, table)
        if forced is not None:
            own = next((c for c in candidates if c.format == forced), None) or _found_as(forced, path, excluded, found)
            if own is None:
                continue
            candidate = replace(own, forced=True)
        elif len(candidates) > 1:
            from distiller.sources import sniff  # here: sniff asks the registry, which must be loaded first

            kind = sniff.sniff(path)
            candidate = next((c for c in candidates if c.format == kind), candidate)
        if candidate.subagent and not subagents:
            found.skipped["subagent"] += 1
            continue
        live.append(candidate)
    found.live = live
    if state_dir is not None:
        _outside(found, state_dir)
    return found


def _found_as(name: str, path: str, excluded: frozenset[str], found: Discovery) -> SourceFile | None:
    """A file another format's layout found, as the format an override names finds it given alone (its agent);
    None when that format does not take it (its counted reason, e.g. `excluded_agent`, added to `found`)."""
    alone = named(name).discover([Path(path)], excluded)
    own = next((c for c in alone.live if c.path == path), None)
    if own is None:
        found.skipped.update(alone.skipped)
        if not alone.skipped:
            found.skipped["format_override_not_taken"] += 1
        log.warning("skipped %s: format_overrides names %s, whose discovery does not take it", path, name)
    return own


def settle(name: str, first_line: object, forced: bool = False) -> str | None:
    """The format that reads a file whose first line parsed to `first_line`, when `name` was the guess of the
    discovery that found it: that one if it recognises the line, else the registered format that does, else None
    (no registered format wrote it). A line that is no JSON object says nothing: the guess stands. A `forced`
    name (an override's) stands unless another format recognises the line: then None, the file is not misread."""
    if not isinstance(first_line, dict):
        return name
    guess = named(name)
    if guess.recognises(first_line):
        return name
    if forced:
        return None if any(fmt.recognises(first_line) for fmt in formats()) else name
    for fmt in formats():
        if fmt.recognises(first_line):
            return fmt.name
    return None


def _outside(found: Discovery, state_dir: Path) -> None:
    protected = os.path.realpath(state_dir)

    def inside(path: str) -> bool:
        real = os.path.realpath(path)
        return real == protected or real.startswith(protected.rstrip(os.sep) + os.sep)

    for kind in ("live", "archives"):
        kept = []
        for source in getattr(found, kind):
            if inside(source.path):
                found.skipped["inside_state_dir"] += 1
                log.warning("skipped %s (inside_state_dir): distiller's own state is never read", source.path)
            else:
                kept.append(source)
        setattr(found, kind, kept)
