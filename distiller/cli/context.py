"""What every command receives from the group: the settings, where its result goes, and the config file named.

`CliState` is click's `ctx.obj` (a TypedDict, so `obj["settings"]` is typed in every command module)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict

import click
import orjson

from distiller.config import Settings
from distiller.terminal import printable


class Output:
    def __init__(self, as_json: bool, quiet: bool = False) -> None:
        self.as_json = as_json
        self.quiet = quiet

    def emit(self, payload: Mapping[str, object], human: str) -> None:
        """The result: JSON with --json (even with -q, it is what was asked for), else text unless -q."""
        if self.as_json:
            click.echo(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS).decode())
        elif not self.quiet:
            click.echo(printable(human, newlines=True))


class CliState(TypedDict):
    settings: Settings
    out: Output
    config_file: Path | None
