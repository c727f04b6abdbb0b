"""The vocabulary of injected memory: the one list of blocks that memory systems put into prompts, stripped from every
format's messages.

Recall output is exactly what comes back injected into later turns; a distiller that learns it multiplies its own
memories (one memory library's users found 668 copies of one hallucination in 10,134 memories). So these blocks are
not a format's envelopes: whatever assistant wrote the transcript, a `<bee-recall>` in it is never the user's words.
A format adds its own envelopes on top (`Cleaning.blocks`, `Cleaning.delimited`).

Tags are matched ignoring case, blanks inside the brackets, and `-`/`_`/blank between the words of a name, on the
message's canonical text and its skeleton (`distiller.canonical`), so `<BEE-RECALL>`, `< bee_recall >` and a
full-width or Cyrillic-lettered `<bее-recall>` are the same tag.
"""

from __future__ import annotations

# Our own output: `distill recall` writes <bee-recall> (the shape OpenClaw's recall plugin injects, so it can replace
# it); the distiller-* tags are kept for blocks written by earlier versions.
OUR_BLOCKS: tuple[str, ...] = ("distiller-recall", "distiller-profile")

# Blocks of known memory systems (transcript-formats.md §4.6; Claude Code's <system-reminder>, which hooks use to
# inject recall): exact tag names.
MEMORY_BLOCKS: tuple[str, ...] = (
    "bee-recall",
    "bee-profile",
    "bee-uncertainty",
    "relevant-memories",
    "agent-memories",
    "pm-cognition",
    "memories",
    "active_memory_plugin",
    "system-reminder",
    "user-prompt-submit-hook",
)

# Families of tag names, as regular expressions over a lower-cased name: any `bee-…` block (openclaw-bee's), and any
# tag whose name has memory, memories, recall or recalled as one of its words (`<user-memories>`,
# `<long_term_memory>`, `<recalled-context>`). A word inside a longer word does not count: `<MemoryRouter>` is code.
MEMORY_FAMILIES: tuple[tuple[str, str], ...] = (
    ("bee-block", r"bee[-_][a-z][a-z_-]{0,40}"),
    ("memory-block", r"(?:[a-z0-9]{1,20}[-_]){0,3}(?:memory|memories|recall|recalled)(?:[-_][a-z0-9]{1,20}){0,3}"),
)

# Markers that are no XML tags: (kind, opening regex, closing regex), each starting with a literal `<` or `[`.
MEMORY_DELIMITED: tuple[tuple[str, str, str], ...] = (
    ("untrusted-data", r"\[UNTRUSTED DATA[^\]\n]*\]", r"\[END UNTRUSTED DATA\]"),  # memory-lancedb-pro
    ("hindsight-context", r"\[context\]", r"\[/context\]"),  # Hindsight
)

REASONING_BLOCKS: tuple[str, ...] = ("think", "thinking")  # a model's reasoning: stripped from assistant turns
