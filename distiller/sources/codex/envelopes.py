"""Codex's scaffolding inside a user message, as cleaning rules: what the CLI adds around the words typed (the
parts made only of scaffolding are left out by the parser already)."""

from __future__ import annotations

import re

from distiller.sources.cleaning import BLOCKS, USER, Cleaning, Needles, Rule, remove

ENVELOPE_BLOCKS: tuple[str, ...] = (
    "environment_context", "user_instructions", "INSTRUCTIONS", "skills_instructions", "permissions instructions",
    "turn_aborted", "codex_internal_context", "user_shell_command", "skill",
)

_AGENTS_HEADING = re.compile(r"^[ \t]*# AGENTS\.md instructions for [^\n]*(?:\n|\Z)", re.MULTILINE)


def _agents_heading(text: str, events: list[str]) -> str:
    return remove(_AGENTS_HEADING, text, "envelope:agents-md", events)


CLEANING = Cleaning(
    blocks=ENVELOPE_BLOCKS,
    rewrites=(BLOCKS, Rule("agents-md", Needles(anywhere=("# AGENTS.md instructions",)), _agents_heading, (USER,))),
)
