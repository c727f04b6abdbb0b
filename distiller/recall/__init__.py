"""Recall: the beliefs handed back to the agents, as the `<bee-recall>` block OpenClaw's recall plugin injects.

    <bee-recall>
    ## Core beliefs (always active)
    - [identity] The user is a backend engineer at Finch Payments. (0.90)

    ## Active context (recent)
    - [decision] The user decided to use Postgres for the ledger service. (0.60)

    ## Recalled (relevant to this message)
    - [preference] The user prefers small PRs under 300 lines. (0.60)
    </bee-recall>

The block is cut to `max_chars` at a line boundary (a line never half shown; a tier header never shown without a
line). Screening strips the tag when a transcript brings the block back (screen/clean.py), and the echo screen
(screen/echo.py) the lines a user pastes without it, so recall never feeds back into what is learned.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

from distiller.recall.lines import Evidence, Limits, Line

__all__ = ["BLOCK_TAG", "FORMATS", "Evidence", "Limits", "Line", "Rendered", "drop_derived", "render",
           "write_if_changed"]

BLOCK_TAG = "bee-recall"
FORMATS = ("block", "markdown", "json")
HEADERS = {"core": "## Core beliefs (always active)", "active": "## Active context (recent)",
           "recalled": "## Recalled (relevant to this message)"}
PROFILE_HEADER = "## Profile"


@dataclass(frozen=True, slots=True)
class Rendered:
    text: str  # the block or markdown; "" when there is nothing to recall
    lines: tuple[Line, ...]  # the lines shown
    cut: int  # lines left out to stay within max_chars
    profile: str | None

    def as_dict(self) -> dict[str, object]:
        return {"text": self.text, "cut": self.cut, "profile": self.profile,
                "lines": [asdict(line) for line in self.lines]}


def line_text(line: Line) -> str:
    """`- [category] statement (confidence)`, the statement on one line."""
    return f"- [{line.category}] {' '.join(line.statement.split())} ({line.confidence:.2f})"


def render(lines: list[Line], *, fmt: str = "block", max_chars: int = 2200, profile: str | None = None) -> Rendered:
    """The lines in tier order under their headers, as many as fit in `max_chars` (the tags included)."""
    opening, closing = (f"<{BLOCK_TAG}>", f"</{BLOCK_TAG}>") if fmt == "block" else ("", "")
    body: list[str] = []
    size = len(opening) + len(closing) + 2 if opening else 0  # each on its own line
    profile_text = " ".join(profile.split()) if profile else None
    if profile_text:
        section = [PROFILE_HEADER, profile_text]
        cost = sum(len(s) + 1 for s in section)
        if size + cost <= max_chars:
            body += section
            size += cost
        else:
            profile_text = None
    shown: list[Line] = []
    tier = None
    for number, line in enumerate(lines):
        addition = [line_text(line)]
        if line.tier != tier:
            addition = ([""] if body else []) + [HEADERS[line.tier]] + addition
        cost = sum(len(s) + 1 for s in addition)
        if size + cost > max_chars:
            return _done(opening, body, closing, shown, len(lines) - number, profile_text)
        body += addition
        size += cost
        tier = line.tier
        shown.append(line)
    return _done(opening, body, closing, shown, 0, profile_text)


def _done(opening: str, body: list[str], closing: str, shown: list[Line], cut: int,
          profile: str | None) -> Rendered:
    if not body:
        return Rendered("", (), cut, None)
    text = "\n".join(([opening] if opening else []) + body + ([closing] if closing else [])) + "\n"
    return Rendered(text, tuple(shown), cut, profile)


def write_if_changed(path: Path, text: str) -> bool:
    """Write `text` to `path` atomically (a temporary file beside it, fsynced, renamed over it), only when it differs
    from what is there: an agent watching the file sees one change per real change. True when written."""
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except (FileNotFoundError, UnicodeDecodeError):
        pass
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return True




# Files in the state dir derived from belief statements: the hook's snapshot and the cached profiles.
SNAPSHOT_FILE = "recall-snapshot.json"
PROFILE_FILE = "profile.json"  # an agent's: profile.<hash of the agent>.json
DERIVED = (SNAPSHOT_FILE, PROFILE_FILE, "profile.*.json")


def drop_derived(state_dir: Path) -> list[str]:
    """Delete recall's caches (they are rebuilt on demand): forgetting must leave no copy of what it deleted."""
    removed = []
    for pattern in DERIVED:
        for path in state_dir.glob(pattern):
            try:
                path.unlink()
                removed.append(path.name)
            except FileNotFoundError:
                pass
    return removed
