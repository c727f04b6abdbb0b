"""One place for run events: each bumps a counter of the run summary and logs a diagnostic to stderr."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from distiller.screen import DEMOTIONS, Screened
from distiller.screen.prefilter import DROP

if TYPE_CHECKING:
    from distiller.batches.model import Batch, Plan
    from distiller.extract.select import Estimate
    from distiller.store.writes import UpsertResult

log = logging.getLogger("distiller")

MALFORMED_REASONS = ("malformed_json", "invalid_utf8")
LOGGED_SKIPS = frozenset((*MALFORMED_REASONS, "oversized_line"))  # the line skips each logged with where they are
LOGGED_DROPS = frozenset(("oversized-paste",))  # drops for a size bound, each logged (-v) with its message id


@dataclass(frozen=True, slots=True)
class Committed:
    """What one batch commit did, for the run's counters."""

    beliefs: UpsertResult
    candidates: int
    rejected: tuple[tuple[str, int], ...]
    quarantined_requests: int
    sanitized: tuple[tuple[str, int], ...] = ()


def cached_share(counters: Mapping[str, object]) -> float | None:
    """The share of a run's prompt tokens read from the prompt cache (None before any model call). Works on the
    counters of any run recorded, older ones too (a counter missing, null or not a number counts as 0)."""

    def count(name: str) -> int:
        value = counters.get(name)
        return value if isinstance(value, int) else 0

    read = count("cache_read_tokens")
    prompt = count("input_tokens") + count("cache_write_tokens") + read
    return round(read / prompt, 4) if prompt else None


