"""The registry of extractors: the one place a backend is listed. Everything else asks it.

`--extractor`'s choices (every CLI command that has it), the `extractor` setting's validation, `doctor`'s key and
endpoint lines, dry-run estimates and `--model` checks all read `backends()`. A backend is the contract of
`base.Extractor` plus what is known before one is made: its factory, the model it runs by default, the key it
needs, and what its calls cost (from the one price table, prices.py). Adding one is a module and one `register`
(tests/test_extractors.py registers a toy one and runs it through the real pipeline).

The built-in backends' modules are imported only when one is made, so that `--help` and the rules never import an
SDK.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from distiller import prices
from distiller.errors import DistillError

if TYPE_CHECKING:
    from distiller.extract.base import Extractor, ExtractorSettings

AUTO = "auto"  # the Anthropic API when ANTHROPIC_API_KEY is set, else the offline rules
AUTO_WITH_KEY = "anthropic"  # what `auto` runs when ANTHROPIC_API_KEY is set (and what a --model is checked against)
AUTO_WITHOUT_KEY = "rules"  # what `auto` runs without it: offline, nothing sent
EXTERNAL = "external"  # an external agent's answers (`run --no-llm`, then `distill commit`)


def _no_model_check(model: str) -> None:
    """A backend that accepts any model name the `model` setting's alphabet allows."""


def _free(settings: ExtractorSettings) -> prices.Rates:
    return prices.FREE


def _never(settings: ExtractorSettings) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class Backend:
    """One extractor choice, as the CLI, config, doctor and estimates see it before (or without) making it."""

    name: str
    summary: str  # one line, for --help and doctor
    make: Callable[[ExtractorSettings], Extractor]  # the extractor the settings ask for; DistillError when it cannot run
    offline: bool  # answers locally (base.Extractor.offline)
    billed: bool  # its calls are metered (base.Extractor.billed)
    default_model: str | None = None  # run when no model is set; None: it runs none, or one must be named
    key_env: str | None = None  # the environment variable its key is read from
    needs_key: bool = False  # whether it cannot run without that key
    rates: Callable[[ExtractorSettings], prices.Rates] = _free  # what a call costs at the settings' model
    caches_prefix: Callable[[ExtractorSettings], bool] = _never  # whether the static prefix is billed as cached
    check_model: Callable[[str], None] = _no_model_check  # raises DistillError for a model it cannot run
    selectable: bool = True  # offered by `--extractor` (external is chosen by `run --no-llm`)
    uses_base_url: bool = False  # calls the server the base_url setting names (doctor asks it; a unit must see it)
    label: str = ""  # its name in a sentence ("the Anthropic extractor"); the name when empty

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", self.name)


_registered: dict[str, Backend] = {}
_loaded = False


def _builtin() -> list[Backend]:
    from distiller.extract.select import BUILTIN

    return list(BUILTIN)


def backends() -> tuple[Backend, ...]:
    """Every backend, the built-in ones first."""
    global _loaded
    if not _loaded:
        builtin = {b.name: b for b in _builtin()}
        _registered.update({**builtin, **_registered})
        _loaded = True
    return tuple(_registered.values())


def register(backend: Backend) -> None:
    """Add a backend (a new module calls this once; a test may too, and `unregister` it after)."""
    if backend.name == AUTO or any(known.name == backend.name for known in backends()):
        raise ValueError(f"an extractor named {backend.name!r} is registered already")
    _registered[backend.name] = backend


def unregister(name: str) -> None:
    backends()
    _registered.pop(name, None)


def names() -> tuple[str, ...]:
    """What the `extractor` setting accepts: auto and every backend."""
    return (AUTO, *(b.name for b in backends()))


def choices() -> tuple[str, ...]:
    """What `--extractor` offers: auto and every selectable backend."""
    return (AUTO, *(b.name for b in backends() if b.selectable))


def named(name: str) -> Backend:
    for backend in backends():
        if backend.name == name:
            return backend
    raise DistillError(f"no extractor named {name!r} (known: {', '.join(names())})")


def resolve(choice: str, *, key_set: bool | None = None) -> Backend:
    """The backend a choice runs: `auto` is Anthropic when ANTHROPIC_API_KEY is set, else the offline rules.
    `key_set` says whether the key is there when this environment is not the one that runs (an installed unit that
    reads its own env file); None: look here."""
    if choice == AUTO:
        key = bool(os.environ.get("ANTHROPIC_API_KEY")) if key_set is None else key_set
        return named(AUTO_WITH_KEY if key else AUTO_WITHOUT_KEY)
    return named(choice)


def priced(settings: ExtractorSettings) -> Backend:
    """The backend a dry run prices at: the chosen one when it is billed, else the one a key would run (auto
    runs the rules without a key, and the estimate says what the model would cost)."""
    chosen = resolve(settings.extractor)
    return chosen if chosen.billed else resolve(AUTO, key_set=True)
