"""Gemini CLI chat recordings: `~/.gemini/tmp/<project>/chats/session-*.jsonl`."""

from __future__ import annotations

from distiller.sources.base import Format
from distiller.sources.gemini import discover, parse

FORMAT = Format(
    name=parse.FORMAT,
    label="Gemini CLI",
    layout="tmp/<project>/chats/session-*.jsonl",
    recognises=parse.recognises,
    claims=discover.claims,
    discover=discover.discover,
    default_source=discover.default_source,
    header=parse.header,
    to_message=parse.to_message,
    skip_line=parse.skip_line,
    retraction_marker=b'"$rewindTo"',
    retracted=parse.retracted,
)
