"""The one price table: every cost the distiller reports is computed here, so a price change is one edit.

Dollars per million tokens from Anthropic's model pages (Nov 2026). Cache writes are priced at the 5-minute
TTL, the only one the extractor uses. The Message Batches API halves every component.
"""

from __future__ import annotations

from dataclasses import dataclass

from distiller.errors import DistillError

BATCH_DISCOUNT = 0.5
EXPENSIVE_FAMILIES = ("claude-opus", "claude-fable", "claude-mythos")


@dataclass(frozen=True, slots=True)
class Rates:
    """$/MTok for one model; a prompt above `long_context_tokens` is billed at the `long` rates instead."""

    input: float
    output: float
    cache_write: float
    cache_read: float
    long_context_tokens: int | None = None
    long: Rates | None = None


_HAIKU_4_5 = Rates(input=1.00, output=5.00, cache_write=1.25, cache_read=0.10)
_SONNET_4 = Rates(input=3.00, output=15.00, cache_write=3.75, cache_read=0.30)
_OPUS_4_5_TO_5 = Rates(input=5.00, output=25.00, cache_write=6.25, cache_read=0.50)

PRICES: dict[str, Rates] = {
    "claude-haiku-5-5": Rates(
        input=0.10, output=0.50, cache_write=0.125, cache_read=0.01, long_context_tokens=100_000,
        long=Rates(input=0.50, output=2.50, cache_write=0.625, cache_read=0.05),
    ),
    "claude-haiku-4-5": _HAIKU_4_5,
    "claude-haiku-4-5-20251001": _HAIKU_4_5,
    "claude-sonnet-5-5": Rates(input=2.00, output=10.00, cache_write=2.50, cache_read=0.10),
    "claude-sonnet-5": Rates(input=2.00, output=10.00, cache_write=2.50, cache_read=0.20),
    "claude-sonnet-4-6": _SONNET_4,
    "claude-sonnet-4-5": _SONNET_4,
    "claude-sonnet-4-5-20250929": _SONNET_4,
    "claude-opus-5-5": Rates(input=4.00, output=20.00, cache_write=5.00, cache_read=0.20),
    "claude-opus-5": _OPUS_4_5_TO_5,
    "claude-opus-4-8": _OPUS_4_5_TO_5,
    "claude-opus-4-7": _OPUS_4_5_TO_5,
    "claude-opus-4-6": _OPUS_4_5_TO_5,
    "claude-opus-4-5": _OPUS_4_5_TO_5,
    "claude-opus-4-5-20251101": _OPUS_4_5_TO_5,
}


def rates(model: str) -> Rates:
    """The model's rates; an unpriced model is an error, never a silent $0."""
    try:
        return PRICES[model]
    except KeyError:
        known = ", ".join(sorted(PRICES))
        raise DistillError(f"no price known for model {model!r} (known: {known})") from None


def is_expensive(model: str) -> bool:
    """Opus-class models (and the pricier Fable/Mythos lines), which must be asked for explicitly."""
    return model.startswith(EXPENSIVE_FAMILIES)


def cost_usd(model: str, input_tokens: int, output_tokens: int, cache_read_tokens: int, cache_write_tokens: int,
             *, batch: bool = False) -> float:
    """Dollars for one call; `input_tokens` is the uncached part, as the API's usage reports it."""
    table = rates(model)
    prompt_tokens = input_tokens + cache_read_tokens + cache_write_tokens
    if table.long is not None and table.long_context_tokens is not None and prompt_tokens > table.long_context_tokens:
        table = table.long
    dollars = (input_tokens * table.input + output_tokens * table.output
               + cache_read_tokens * table.cache_read + cache_write_tokens * table.cache_write) / 1_000_000
    return dollars * BATCH_DISCOUNT if batch else dollars
