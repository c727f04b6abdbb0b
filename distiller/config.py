"""The one Settings object: flags > env DISTILL_* > <state-dir>/distill.toml > defaults.

Every value is input: each setting has one rule (type, range, alphabet) below, and a value that breaks it is an
error naming the setting, where the value came from and what is allowed. Where each effective value came from is
kept, for `distill config show`.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from distiller import extract
from distiller.errors import DistillError, UsageError

CONFIG_FILE = "distill.toml"
DEFAULT = "default"
# Model requests in flight at once: the one range and default the config, the CLI and the pace use.
MIN_CONCURRENCY, MAX_CONCURRENCY, DEFAULT_CONCURRENCY = 1, 16, 4
MAX_SCAN_WORKERS, AUTO = 64, "auto"
BUILTIN_EXCLUDED_AGENTS = ("memory-distiller",)  # the distiller's own agent: never read its transcripts


def default_state_dir() -> Path:
    """`$DISTILL_STATE_DIR`, else `$XDG_STATE_HOME/distiller`, else `~/.local/state/distiller`: the same wherever
    the command is run from."""
    explicit = os.environ.get("DISTILL_STATE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg).expanduser() if xdg and os.path.isabs(os.path.expanduser(xdg)) else Path.home() / ".local/state"
    return base / "distiller"


@dataclass(frozen=True)
class Settings:
    state_dir: Path = field(default_factory=default_state_dir)
    excluded_agents: tuple[str, ...] = BUILTIN_EXCLUDED_AGENTS
    max_line_bytes: int = 32 * 1024 * 1024
    commit_every_bytes: int = 4 * 1024 * 1024
    db_wait_seconds: float = 5.0
    assistant_decision: str = "context"
    extra_injected_blocks: tuple[str, ...] = ()
    extractor: str = "auto"
    model: str = "claude-haiku-5-5"
    # The OpenAI-compatible server `extractor = openai-compatible` talks to (e.g. http://localhost:11434/v1 for
    # Ollama); empty: $OPENAI_BASE_URL. Its price in $/MTok (0: free, as a local model is).
    base_url: str = ""
    price_input_per_mtok: float = 0.0
    price_output_per_mtok: float = 0.0
    allow_expensive_model: bool = False
    request_budget_tokens: int = 6000
    budget_tokens: int = 0  # per run; 0 means no limit
    budget_usd: float = 0.0
    budget_tokens_per_day: int = 0
    budget_usd_per_day: float = 0.0
    batch_api: bool = False
    concurrency: int = DEFAULT_CONCURRENCY  # model requests in flight at once (fewer while the API answers 429/529)
    # Worker processes a big scan is spread over: "auto" (the usable cores, when there are two or more, for a scan
    # of 8 MiB or more), 0 (always in the main process) or that many for any scan.
    scan_workers: int | str = AUTO
    # Subagents' transcripts (Claude Code, Codex): read as their agent's, their turns context only; false: not read.
    read_subagents: bool = True
    # Formats whose default tree is not read when no --source is given (every present one is, by default).
    skip_formats: tuple[str, ...] = ()
    # (path pattern, format name): a found file the first matching pattern names is read as that format
    # (`sources.overrides`); checked against the registry like skip_formats.
    format_overrides: tuple[tuple[str, str], ...] = ()
    # Where each value came from: "default", "file PATH", "env NAME" or "flag --name".
    origins: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def db_path(self) -> Path:
        return self.state_dir / "distill.duckdb"

    @property
    def lock_path(self) -> Path:
        return self.state_dir / "lock"

    def origin(self, name: str) -> str:
        return self.origins.get(name, DEFAULT)


@dataclass(frozen=True)
class Rule:
    """What a setting accepts; `allowed` is the sentence an error and the README show."""

    kind: str  # int, float, bool, choice, name, names, url, formats (format names), overrides (pattern -> format)
    low: float = 0
    high: float = 0
    choices: tuple[str, ...] = ()  # for a choice; for a number, the words it also accepts
    pattern: re.Pattern[str] | None = None
    choices_from: Callable[[], tuple[str, ...]] | None = None  # a choice among what a registry lists now

    @property
    def options(self) -> tuple[str, ...]:
        return self.choices_from() if self.choices_from is not None else self.choices

    @property
    def allowed(self) -> str:
        if self.kind in ("int", "float"):
            what = "an integer" if self.kind == "int" else "a finite number"
            words = "".join(f", or {word}" for word in self.choices)
            return f"{what} from {_plain(self.low)} to {_plain(self.high)}{words}"
        if self.kind == "bool":
            return "true or false"
        if self.kind == "choice":
            return "one of " + ", ".join(self.options)
        if self.kind == "url":
            return "an http:// or https:// URL (empty: none)"
        if self.kind == "formats":
            return "a list of format names (" + ", ".join(_format_names()) + ")"
        if self.kind == "overrides":
            return ("a table of absolute path patterns (* ? [..] within a dir, ** across dirs; ~ expanded) to format "
                    "names (" + ", ".join(_format_names()) + "); in the environment pattern=format,pattern=format")
        one = f"letters, digits and {_PUNCT[self.name_pattern]} (at most {_LENGTH[self.name_pattern]} characters)"
        return one if self.kind == "name" else f"a list of names, each {one}"

    @property
    def name_pattern(self) -> re.Pattern[str]:
        """The pattern a name or each of a list of names must match (every name rule has one)."""
        if self.pattern is None:
            raise TypeError(f"a {self.kind} rule without a pattern")
        return self.pattern


def _plain(number: float) -> str:
    return f"{int(number):,}" if number == int(number) else f"{number:,}"


_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}")  # "/": vLLM serves models by their Hub name
_AGENT = re.compile(r"!?[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}")
_TAG = re.compile(r"[A-Za-z][A-Za-z0-9_.:-]{0,63}")
_PUNCT = {_MODEL: "._:@/- (first a letter or digit)", _AGENT: "._@+- (first a letter or digit; !name removes a "
          "built-in exclusion)", _TAG: "_.:- (first a letter)"}
_LENGTH = {_MODEL: 128, _AGENT: 128, _TAG: 64}
GIB = 1024**3

RULES: dict[str, Rule] = {
    "excluded_agents": Rule("names", pattern=_AGENT),
    "max_line_bytes": Rule("int", 1024, GIB),
    "commit_every_bytes": Rule("int", 1, 256 * 1024 * 1024),
    "db_wait_seconds": Rule("float", 0, 3600),
    "assistant_decision": Rule("choice", choices=("keep", "context", "drop")),
    "extra_injected_blocks": Rule("names", pattern=_TAG),
    "extractor": Rule("choice", choices_from=extract.names),
    "model": Rule("name", pattern=_MODEL),
    "base_url": Rule("url"),
    "price_input_per_mtok": Rule("float", 0, 1000),
    "price_output_per_mtok": Rule("float", 0, 1000),
    "allow_expensive_model": Rule("bool"),
    "request_budget_tokens": Rule("int", 100, 1_000_000),
    "budget_tokens": Rule("int", 0, 10**12),
    "budget_usd": Rule("float", 0, 1_000_000),
    "budget_tokens_per_day": Rule("int", 0, 10**12),
    "budget_usd_per_day": Rule("float", 0, 1_000_000),
    "batch_api": Rule("bool"),
    "concurrency": Rule("int", MIN_CONCURRENCY, MAX_CONCURRENCY),
    "scan_workers": Rule("int", 0, MAX_SCAN_WORKERS, choices=(AUTO,)),
    "read_subagents": Rule("bool"),
    "skip_formats": Rule("formats"),
    "format_overrides": Rule("overrides"),
}


def _format_names() -> list[str]:
    # Imported here: the registry loads the formats, which use screening, which uses config.
    from distiller import sources

    return [fmt.name for fmt in sources.formats()]


def _overrides(value: Any) -> tuple[tuple[str, str], ...] | None:
    """A TOML table (or, from the environment or a flag, `pattern=format,…`) as (pattern, format) pairs, each
    checked (`sources.overrides.make`); None when the value is of no such shape. A bad pattern or an unknown
    format raises DistillError with the reason."""
    from distiller.sources import overrides

    if isinstance(value, str):
        pairs = [part.rpartition("=") for part in value.split(",") if part.strip()]
        if any(not sep for _, sep, _ in pairs):
            return None
        value = {pattern.strip(): fmt.strip() for pattern, _, fmt in pairs}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return None
    names = _format_names()
    try:
        for pattern, fmt in value.items():
            overrides.make(pattern, fmt, names)
    except overrides.BadOverride as exc:
        raise DistillError(str(exc)) from None
    return tuple(value.items())


_URL = re.compile(r"https?://[^\s/?#@]+(?::[0-9]{1,5})?(?:/[^\s]*)?", re.IGNORECASE)
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
_INT_TEXT = re.compile(r"[+-]?[0-9]+(?:_[0-9]+)*")


def _number(rule: Rule, value: Any) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        if rule.kind == "int":
            return int(text) if _INT_TEXT.fullmatch(text) else None
        try:
            value = float(text)
        except ValueError:
            return None
    if rule.kind == "int":
        return value if isinstance(value, int) else None
    return float(value) if isinstance(value, (int, float)) else None


def _coerce(name: str, value: Any, origin: str) -> Any:
    """Turn a TOML, env or flag value into the setting's type, or fail naming the setting, origin and rule."""
    rule = RULES[name]
    result: Any = None
    if rule.kind in ("int", "float") and isinstance(value, str) and value.strip() in rule.choices:
        result = value.strip()
    elif rule.kind in ("int", "float"):
        number = _number(rule, value)
        if number is not None and math.isfinite(number) and rule.low <= number <= rule.high:
            result = number
    elif rule.kind == "bool":
        if isinstance(value, bool):
            result = value
        elif isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
            result = value.strip().lower() in _TRUE
    elif rule.kind == "choice":
        if isinstance(value, str) and value in rule.options:
            result = value
    elif rule.kind == "url":
        if isinstance(value, str) and (value == "" or _URL.fullmatch(value.strip())):
            result = value.strip()
    elif rule.kind == "name":
        if isinstance(value, str) and rule.name_pattern.fullmatch(value):
            result = value
    elif rule.kind == "overrides":
        try:
            result = _overrides(value)
        except DistillError as exc:
            raise DistillError(f"invalid value for setting {name!r} from {origin}: {exc}") from None
    elif rule.kind == "formats":
        items = [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value
        if isinstance(items, list | tuple) and all(isinstance(v, str) and v in _format_names() for v in items):
            result = tuple(dict.fromkeys(items))
    else:
        items = [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value
        if isinstance(items, list | tuple) and all(isinstance(v, str) and rule.name_pattern.fullmatch(v) for v in items):
            result = tuple(dict.fromkeys(items))
    if result is None:
        shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
        raise DistillError(f"invalid value for setting {name!r} from {origin}: {shown} (allowed: {rule.allowed})")
    if name == "excluded_agents":
        result = _with_builtin_exclusions(result)
    return result


def _with_builtin_exclusions(names: tuple[str, ...]) -> tuple[str, ...]:
    """User exclusions add to the built-in ones; `!name` removes a built-in one, explicitly."""
    removed = {n[1:] for n in names if n.startswith("!")}
    added = [n for n in names if not n.startswith("!")]
    return tuple(dict.fromkeys([n for n in BUILTIN_EXCLUDED_AGENTS if n not in removed] + added))


def _file_layer(path: Path, required: bool) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if required:
            raise DistillError(f"config file not found: {path}") from None
        return {}
    except IsADirectoryError:
        raise DistillError(f"config file {path} is a directory; pass a TOML file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DistillError(f"cannot read config file {path}: {getattr(exc, 'strerror', None) or exc}") from exc
    try:
        layer = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DistillError(f"invalid config file {path}: {exc}") from exc
    unknown = sorted(set(layer) - set(RULES))
    if unknown:
        raise DistillError(f"unknown setting(s) in {path}: {', '.join(unknown)} (known: {', '.join(RULES)})")
    return layer


def load_settings(state_dir: Path | None = None, config_file: Path | None = None, *, state_dir_origin: str = DEFAULT,
                  **overrides: Any) -> Settings:
    """Merge the layers; unknown keys or bad values in the file or env are errors, not silently ignored."""
    settings = Settings(state_dir=Path(state_dir)) if state_dir is not None else Settings()
    path = config_file or settings.state_dir / CONFIG_FILE
    origins = {"state_dir": state_dir_origin}
    values: dict[str, Any] = {}
    for name, value in _file_layer(path, required=config_file is not None).items():
        values[name] = _coerce(name, value, f"file {path}")
        origins[name] = f"file {path}"
    for name in RULES:
        env = f"DISTILL_{name.upper()}"
        if env in os.environ:
            values[name] = _coerce(name, os.environ[env], f"env {env}")
            origins[name] = f"env {env}"
    settings = replace(settings, origins=origins, **values)
    return override(settings, **overrides)


def override(settings: Settings, **values: Any) -> Settings:
    """Command-line flags: the top layer, validated like the others (None means not given). A bad flag value is a
    usage error (exit 2), and so is a `--model` the chosen extractor could never run (for Anthropic, one the price
    table does not know)."""
    try:
        given = {n: _coerce(n, v, f"flag --{n.replace('_', '-')}") for n, v in values.items() if v is not None}
        if "model" in given:
            chosen = given.get("extractor", settings.extractor)
            extract.resolve(chosen, key_set=True).check_model(given["model"])  # auto: the model a key would run
    except DistillError as exc:
        raise UsageError(str(exc)) from None
    origins = {**settings.origins, **{n: f"flag --{n.replace('_', '-')}" for n in given}}
    return replace(settings, origins=origins, **given)


def env_file() -> Path:
    """Where installed schedules read secrets from (`ANTHROPIC_API_KEY=…`, mode 600): systemd's EnvironmentFile,
    sourced by the cron line."""
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "distiller" / "env"


def paths(settings: Settings, config_file: Path | None = None) -> dict[str, str]:
    """Every path distill uses, absolute, for `distill path`: the state dir, its database, the settings file
    (--config, else distill.toml in the state dir; it may not exist) and the schedules' env file."""
    state_dir = Path(os.path.abspath(settings.state_dir))
    return {"state_dir": str(state_dir), "database": os.path.abspath(settings.db_path),
            "config": os.path.abspath(config_file or settings.state_dir / CONFIG_FILE), "env_file": str(env_file())}


@dataclass(frozen=True)
class Shown:
    name: str
    value: Any
    origin: str
    allowed: str


SECRET_ENV = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
PLAIN_ENV = ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL")


def mask(secret: str) -> str:
    """Presence and shape only: never a character of the secret itself."""
    return f"set ({len(secret)} characters, masked)" if secret else "empty"


def describe(settings: Settings) -> list[Shown]:
    """Every setting's effective value and where it came from; secrets from the environment masked."""
    shown = [Shown("state_dir", str(settings.state_dir), settings.origin("state_dir"), "a directory")]
    for f in fields(Settings):
        if f.name in RULES:
            value = getattr(settings, f.name)
            value = dict(value) if RULES[f.name].kind == "overrides" else value
            shown.append(Shown(f.name, list(value) if isinstance(value, tuple) else value, settings.origin(f.name),
                               RULES[f.name].allowed))
    for env in SECRET_ENV:
        value = os.environ.get(env)
        shown.append(Shown(env.lower(), None if value is None else mask(value), f"env {env}" if value is not None
                           else "not set", "a key from console.anthropic.com" if env.startswith("ANTHROPIC")
                           else "the OpenAI-compatible server's key, if it wants one"))
    for env in PLAIN_ENV:
        value = os.environ.get(env)
        shown.append(Shown(env.lower(), value, f"env {env}" if value is not None else "not set", "a URL"))
    return shown
