"""Which extractor runs, and what a request is expected to cost before it is sent."""

from __future__ import annotations

import os
from dataclasses import dataclass

from distiller.config import Settings
from distiller.errors import DistillError
from distiller.extract.base import Extraction, Extractor, ExtractRequest
from distiller.extract.prompt import PROMPT_VERSION, STATIC_PREFIX_TOKENS
from distiller.extract.rules import RulesExtractor
from distiller.prices import caches, cost_usd

EXTERNAL = "external"
OUTPUT_SHARE = 0.25  # output tokens expected per input token of the transcript when estimating a budget
# A cache entry exists only once the first reply has begun, so a run's first requests, up to the default
# --concurrency, may each write the prefix before any can read it. Assumed for every cold run: an estimate errs high.
CACHE_WRITES_PER_RUN = 4


class ExternalExtractor:
    """Stands for an external agent (`run --no-llm` then `distill commit`): it never extracts anything itself."""

    name = EXTERNAL
    model = None
    prompt_version = "external-1"

    def extract(self, request: ExtractRequest) -> Extraction:
        raise DistillError("batches for an external agent are committed with `distill commit`, not extracted")


class Estimator:
    """Stands for the model in a dry run: what would be sent is priced at the configured model, whichever
    extractor will run and whether or not a key is set."""

    name = "estimate"
    prompt_version = "estimate"

    def __init__(self, model: str) -> None:
        self.model = model

    def extract(self, request: ExtractRequest) -> Extraction:
        raise DistillError("a dry run only estimates; it extracts nothing")


@dataclass(frozen=True, slots=True)
class Planned:
    """The Anthropic extractor a key would run, named in a dry run without one: it identifies the reprocess job
    the real run would be (so a changed model or prompt is a new job even before a key is set) and prices the
    estimate; it extracts nothing."""

    model: str
    name: str = "anthropic"
    prompt_version: str = PROMPT_VERSION

    def extract(self, request: ExtractRequest) -> Extraction:
        raise DistillError("a dry run only estimates; it extracts nothing")


def make_extractor(settings: Settings, choice: str | None = None) -> Extractor:
    """`auto` means the Anthropic API when ANTHROPIC_API_KEY is set, else the offline rules."""
    choice = choice or settings.extractor
    if choice == "auto":
        choice = "anthropic" if os.environ.get("ANTHROPIC_API_KEY") else "rules"
    if choice == "rules":
        return RulesExtractor()
    if choice == EXTERNAL:
        return ExternalExtractor()
    from distiller.extract.anthropic import AnthropicExtractor

    return AnthropicExtractor(settings.model, allow_expensive_model=settings.allow_expensive_model)


def prompt_tokens(extractor: Extractor) -> int:
    """The static prompt and schema sent with every model request (0 for offline extractors)."""
    if extractor.model is None:
        return 0
    return STATIC_PREFIX_TOKENS


def estimated_output_tokens(input_tokens: int) -> int:
    return int(input_tokens * OUTPUT_SHARE)


@dataclass(frozen=True, slots=True)
class Estimate:
    """What some requests are expected to cost: `tokens` counts every token billed (the prefix whether written,
    read or sent uncached, the transcript, the output), as a run's tally and budgets do."""

    tokens: int
    usd: float
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0


def estimate(model: str | None, input_tokens: int, requests: int = 1, *, warm: bool = False,
             every_request_writes: bool = False) -> Estimate:
    """`requests` calls that carry `input_tokens` in all, static prefix included. Where the model caches the
    prefix, a cold run's first CACHE_WRITES_PER_RUN requests write it (1.25x the input price) and the others read
    it (0.1x); a warm run (one that has already called the model) only reads. `every_request_writes` is for the
    Message Batches API, where a cache hit is possible but not promised. Priced per request, so the long-context
    rate applies to a request above its threshold, never to the sum of a batch."""
    if model is None or requests <= 0:
        return Estimate(0, 0.0)
    prefix = STATIC_PREFIX_TOKENS
    transcript = max(0, input_tokens - requests * prefix) / requests
    output = estimated_output_tokens(round(transcript))
    if not caches(model, prefix):
        one = cost_usd(model, round(prefix + transcript), output, 0, 0)
        return Estimate(input_tokens + requests * output, one * requests)
    writes = requests if every_request_writes else (0 if warm else min(requests, CACHE_WRITES_PER_RUN))
    reads = requests - writes
    usd = (writes * cost_usd(model, round(transcript), output, 0, prefix)
           + reads * cost_usd(model, round(transcript), output, prefix, 0))
    return Estimate(input_tokens + requests * output, usd, writes * prefix, reads * prefix)


def estimated_cost_usd(model: str | None, input_tokens: int, requests: int = 1, *, warm: bool = False,
                       every_request_writes: bool = False) -> float:
    return estimate(model, input_tokens, requests, warm=warm, every_request_writes=every_request_writes).usd
