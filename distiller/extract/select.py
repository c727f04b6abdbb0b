"""Which extractor runs, and what a request is expected to cost before it is sent."""

from __future__ import annotations

import os

import orjson

from distiller.config import Settings
from distiller.errors import DistillError
from distiller.extract.base import Extraction, Extractor, ExtractRequest
from distiller.extract.prompt import OUTPUT_SCHEMA, SYSTEM_PROMPT
from distiller.extract.rules import RulesExtractor
from distiller.prices import cost_usd

EXTERNAL = "external"
OUTPUT_SHARE = 0.25  # output tokens expected per input token when estimating a budget


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
    return (len(SYSTEM_PROMPT) + len(orjson.dumps(OUTPUT_SCHEMA))) // 4


def estimated_output_tokens(input_tokens: int) -> int:
    return int(input_tokens * OUTPUT_SHARE)


def estimated_cost_usd(model: str | None, input_tokens: int) -> float:
    if model is None:
        return 0.0
    return cost_usd(model, input_tokens, estimated_output_tokens(input_tokens), 0, 0)
