"""The built-in extractors as the registry lists them, which one runs, and what a request is expected to cost
before it is sent."""

from __future__ import annotations

from dataclasses import dataclass

from distiller import extract, prices
from distiller.errors import DistillError
from distiller.extract import EXTERNAL, Backend
from distiller.extract.base import (
    CachesPrefix,
    Extraction,
    Extractor,
    ExtractorSettings,
    ExtractRequest,
    OverloadListener,
)
from distiller.extract.prompt import PROMPT_VERSION, STATIC_PREFIX_TOKENS
from distiller.extract.rules import RulesExtractor

OUTPUT_SHARE = 0.25  # output tokens expected per input token of the transcript when estimating a budget
# A cache entry exists only once the first reply has begun, so a run's first requests, up to the default
# --concurrency, may each write the prefix before any can read it. Assumed for every cold run: an estimate errs high.
CACHE_WRITES_PER_RUN = 4


class ExternalExtractor:
    """Stands for an external agent (`run --no-llm` then `distill commit`): it never extracts anything itself."""

    name = EXTERNAL
    model: str | None = None
    prompt_version = "external-1"
    offline = True
    billed = False
    rates = prices.FREE

    def extract(self, request: ExtractRequest, *, max_tokens: int | None = None,
                on_overload: OverloadListener | None = None) -> Extraction:
        raise DistillError("batches for an external agent are committed with `distill commit`, not extracted")


@dataclass(frozen=True, slots=True)
class Estimator:
    """Stands for the model in a dry run: what would be sent is priced at the configured model, whichever
    extractor will run and whether or not a key is set (see `estimator`)."""

    model: str | None
    rates: prices.Rates
    caches_prefix: bool = False
    name: str = "estimate"
    prompt_version: str = "estimate"
    offline: bool = False
    billed: bool = True

    def extract(self, request: ExtractRequest, *, max_tokens: int | None = None,
                on_overload: OverloadListener | None = None) -> Extraction:
        raise DistillError("a dry run only estimates; it extracts nothing")


def estimator(settings: ExtractorSettings, extractor: Extractor | None = None) -> Estimator:
    """A dry run's stand-in: priced as `extractor` when it is billed, else as the chosen backend when it is,
    else as what a key would run (the Anthropic model the settings name)."""
    if extractor is not None and extractor.billed:
        return Estimator(extractor.model, extractor.rates,
                         isinstance(extractor, CachesPrefix) and extractor.caches_prefix)
    backend = extract.priced(settings)
    return Estimator(settings.model, backend.rates(settings), backend.caches_prefix(settings))


@dataclass(frozen=True, slots=True)
class Planned:
    """The model extractor the settings would run, named in a dry run without its key: it identifies the
    reprocess job the real run would be (so a changed model or prompt is a new job even before a key is set) and
    prices the estimate; it extracts nothing."""

    model: str
    name: str = extract.AUTO_WITH_KEY
    prompt_version: str = PROMPT_VERSION
    offline: bool = False
    billed: bool = True
    rates: prices.Rates = prices.FREE
    caches_prefix: bool = False

    def extract(self, request: ExtractRequest, *, max_tokens: int | None = None,
                on_overload: OverloadListener | None = None) -> Extraction:
        raise DistillError("a dry run only estimates; it extracts nothing")


def planned(settings: ExtractorSettings) -> Planned:
    """The Planned extractor of the backend the settings price at (extract.priced)."""
    backend = extract.priced(settings)
    return Planned(settings.model, backend.name, PROMPT_VERSION, rates=backend.rates(settings),
                   caches_prefix=backend.caches_prefix(settings))


def check_options(settings: ExtractorSettings, extractor: Extractor) -> None:
    """Refuse up front what the run could not honour, for `run`, `reprocess` and `schedule install` alike: an
    Opus-class model that will be priced or called without allow_expensive_model, and options only the Anthropic
    extractor honours when the offline rules run (not silently ignored)."""
    if (not extractor.offline or settings.origin("model").startswith("flag")) and prices.is_expensive(
            settings.model) and not settings.allow_expensive_model:
        raise DistillError(f"model {settings.model!r} is Opus-class and expensive; pass --allow-expensive-model (or "
                           f"set allow_expensive_model) to use it")
    if extractor.name != "rules":
        return
    why = ("ANTHROPIC_API_KEY is not set" if settings.extractor == "auto" else
           f"extractor = rules ({settings.origin('extractor')})")
    if settings.batch_api:
        raise DistillError(f"the Message Batches API needs the Anthropic extractor, but the offline rules run ({why}): "
                           f"set ANTHROPIC_API_KEY, or drop batch_api ({settings.origin('batch_api')})")
    if settings.origin("model").startswith("flag"):
        raise DistillError(f"--model {settings.model} would be ignored: the offline rules extractor runs ({why}); "
                           f"set ANTHROPIC_API_KEY, or drop --model")


