"""The one Settings object: flags > env DISTILL_* > <state-dir>/distill.toml > defaults."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from distiller.errors import DistillError

CONFIG_FILE = "distill.toml"


@dataclass(frozen=True)
class Settings:
    state_dir: Path = Path("state")
    excluded_agents: tuple[str, ...] = ("memory-distiller",)
    max_line_bytes: int = 32 * 1024 * 1024
    commit_every_bytes: int = 4 * 1024 * 1024
    db_wait_seconds: float = 5.0
    assistant_decision: str = "context"
    extra_injected_blocks: tuple[str, ...] = ()
    extractor: str = "auto"
    model: str = "claude-haiku-5-5"
    allow_expensive_model: bool = False
    request_budget_tokens: int = 6000
    budget_tokens: int = 0  # per run; 0 means no limit
    budget_usd: float = 0.0
    budget_tokens_per_day: int = 0
    budget_usd_per_day: float = 0.0
    batch_api: bool = False

    @property
    def db_path(self) -> Path:
        return self.state_dir / "distill.duckdb"

    @property
    def lock_path(self) -> Path:
        return self.state_dir / "lock"


CHOICES = {
    "assistant_decision": ("keep", "context", "drop"),
    "extractor": ("auto", "anthropic", "rules", "external"),
}
MAY_BE_ZERO = ("budget_tokens", "budget_usd", "budget_tokens_per_day", "budget_usd_per_day")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _coerce(name: str, kind: str, value: Any) -> Any:
    """Turn a TOML or env value into the field's type; anything else is a clear error."""
    if kind == "str":
        if isinstance(value, str) and value in CHOICES.get(name, (value,)):
            return value
    elif kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in _TRUE + _FALSE:
            return value.lower() in _TRUE
    elif kind == "tuple[str, ...]":
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
    elif not isinstance(value, bool):
        try:
            number = int(value) if kind == "int" else float(value)
        except (TypeError, ValueError):
            pass
        else:
            if number > 0 or (number == 0 and name in MAY_BE_ZERO):
                return number
    raise DistillError(f"invalid value for setting {name!r}: {value!r}")


def load_settings(state_dir: Path, config_file: Path | None = None, **overrides: Any) -> Settings:
    """Merge the layers; unknown keys or bad values in the file or env are errors, not silently ignored."""
    settings = Settings(state_dir=Path(state_dir))
    tunable = {f.name: f.type for f in fields(Settings) if f.name != "state_dir"}
    path = config_file or settings.state_dir / CONFIG_FILE
    layer: dict[str, Any] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if config_file is not None:
            raise DistillError(f"config file not found: {path}") from None
        text = None
    except (OSError, UnicodeDecodeError) as exc:
        raise DistillError(f"cannot read config file {path}: {exc}") from exc
    if text is not None:
        try:
            layer = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise DistillError(f"invalid config file {path}: {exc}") from exc
        unknown = sorted(set(layer) - set(tunable))
        if unknown:
            raise DistillError(f"unknown setting(s) in {path}: {', '.join(unknown)}")
    for name in tunable:
        env_value = os.environ.get(f"DISTILL_{name.upper()}")
        if env_value is not None:
            layer[name] = env_value
    layer.update({k: v for k, v in overrides.items() if v is not None})
    values = {name: _coerce(name, tunable[name], value) for name, value in layer.items()}
    return replace(settings, **values)


def override(settings: Settings, **values: Any) -> Settings:
    """Command-line flags: the top layer, validated like the others (None means not given)."""
    tunable = {f.name: f.type for f in fields(Settings)}
    given = {name: _coerce(name, tunable[name], value) for name, value in values.items() if value is not None}
    return replace(settings, **given)
