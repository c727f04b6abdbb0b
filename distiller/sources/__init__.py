"""The registry of transcript formats: the one place a format is listed. Everything else asks it.

The built-in formats are imported on first use, so that a format's package may use screening's helpers without an
import cycle (screening looks its cleaning rules up here)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path

from distiller.sources.base import Discovery, Format

log = logging.getLogger("distiller")
_registered: list[Format] = []
_by_name: dict[str, Format] = {}
_loaded = False


def _builtin() -> list[Format]:
    from distiller.sources import openclaw

    return [openclaw.FORMAT]


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


def default_sources() -> list[Path]:
    return list(dict.fromkeys(fmt.default_source() for fmt in formats()))


def discover(roots: Iterable[Path], excluded_agents: Iterable[str], *, state_dir: Path | None = None) -> Discovery:
    """What every format finds under the roots, in registration order. Nothing inside `state_dir` (its database,
    WAL, lock, batch files) is ever a source, whatever link or root leads there: such a file is counted
    `inside_state_dir`."""
    roots, excluded = list(roots), frozenset(excluded_agents)
    found = Discovery()
    for fmt in formats():
        found.extend(fmt.discover(roots, excluded))
    if state_dir is not None:
        _outside(found, state_dir)
    return found


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