def make_extractor(settings: ExtractorSettings, choice: str | None = None) -> Extractor:
    """The extractor the settings (or `choice`) name; `auto` means the Anthropic API when ANTHROPIC_API_KEY is set,
    else the offline rules."""
    return extract.resolve(choice or settings.extractor).make(settings)


def _anthropic(settings: ExtractorSettings) -> Extractor:
    from distiller.extract.anthropic import AnthropicExtractor

    return AnthropicExtractor(settings.model, allow_expensive_model=settings.allow_expensive_model)


def _openai_compatible(settings: ExtractorSettings) -> Extractor:
    from distiller.extract.openai_compatible import from_settings

    return from_settings(settings)


def _openai_rates(settings: ExtractorSettings) -> prices.Rates:
    return prices.configured(settings.price_input_per_mtok, settings.price_output_per_mtok)


def _anthropic_rates(settings: ExtractorSettings) -> prices.Rates:
    return prices.rates(settings.model)


def _anthropic_caches(settings: ExtractorSettings) -> bool:
    return prices.caches(settings.model, STATIC_PREFIX_TOKENS)


def _anthropic_model(model: str) -> None:
    prices.rates(model)  # the price table knows which models exist


BUILTIN: tuple[Backend, ...] = (
    Backend("anthropic", "the Anthropic Messages API (ANTHROPIC_API_KEY)", _anthropic, offline=False, billed=True,
            default_model="claude-haiku-5-5", key_env="ANTHROPIC_API_KEY", needs_key=True, rates=_anthropic_rates,
            caches_prefix=_anthropic_caches, check_model=_anthropic_model, label="Anthropic"),
    Backend("rules", "offline rules over the user's own sentences: no model, nothing sent",
            lambda settings: RulesExtractor(), offline=True, billed=False),
    Backend("openai-compatible", "any OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio, a gateway) at "
            "base_url", _openai_compatible, offline=False, billed=True, key_env="OPENAI_API_KEY", needs_key=False,
            rates=_openai_rates, label="OpenAI-compatible", uses_base_url=True),
    Backend(EXTERNAL, "an external agent answers staged batches (`run --no-llm`, then `distill commit`)",
            lambda settings: ExternalExtractor(), offline=True, billed=False, selectable=False),
)


def prompt_tokens(extractor: Extractor) -> int:
    """The static prompt and schema sent with every model request (0 for extractors that are not billed)."""
    return STATIC_PREFIX_TOKENS if extractor.billed else 0


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


def estimate(extractor: Extractor, input_tokens: int, requests: int = 1, *, warm: bool = False,
             every_request_writes: bool = False) -> Estimate:
    """`requests` calls that carry `input_tokens` in all, static prefix included. Where the model caches the
    prefix, a cold run's first CACHE_WRITES_PER_RUN requests write it (1.25x the input price) and the others read
    it (0.1x); a warm run (one that has already called the model) only reads. `every_request_writes` is for the
    Message Batches API, where a cache hit is possible but not promised. Priced per request, so the long-context
    rate applies to a request above its threshold, never to the sum of a batch."""
    if not extractor.billed or requests <= 0:
        return Estimate(0, 0.0)
    rates = extractor.rates
    prefix = STATIC_PREFIX_TOKENS
    transcript = max(0, input_tokens - requests * prefix) / requests
    output = estimated_output_tokens(round(transcript))
    if not (isinstance(extractor, CachesPrefix) and extractor.caches_prefix):
        one = prices.cost(rates, round(prefix + transcript), output, 0, 0)
        return Estimate(input_tokens + requests * output, one * requests)
    writes = requests if every_request_writes else (0 if warm else min(requests, CACHE_WRITES_PER_RUN))
    reads = requests - writes
    usd = (writes * prices.cost(rates, round(transcript), output, 0, prefix)
           + reads * prices.cost(rates, round(transcript), output, prefix, 0))
    return Estimate(input_tokens + requests * output, usd, writes * prefix, reads * prefix)
