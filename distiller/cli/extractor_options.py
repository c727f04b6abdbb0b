"""The extractor options every command that distills shares, their choices read from the registry
(distiller/extract/__init__.py): a new backend shows up in each without an edit here; and the one set of a run's
extraction options (`run_options`) that `run`, `schedule` and `schedule install` all take."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, TypeVar, cast

import click

from distiller import extract
from distiller.config import DEFAULT_CONCURRENCY, MAX_CONCURRENCY, MIN_CONCURRENCY, Settings, override

F = TypeVar("F", bound=Callable[..., Any])


def _summaries() -> str:
    return "; ".join(f"{b.name}: {b.summary}" for b in extract.backends() if b.selectable)


def extractor_option(fn: F) -> F:
    return click.option(
        "--extractor", type=click.Choice(extract.choices()),
        help=f"auto: anthropic when ANTHROPIC_API_KEY is set, else rules; {_summaries()}.  [default: auto]")(fn)


def model_option(fn: F) -> F:
    return click.option("--model", help="The model: an Anthropic model id (default claude-haiku-5-5), or the name an "
                        "OpenAI-compatible server knows it by (required there, e.g. llama3.1:8b).")(fn)


def base_url_option(fn: F) -> F:
    return click.option("--base-url", help="The OpenAI-compatible server (e.g. http://localhost:11434/v1 for Ollama); "
                        "setting base_url, env DISTILL_BASE_URL, else OPENAI_BASE_URL.")(fn)


@dataclass(frozen=True, slots=True)
class RunOptions:
    """The options of one run's extraction, as `run` takes them, `schedule` passes them to each run and `schedule
    install` writes them into the unit: one set, declared once (`run_options`), so they cannot drift apart (the
    schedule had no --base-url, so a local server's schedule could not be given one)."""

    extractor: str | None = None
    model: str | None = None
    base_url: str | None = None
    allow_expensive_model: bool | None = None
    budget_usd: float | None = None
    budget_tokens: int | None = None
    batch_api: bool | None = None
    concurrency: int | None = None

    def applied(self, settings: Settings, **also: Any) -> Settings:
        """The settings with these flags on top (a bad value is a usage error, as for any flag)."""
        given = {f.name: getattr(self, f.name) for f in fields(self)}
        return override(settings, **{**given, **also})

    def words(self) -> list[str]:
        """The same options as command-line words (for a unit's `distill run`), only those given."""
        words: list[str] = []
        for f in fields(self):
            value = getattr(self, f.name)
            flag = "--" + f.name.replace("_", "-")
            if value is True:
                words.append(flag)
            elif value is not None and value is not False:
                words += [flag, str(value)]
        return words


_RUN_OPTIONS: tuple[Callable[[F], F], ...] = (
    extractor_option,
    model_option,
    base_url_option,
    click.option("--allow-expensive-model", is_flag=True, default=None, help="Allow Opus-class models."),
    click.option("--budget-usd", type=float, help="Stop a run before it would spend more (0: no limit)."),
    click.option("--budget-tokens", type=int, help="Stop a run before it would use more model tokens (0: no limit)."),
    click.option("--batch-api", is_flag=True, default=None,
                 help="Submit through the Message Batches API (half price); later runs collect the results."),
    click.option("--concurrency", type=click.IntRange(MIN_CONCURRENCY, MAX_CONCURRENCY),
                 help=f"Model requests in flight at once, {MIN_CONCURRENCY}-{MAX_CONCURRENCY} (fewer while the API "
                      f"answers 429/529).  [default: {DEFAULT_CONCURRENCY}]"),
)


def run_options(fn: F) -> F:
    """Add every RunOptions flag to a command, handed to it as one `options: RunOptions` argument."""
    names = [f.name for f in fields(RunOptions)]

    @functools.wraps(fn)
    def command(*args: Any, **kwargs: Any) -> Any:
        chosen = RunOptions(**{name: kwargs.pop(name) for name in names})
        return fn(*args, options=chosen, **kwargs)

    wrapped = cast(F, command)
    for option in reversed(_RUN_OPTIONS):
        wrapped = option(wrapped)
    return wrapped
