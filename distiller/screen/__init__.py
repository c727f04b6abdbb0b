"""Screening of one message: canonical text → clean → prefilter → injection check → redact, so that only the user's
own words, minus noise and secrets, can go further, and words addressed to the model are never citable. Pure: a
Message in, decisions and counters out.

Every rule sees the message's canonical text (`distiller.canonical`: invisible characters removed, NFKC), and the
decisions carry it: nothing invisible is sent, shown or stored."""

from __future__ import annotations

from dataclasses import dataclass

from distiller import sources
from distiller.canonical import canonical
from distiller.records import Message
from distiller.redact import Redacted, redact, split_secret
from distiller.screen.clean import clean
from distiller.screen.injection import suspect_injection
from distiller.screen.prefilter import CONTEXT, DROP, KEEP, prefilter
from distiller.sources.cleaning import PLAIN

DECISION_RANK = {KEEP: 2, CONTEXT: 1, DROP: 0}
SUSPECT_INJECTION = "suspect-injection"
DEMOTIONS = (SUSPECT_INJECTION,)  # reasons a kept item is sent as context only, counted by the run


@dataclass(slots=True)
class Decision:
    """The decision on one item: a whole message, or one part of a queued batch (`item_id` "<id>#<n>").

    Not frozen, like Screened: both are made for every scanned message, and a frozen dataclass sets each field
    through object.__setattr__, several times slower."""

    message: Message
    item_id: str
    text: str
    decision: str
    reason: str


@dataclass(slots=True)
class Screened:
    decisions: tuple[Decision, ...]
    clean_events: tuple[str, ...]
    redactions: tuple[tuple[str, int], ...]
    invisible_chars: int = 0  # removed from the text before screening

    @property
    def decision(self) -> Decision:
        """The message's own decision for the ledger: its most useful part."""
        if len(self.decisions) == 1:
            return self.decisions[0]
        return max(self.decisions, key=lambda d: DECISION_RANK[d.decision])


def screen(
    message: Message,
    *,
    session_skip: str | None = None,
    previous_user_text: str | None = None,
    assistant_decision: str = CONTEXT,
    extra_blocks: tuple[str, ...] = (),
) -> Screened:
    """`session_skip` drops every message of a session skipped as a whole (cron or dreaming runs)."""
    if session_skip is not None:
        return Screened((Decision(message, message.message_id, "", DROP, session_skip),), (), ())
    text, invisible = canonical(message.text)
    cleaned = clean(text, message.role, extra_blocks, sources.named(message.format).cleaning or PLAIN)
    if cleaned.drop_reason is not None or not cleaned.parts:
        reason = cleaned.drop_reason or "empty-after-clean"
        return Screened((Decision(message, message.message_id, "", DROP, reason),), cleaned.events, (), invisible)
    parts = cleaned.parts
    if len(parts) == 1:  # most messages: one item, its id the message's, its counts already sorted
        decision, reason, redacted = _judged(parts[0], message, assistant_decision, previous_user_text)
        return Screened((Decision(message, message.message_id, redacted.text, decision, reason),), cleaned.events,
                        redacted.counts, invisible)
    decisions = []
    redactions: dict[str, int] = {}
    for number, part in enumerate(parts, start=1):
        decision, reason, redacted = _judged(part, message, assistant_decision, previous_user_text)
        for kind, count in redacted.counts:
            redactions[kind] = redactions.get(kind, 0) + count
        decisions.append(Decision(message, f"{message.message_id}#{number}", redacted.text, decision, reason))
    return Screened(tuple(decisions), cleaned.events, tuple(sorted(redactions.items())) if redactions else (),
                    invisible)


def _judged(part: str, message: Message, assistant_decision: str,
            previous_user_text: str | None) -> tuple[str, str, Redacted]:
    """One cleaned part's decision, reason and redaction."""
    if message.inter_session:
        decision, reason = CONTEXT, "inter-session"
    else:
        prefiltered = prefilter(
            part, message.role, assistant_decision=assistant_decision, previous_user_text=previous_user_text
        )
        decision, reason = prefiltered.decision, prefiltered.reason
        if decision == KEEP and suspect_injection(part):
            decision, reason = CONTEXT, SUSPECT_INJECTION
    return decision, reason, redact(part)


def join_split(previous: Screened | None, current: Screened) -> None:
    """Redact a secret split across two consecutive messages of a session (`redact.split_secret`): the end of the
    previous message's last item and the head of this one's first, in place, both counted. Called once per message
    with the message screened before it in the same file, so nothing is read or screened twice; a message's text
    changes before it leaves the chunk, never its offsets. A pair split by a chunk's end has its second piece
    redacted only (the first left with the chunk before); at a run's start there is no message before."""
    if previous is None:
        return
    last, first = previous.decisions[-1], current.decisions[0]
    split = split_secret(last.text, first.text)
    if split is None:
        return
    if split.before != last.text:
        last.text = split.before
        previous.redactions = _counted(previous.redactions, split.kind)
    first.text = split.after
    current.redactions = _counted(current.redactions, split.kind)


def _counted(redactions: tuple[tuple[str, int], ...], kind: str) -> tuple[tuple[str, int], ...]:
    counts = dict(redactions)
    counts[kind] = counts.get(kind, 0) + 1
    return tuple(sorted(counts.items()))
