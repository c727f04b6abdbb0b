"""Human output is escaped: text from transcripts, agent dir names and model answers never reaches the terminal
as control characters (ESC sequences, BEL, NUL, carriage returns) or invisible ones (bidi overrides such as U+202E,
zero-width characters: `distiller.canonical`)."""

from __future__ import annotations

import logging
import re

from distiller.canonical import INVISIBLE_CLASS

# C0 and C1 controls, DEL, and the invisible characters (the bidi controls that reorder what a terminal shows among
# them).
_CONTROLS = re.compile(f"[\x00-\x1f\x7f-\x9f{INVISIBLE_CLASS}]")
_CONTROLS_BUT_NEWLINE = re.compile(f"[\x00-\x09\x0b-\x1f\x7f-\x9f{INVISIBLE_CLASS}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000
                                else f"\\U{code:08x}")


def printable(text: str, *, newlines: bool = False) -> str:
    """`text` with every control character shown as an escape; `newlines=True` keeps line breaks (for a whole
    multi-line report whose fields were escaped already)."""
    pattern = _CONTROLS_BUT_NEWLINE if newlines else _CONTROLS
    return pattern.sub(_escape, text) if pattern.search(text) else text


class EscapingFormatter(logging.Formatter):
    """Diagnostics name paths and ids from transcripts: each record is one escaped line."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))