@dataclass(slots=True)
class Tally:
    """The counters of one run: what was read, what was emitted, and every skip by reason."""

    files: int = 0
    bytes_read: int = 0
    lines: int = 0
    messages: int = 0
    roles: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    files_skipped: Counter[str] = field(default_factory=Counter)
    file_events: Counter[str] = field(default_factory=Counter)
    decisions: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)
    demoted: Counter[str] = field(default_factory=Counter)  # kept by the filters, sent as context only: why
    redactions: Counter[str] = field(default_factory=Counter)
    cleaned: Counter[str] = field(default_factory=Counter)
    invisible_chars: int = 0  # invisible characters removed from messages before screening (distiller.canonical)
    extractor: str = ""
    model: str | None = None
    batches: int = 0
    resumed: int = 0
    requests: int = 0
    candidates: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    sanitized: Counter[str] = field(default_factory=Counter)
    beliefs: Counter[str] = field(default_factory=Counter)
    quarantined_requests: int = 0
    tokens: int = 0  # every token billed: uncached input, cache writes and reads, output
    input_tokens: int = 0  # the uncached part of the prompts
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    model_calls: int = 0
    sdk_retries: int = 0  # attempts the SDK repeated before a reply: each may have been billed
    estimated_calls: int = 0  # calls whose usage was missing (a 400) or unreadable, counted at the estimate
    estimated_tokens: int = 0
    estimated_cost_usd: float = 0.0
    estimated_cache_read_tokens: int = 0
    budget_stop: str | None = None
    overloaded: int = 0  # 429/529 answers the API gave (each retried): the pace was lowered for each
    concurrency_lowest: int | None = None  # the fewest requests in flight the pace came down to, when it did
    output_mode: str | None = None  # json_schema, json_object or text: the structured output the server took
    output_mode_note: str | None = None  # why a stricter mode was given up, in the server's words
    staged: list[str] = field(default_factory=list)
    submitted: list[str] = field(default_factory=list)
    set_aside: list[str] = field(default_factory=list)  # batch files that did not parse; their messages are reread
    _skipped_files: set[tuple[str, str]] = field(default_factory=set)  # (reason, path): a file counts once

    def screened(self, screened: Screened) -> None:
        """A newly read message: its decisions (one per part of a queued batch), strips and redactions."""
        message = screened.decisions[0].message
        self.messages += 1
        self.roles[message.role] += 1
        for decision in screened.decisions:
            self.decisions[decision.decision] += 1
            if decision.decision == DROP:
                self.dropped[decision.reason] += 1
                if decision.reason in LOGGED_DROPS:
                    log.info("%s: message %s of %s", decision.reason, message.message_id, message.file)
            elif decision.reason in DEMOTIONS:
                self.demoted[decision.reason] += 1
        if screened.clean_events:  # Counter.update costs more than a test, even for nothing
            self.cleaned.update(screened.clean_events)
        for kind, count in screened.redactions:
            self.redactions[kind] += count
        self.invisible_chars += screened.invisible_chars

    def file_event(self, kind: str, path: str) -> None:
        """new | appended | unchanged | renamed | truncated | replaced | rewritten | gone | …"""
        self.file_events[kind] += 1
        if kind != "unchanged":
            log.info("%s: %s", kind, path)

    def file_skipped(self, reason: str, path: str, detail: str = "") -> None:
        """A file passed over, counted once per reason however many stages of the run meet it."""
        if (reason, path) in self._skipped_files:
            return
        self._skipped_files.add((reason, path))
        self.files_skipped[reason] += 1
        if reason in ("unreadable", "changed_during_read", "unsupported_format"):
            log.warning("skipped %s (%s)%s", path, reason, f": {detail}" if detail else "")
        else:
            log.info("skipped %s (%s)", path, reason)

    def line_skipped(self, reason: str, path: str, start: int) -> None:
        self.skipped[reason] += 1
        if reason in LOGGED_SKIPS:
            log.info("%s at %s byte %d", reason, path, start)

    def committed(self, batch: Batch, done: Committed) -> None:
        """A batch is in the database: its requests, candidates, verdicts on them, beliefs and spend."""
        if batch.requests:
            self.batches += 1
        self.requests += len(batch.requests)
        self.candidates += done.candidates
        self.rejected.update(dict(done.rejected))
        self.sanitized.update(dict(done.sanitized))
        self.beliefs.update({k: v for k, v in done.beliefs.as_dict().items() if v})
        self.quarantined_requests += done.quarantined_requests
        for extraction in batch.results:
            for usage in extraction.usage:
                self.tokens += usage.tokens
                self.input_tokens += usage.input_tokens
                self.cache_read_tokens += usage.cache_read_tokens
                self.cache_write_tokens += usage.cache_write_tokens
                self.cost_usd += usage.cost_usd
                self.model_calls += 1
                self.sdk_retries += usage.retries
                self.estimated_calls += usage.estimated
        if done.quarantined_requests:
            log.warning("batch %s: %d request(s) quarantined", batch.batch_id, done.quarantined_requests)

    def planned(self, plan: Plan, expected: Estimate) -> None:
        """A dry run's batch: what it would send, without sending it, and what that would cost."""
        if plan.requests:
            self.batches += 1
        self.requests += plan.requests
        self.estimated_tokens += plan.estimated_tokens
        self.estimated_cost_usd += expected.usd
        self.estimated_cache_read_tokens += expected.cache_read_tokens

    @property
    def cached_share(self) -> float | None:
        return cached_share({"input_tokens": self.input_tokens, "cache_read_tokens": self.cache_read_tokens,
                             "cache_write_tokens": self.cache_write_tokens})

    @property
    def malformed(self) -> int:
        return sum(self.skipped[r] for r in MALFORMED_REASONS)

    def as_dict(self) -> dict[str, object]:
        return {
            "files": self.files,
            "bytes_read": self.bytes_read,
            "lines": self.lines,
            "messages": self.messages,
            "roles": dict(sorted(self.roles.items())),
            "malformed": self.malformed,
            "skipped": dict(sorted(self.skipped.items())),
            "files_skipped": dict(sorted(self.files_skipped.items())),
            "file_events": dict(sorted(self.file_events.items())),
            "decisions": dict(sorted(self.decisions.items())),
            "dropped": dict(sorted(self.dropped.items())),
            "demoted": dict(sorted(self.demoted.items())),
            "redactions": dict(sorted(self.redactions.items())),
            "cleaned": dict(sorted(self.cleaned.items())),
            "invisible_chars": self.invisible_chars,
            "extractor": self.extractor,
            "model": self.model,
            "batches": self.batches,
            "resumed_batches": self.resumed,
            "requests": self.requests,
            "candidates": self.candidates,
            "rejected": dict(sorted(self.rejected.items())),
            "sanitized": dict(sorted(self.sanitized.items())),
            "beliefs": dict(sorted(self.beliefs.items())),
            "quarantined_requests": self.quarantined_requests,
            "tokens": self.tokens,
            "input_tokens": self.input_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cached_share": self.cached_share,
            "cost_usd": round(self.cost_usd, 6),
            "overloaded": self.overloaded,
            "concurrency_lowest": self.concurrency_lowest,
            "output_mode": self.output_mode,
            "output_mode_note": self.output_mode_note,
            "model_calls": self.model_calls,
            "sdk_retries": self.sdk_retries,
            "estimated_calls": self.estimated_calls,
            "estimated_tokens": self.estimated_tokens,
            "estimated_cost_usd": round(self.estimated_cost_usd, 6),
            "estimated_cache_read_tokens": self.estimated_cache_read_tokens,
            "budget_stop": self.budget_stop,
            "staged": list(self.staged),
            "submitted": list(self.submitted),
            "batches_set_aside": list(self.set_aside),
        }
