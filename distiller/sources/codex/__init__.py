"""Codex CLI rollouts: `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl` (`$CODEX_HOME` honoured)."""

from __future__ import annotations

from distiller.sources.base import Format
from distiller.sources.codex import discover, envelopes, parse

FORMAT = Format(
    name=parse.FORMAT,
    label="Codex",
    layout="sessions/YYYY/MM/DD/rollout-*.jsonl",
    recognises=parse.recognises,
    claims=discover.claims,
    discover=discover.discover,
    default_source=discover.default_source,
    header=parse.header,
    to_message=parse.to_message,
    skip_line=parse.skip_line,
    entry_session_skip=parse.entry_session_skip,
    cleaning=envelopes.CLEANING,
    retraction_marker=b'"thread_rolled_back"',
    retracted=parse.retracted,
    subagent_header=parse.subagent_header,
)
