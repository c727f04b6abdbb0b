"""Claude Code's own wrappers around a user's words (transcript-formats.md §5.7): slash-command envelopes
(`<command-name>`, `<command-message>`, `<command-args>`, `<local-command-stdout>` …), the `!` shell's
`<bash-input>`/`<bash-stdout>`/`<bash-stderr>`, background task notices and the interruption markers. Injected
memory (`<system-reminder>`, `<user-prompt-submit-hook>`, recall blocks) is every format's, stripped by screening
(`screen.injected`)."""

from __future__ import annotations

import re

from distiller.sources.cleaning import BLOCKS, USER, Cleaning, Needles, Rule, remove

ENVELOPE_BLOCKS: tuple[str, ...] = (
    "command-name", "command-message", "command-args", "command-contents",
    "local-command-stdout", "local-command-stderr", "local-command-caveat",
    "bash-input", "bash-stdout", "bash-stderr",
    "task-notification",
)

_INTERRUPTED = re.compile(r"\[Request interrupted by user(?: for tool use)?\]")


def _interruptions(text: str, events: list[str]) -> str:
    return remove(_INTERRUPTED, text, "envelope:interrupted", events)


CLEANING = Cleaning(
    blocks=ENVELOPE_BLOCKS,
    rewrites=(BLOCKS, Rule("interrupted", Needles(anywhere=("[Request interrupted by user",)), _interruptions,
                           (USER,))),
)
