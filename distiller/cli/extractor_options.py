"""The extractor options every command that distills shares, their choices read from the registry
(distiller/extract/__init__.py): a new backend shows up in each without an edit here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from distiller import extract

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
