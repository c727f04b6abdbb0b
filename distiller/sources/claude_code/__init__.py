"""Claude Code transcripts: `~/.claude/projects/<slug>/<sessionId>.jsonl` (`$CLAUDE_CONFIG_DIR` honoured)."""

from __future__ import annotations

from distiller.sources.base import Format
from distiller.sources.claude_code import discover, envelopes, parse

FORMAT = Format(
    name=parse.FORMAT,
    label="Claude Code",
    layout="projects/<slug>/*.jsonl",
    recognises=parse.recognises,
    claims=discover.claims,
    discover=discover.discover,
    default_source=discover.default_source,
    header=parse.header,
    to_message=parse.to_message,
    cleaning=envelopes.CLEANING,
    group=parse.group,
)
