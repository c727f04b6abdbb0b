"""Budgets: a run stops cleanly before a batch whose estimate would pass a token or dollar limit, and the calls of
the batch it sends may spend only what is left."""

from __future__ import annotations

from distiller.batches.model import Batch
from distiller.config import Settings
from distiller.events import Tally
from distiller.extract.base import Extractor
from distiller.extract.select import estimate
from distiller.pipeline.distill import Allowance


class BudgetReached(Exception):
    """The next batch would pass a token or dollar budget: the run stops cleanly before it."""


def budgets(settings: Settings, tally: Tally, spent_today: tuple[int, float]) -> list[tuple[float, float, str, bool]]:
    """(limit, spent so far, name, whether in tokens) of every budget set."""
    day_tokens, day_cost = spent_today
    limits = [
        (settings.budget_tokens, tally.tokens, "--budget-tokens", True),
        (settings.budget_usd, tally.cost_usd, "--budget-usd", False),
        (settings.budget_tokens_per_day, day_tokens + tally.tokens, "budget_tokens_per_day", True),
        (settings.budget_usd_per_day, day_cost + tally.cost_usd, "budget_usd_per_day", False),
    ]
    return [limit for limit in limits if limit[0]]


def allowance(settings: Settings, tally: Tally, spent_today: tuple[int, float]) -> Allowance:
    """What is left of the tightest token and dollar budgets, for the calls of one batch."""
    limits = budgets(settings, tally, spent_today)
    return Allowance(min((limit - spent for limit, spent, _, tokens in limits if tokens), default=None),
                     min((limit - spent for limit, spent, _, tokens in limits if not tokens), default=None))


def with_journaled(spent_today: tuple[int, float], batch: Batch) -> tuple[int, float]:
    """Today's spend and what a resumed batch already holds answers for: a run killed before its commit paid for
    them, but they reach the store's record of calls only with the commit."""
    paid = [usage for extraction in batch.results for usage in extraction.usage]
    return spent_today[0] + sum(u.tokens for u in paid), spent_today[1] + sum(u.cost_usd for u in paid)


def check(settings: Settings, tally: Tally, spent_today: tuple[int, float], extractor: Extractor,
          batch: Batch) -> Allowance:
    """Stop before a batch whose estimate would pass a budget; else what its calls may spend, splits and retries
    included."""
    if not extractor.billed or not batch.requests:
        return Allowance()
    expected = estimate(extractor, batch.estimated_tokens, len(batch.requests),
                        warm=tally.model_calls > 0, every_request_writes=settings.batch_api)
    tokens, cost = expected.tokens, expected.usd
    for limit, spent, name, in_tokens in budgets(settings, tally, spent_today):
        would_be = spent + (tokens if in_tokens else cost)
        if would_be > limit:
            raise BudgetReached(f"{name} {limit:g} would be passed by the next batch (≈{would_be:.4g})")
    return allowance(settings, tally, spent_today)


def stopped(allowance: Allowance) -> BudgetReached:
    """The stop after a batch whose calls ran out of allowance: what was not sent is quarantined."""
    return BudgetReached(f"{allowance.stopped}; the requests not sent are quarantined (`distill batches retry`)")
