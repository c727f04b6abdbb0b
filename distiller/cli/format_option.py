"""`--format NAME` for `run` and `reprocess`: the files of the given `--source`s read as that format (a
`format_overrides` entry per source, ahead of the settings file's; see `sources.overrides`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import click

from distiller import sources as registry
from distiller.config import Settings, override
from distiller.errors import UsageError

format_option = click.option(
    "--format", "source_format", metavar="NAME",
    help="Read the files of every --source as this format (openclaw, claude-code, codex, gemini), for a file whose "
    "first line names none; a file whose first line is another format's is skipped (format_override_mismatch).",
)


def _literal(path: str) -> str:
    """A path as a pattern that matches it alone: its wildcard characters each in a set of one."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in path)


def forced_sources(settings: Settings, sources: Sequence[Path], source_format: str | None) -> Settings:
    """The settings with each source's files forced to `source_format` (first, so they win over the settings
    file's overrides); unchanged without --format. A usage error (exit 2) for an unknown format or no --source."""
    if source_format is None:
        return settings
    names = [fmt.name for fmt in registry.formats()]
    if source_format not in names:
        raise UsageError(f"--format {source_format!r}: no such format (known: {', '.join(names)})")
    if not sources:
        raise UsageError("--format needs --source: it names the format of the files given")
    given = {_literal(os.path.abspath(os.path.expanduser(s))): source_format for s in sources}
    return override(settings, format_overrides={**given, **dict(settings.format_overrides)})
