"""Worked examples at the end of a command's --help, as the `llm` CLI shows them: the commonest uses, each with a
comment saying what it does, so a person copies a line instead of composing options from the reference."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

CommandT = TypeVar("CommandT", bound=click.Command)  # a group stays a group: its .command() is still there


def examples(*lines: str) -> Callable[[CommandT], CommandT]:
    """Append an `Examples:` block (kept as written: click's `\\b` stops the rewrapping) to the command's help."""

    def add(command: CommandT) -> CommandT:
        block = "\n".join(f"  {line}" for line in lines)
        command.help = f"{(command.help or '').rstrip()}\n\n\b\nExamples:\n{block}"
        return command

    return add
