"""The one price table: every cost the distiller reports is computed here, so a price change is one edit.

Dollars per million tokens from Anthropic's model pages (Nov 2026). Cache writes are priced at the 5-minute
TTL, the only one the extractor uses. The Message Batches API halves every component. A model behind an
OpenAI-compatible server (a local one, a gateway) is not in the table: it costs $0 unless the user configures its
price (`configured`), and a configured price has no cache discount.
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


FREE = Rates(input=0.0, output=0.0, cache_write=0.0, cache_read=0.0)


def configured(input_usd_per_mtok: float, output_usd_per_mtok: float) -> Rates:
    """A price the user set for a model the table does not know: every input token, cached or not, at the input
    rate (such servers report no cache writes or reads, and we promise no discount we cannot see)."""
    if input_usd_per_mtok == 0 and output_usd_per_mtok == 0:
        return FREE
    return Rates(input=input_usd_per_mtok, output=output_usd_per_mtok, cache_write=input_usd_per_mtok,
                 cache_read=input_usd_per_mtok)


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


# The shortest prefix (tokens up to the cache_control marker) each model caches. Below it the API caches nothing and
# says nothing: no error, both cache counters 0, every request billed in full. Anthropic's prompt-caching page
# gives 4,096 for Haiku 4.5 and Opus 4.5/4.6 and 1,024 for Sonnet 4.5; the others are from third-party tables
# (512 for Opus 5, 1,024 for Sonnet 5 and Opus 4.8), taking the larger figure where sources differ (2,048 was
# observed for Sonnet 4.6, 4,096 listed for Opus 4.7). Haiku 5.5, Sonnet 5.5 and Opus 5.5 have no published
# figure: they get 4,096, the largest published floor, so a prefix that clears it clears theirs.
UNPUBLISHED_MIN_CACHEABLE_TOKENS = 4096
MIN_CACHEABLE_TOKENS: dict[str, int] = {
    "claude-haiku-5-5": UNPUBLISHED_MIN_CACHEABLE_TOKENS,
    "claude-haiku-4-5": 4096,
    "claude-haiku-4-5-20251001": 4096,
    "claude-sonnet-5-5": UNPUBLISHED_MIN_CACHEABLE_TOKENS,
    "claude-sonnet-5": 1024,
    "claude-sonnet-4-6": 2048,
    "claude-sonnet-4-5": 1024,
    "claude-sonnet-4-5-20250929": 1024,
    "claude-opus-5-5": UNPUBLISHED_MIN_CACHEABLE_TOKENS,
    "claude-opus-5": 512,
    "claude-opus-4-8": 1024,
    "claude-opus-4-7": 4096,
    "claude-opus-4-6": 4096,
    "claude-opus-4-5": 4096,
    "claude-opus-4-5-20251101": 4096,
}


def min_cacheable_tokens(model: str) -> int:
    """The model's minimum cacheable prefix; a model missing here gets the largest published floor."""
    rates(model)  # an unpriced model is an error here too
    return MIN_CACHEABLE_TOKENS.get(model, UNPUBLISHED_MIN_CACHEABLE_TOKENS)


def caches(model: str, prefix_tokens: int) -> bool:
    """Whether a cache_control marker after `prefix_tokens` of static prompt makes the API cache it at all."""
    return prefix_tokens >= min_cacheable_tokens(model)


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
    """Dollars for one call of a model in the table; `input_tokens` is the uncached part, as the API's usage
    reports it."""
    return cost(rates(model), input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, batch=batch)


def cost(table: Rates, input_tokens: int, output_tokens: int, cache_read_tokens: int, cache_write_tokens: int,
         *, batch: bool = False) -> float:
    """Dollars for one call at these rates (the long-context rates above their threshold)."""
    prompt_tokens = input_tokens + cache_read_tokens + cache_write_tokens
    if table.long is not None and table.long_context_tokens is not None and prompt_tokens > table.long_context_tokens:
        table = table.long
    dollars = (input_tokens * table.input + output_tokens * table.output
               + cache_read_tokens * table.cache_read + cache_write_tokens * table.cache_write) / 1_000_000
    return dollars * BATCH_DISCOUNT if batch else dollars
