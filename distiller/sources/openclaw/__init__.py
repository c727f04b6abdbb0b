"""OpenClaw (pi SessionManager) transcripts: `<agent>/sessions/<session>.jsonl`, indexed by `sessions.json`."""

from __future__ import annotations

from distiller.sources.base import Format
from distiller.sources.openclaw import discover, envelopes, parse


def _claims(name: str) -> bool:
    return discover.classify(name) in ("live", "archive")


FORMAT = Format(
    name=parse.FORMAT,
    label="OpenClaw",
    layout="<agent>/sessions/*.jsonl",
    recognises=parse.recognises,
    claims=_claims,
    discover=discover.discover,
    default_source=discover.default_source,
    header=parse.header,
    to_message=parse.to_message,
    skip_line=parse.skip_line,
    session_skip=discover.session_skip,
    entry_session_skip=parse.entry_session_skip,
    continuations=discover.continuations,
    cleaning=envelopes.CLEANING,
)
