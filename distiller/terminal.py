"""Human output is escaped: text from transcripts, agent dir names and model answers never reaches the terminal
as control characters (ESC sequences, BEL, NUL, carriage returns, bidi overrides such as U+202E)."""

from __future__ import annotations

import logging
import re

# C0 and C1 controls, DEL, and the Unicode bidi controls that reorder what a terminal shows.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CONTROLS_BUT_NEWLINE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match) -> str:
    char = match.group()
    return _NAMED.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


def printable(text: str, *, newlines: bool = False) -> str:
    """`text` with every control character shown as an escape; `newlines=True` keeps line breaks (for a whole
    multi-line report whose fields were escaped already)."""
    pattern = _CONTROLS_BUT_NEWLINE if newlines else _CONTROLS
    return pattern.sub(_escape, text) if pattern.search(text) else text


class EscapingFormatter(logging.Formatter):
    """Diagnostics name paths and ids from transcripts: each record is one escaped line."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))
