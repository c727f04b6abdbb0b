"""What may reach the store from a model: no terminal control sequences, no bidi overrides, no tag-like markup.

Stored statements and quotes end up in terminals, JSON exports and the Markdown memory file a later assistant reads
as part of its prompt, so a `</memory><system>` or an ESC sequence in them is an attack on whoever reads them next.
"""

from __future__ import annotations

import re

from distiller.canonical import INVISIBLE

# ANSI CSI and OSC sequences whole, then any other C0/C1 control (tab and newline are whitespace) and the bidi
# embedding, override and isolate characters.
_CONTROL = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
)
_MARKUP = re.compile(r"</?[A-Za-z][\w:.-]*(?:\s[^<>]*)?/?>|<!--|<\|[^|<>\s]*\|>|\[/?(?:INST|SYS)\]")


def strip_controls(text: str) -> tuple[str, bool]:
    """The text without control, bidi and other invisible characters (`distiller.canonical`), and whether there were
    any: "Lis\u200bbon" is stored, keyed and shown as "Lisbon"."""
    stripped = INVISIBLE.sub("", _CONTROL.sub("", text))
    return stripped, stripped != text


def has_markup(text: str) -> bool:
    return _MARKUP.search(text) is not None


def unsafe(text: str) -> bool:
    """Whether text holds anything a stored belief must not: a control or bidi character, or markup."""
    return strip_controls(text)[1] or has_markup(text)
