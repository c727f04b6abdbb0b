"""`distill hook install|uninstall claude-code`: our UserPromptSubmit hook in Claude Code's user settings.

The settings file is `$CLAUDE_CONFIG_DIR/settings.json`, else `~/.claude/settings.json`. Only our own entry is
added or removed — a hook command that runs `hook claude-code` of a distill — and everything else in the file
(other hooks, other events, every other setting) is kept as it was. A file that is not a JSON object is left
untouched, with an error. The file is replaced atomically, with its permissions.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import orjson

from distiller.errors import DistillError
from distiller.install import program

EVENT = "UserPromptSubmit"
MARK = ("hook", "claude-code")
TIMEOUT_SECONDS = 10  # Claude Code's own limit for the command; it answers in well under a second


@dataclass(frozen=True, slots=True)
class Changed:
    path: str
    command: str | None  # the hook command installed, None for an uninstall
    removed: int  # our earlier entries taken out
    changed: bool

    def as_dict(self) -> dict[str, object]:
        return {"path": self.path, "command": self.command, "removed": self.removed, "changed": self.changed}


def settings_path() -> Path:
    base = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(base).expanduser() / "settings.json" if base else Path.home() / ".claude" / "settings.json"


def hook_command(state_dir: Path, agent: str | None, max_chars: int) -> str:
    args = [*program(), *MARK, "--state-dir", str(state_dir.resolve())]
    if agent:
        args += ["--agent", agent]
    if max_chars != 2200:
        args += ["--max-chars", str(max_chars)]
    return shlex.join(args)


def _ours(hook: object) -> bool:
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    try:
        words = shlex.split(hook["command"])
    except ValueError:
        return False
    return any(words[i:i + 2] == list(MARK) for i in range(len(words) - 1)) and "distill" in hook["command"]


def _load(path: Path) -> dict[str, object]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise DistillError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        settings = orjson.loads(data) if data.strip() else {}
    except orjson.JSONDecodeError as exc:
        raise DistillError(f"{path} is not valid JSON ({exc}); fix it first, nothing was changed") from None
    if not isinstance(settings, dict):
        raise DistillError(f"{path} does not hold a JSON object; nothing was changed")
    return settings


def _hooks(settings: Mapping[str, object], path: Path) -> tuple[dict[str, object], list[object]]:
    """The settings' hooks, and their groups for our event: checked to be an object and a list."""
    hooks = settings.get("hooks", {})
    groups = hooks.get(EVENT, []) if isinstance(hooks, dict) else None
    if not isinstance(hooks, dict) or not isinstance(groups, list):
        raise DistillError(f"{path}: hooks.{EVENT} is not a list of hook groups; nothing was changed")
    return hooks, groups


def _without_ours(groups: list[object]) -> tuple[list[object], int]:
    removed, kept_groups = 0, []
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            kept = [hook for hook in group["hooks"] if not _ours(hook)]
            removed += len(group["hooks"]) - len(kept)
            if not kept:
                continue
            group = {**group, "hooks": kept}
        kept_groups.append(group)
    return kept_groups, removed


def _save(path: Path, settings: Mapping[str, object]) -> None:
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "wb") as out:
            out.write(orjson.dumps(settings, option=orjson.OPT_INDENT_2) + b"\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        raise DistillError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)


def install(state_dir: Path, *, agent: str | None = None, max_chars: int = 2200) -> Changed:
    """Our hook, once, after the user's other UserPromptSubmit hooks (an earlier entry of ours is replaced)."""
    path = settings_path()
    settings = _load(path)
    hooks, groups = _hooks(settings, path)
    groups, removed = _without_ours(groups)
    command = hook_command(state_dir, agent, max_chars)
    groups.append({"hooks": [{"type": "command", "command": command, "timeout": TIMEOUT_SECONDS}]})
    updated = {**settings, "hooks": {**hooks, EVENT: groups}}
    changed = updated != settings
    if changed:
        _save(path, updated)
    return Changed(str(path), command, removed, changed)


def uninstall() -> Changed:
    path = settings_path()
    settings = _load(path)
    if not settings:
        return Changed(str(path), None, 0, False)
    hooks, groups = _hooks(settings, path)
    groups, removed = _without_ours(groups)
    if not removed:
        return Changed(str(path), None, 0, False)
    hooks = {**hooks, EVENT: groups}
    if not groups:
        del hooks[EVENT]
    updated = {**settings, "hooks": hooks}
    if not hooks:
        del updated["hooks"]
    _save(path, updated)
    return Changed(str(path), None, removed, True)
