"""`distill schedule install|uninstall`: a systemd user timer, a crontab line or a launchd agent that runs this
very `distill` (its real path, not an assumed ~/.local/bin) on this state dir.

Pure text builders plus one writer: the files in deploy/ stay documented examples; these are the ones that work
on the machine they are generated on.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from distiller.config import Settings, env_file
from distiller.errors import DistillError, UsageError

KINDS = ("systemd", "cron", "launchd")
LABEL = "com.distiller.distill"
CRON_TAG = "# distill-schedule"  # marks the managed lines, so install replaces them and uninstall finds them
CRON_MARK = f"{CRON_TAG} (managed by `distill schedule install cron`)"


def program() -> list[str]:
    """The command that runs this distill: the console script when that is what runs, else this interpreter with
    `-m distiller` (the interpreter path is kept as is: a venv's python is a symlink that must stay one)."""
    script = Path(sys.argv[0])
    if script.name == "distill" and script.is_file() and os.access(script, os.X_OK):
        return [str(script.resolve())]
    return [os.path.abspath(sys.executable), "-m", "distiller"]


def every_seconds(text: str) -> int:
    """`30m`, `1h`, `2h`, `1d` (or plain seconds) → seconds; at least a minute."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    text = text.strip().lower()
    number, unit = (text[:-1], text[-1]) if text[-1:] in units else (text, "s")
    if not number.isdigit() or int(number) <= 0:
        raise UsageError(f"invalid interval {text!r}: expected a whole number with s, m, h or d, e.g. 1h or 30m")
    seconds = int(number) * units[unit]
    if seconds < 60:
        raise UsageError(f"interval {text!r} is shorter than a minute")
    return seconds


@dataclass(frozen=True, slots=True)
class Plan:
    """What one installer writes: files (path → text) and the commands that enable or remove it."""

    kind: str
    files: tuple[tuple[Path, str], ...]
    enable: tuple[str, ...]
    disable: tuple[str, ...]


def _systemd_quote(arg: str) -> str:
    """One ExecStart word: `%` doubled (systemd specifiers), quoted when it holds a space or a quote."""
    arg = arg.replace("%", "%%")
    if any(c in arg for c in " \t\"'\\;$"):
        return '"' + arg.replace("\\", "\\\\").replace('"', '\\"').replace("$", "$$") + '"'
    return arg


def _calendar(seconds: int) -> str:
    minutes = seconds // 60
    if minutes < 60 and 60 % minutes == 0:
        return f"*-*-* *:00/{minutes}:00"
    hours = seconds // 3600
    if seconds % 3600 == 0 and hours < 24 and 24 % hours == 0:
        return f"*-*-* 00/{hours}:17:00"
    if seconds == 86400:
        return "*-*-* 03:17:00"
    raise UsageError("systemd and cron need an interval that divides an hour or a day (e.g. 15m, 1h, 6h, 1d)")


def _cron_times(seconds: int) -> str:
    minutes = seconds // 60
    if minutes < 60 and 60 % minutes == 0:
        return f"*/{minutes} * * * *"
    hours = seconds // 3600
    if seconds % 3600 == 0 and hours < 24 and 24 % hours == 0:
        return f"17 */{hours} * * *" if hours > 1 else "17 * * * *"
    if seconds == 86400:
        return "17 3 * * *"
    raise UsageError("systemd and cron need an interval that divides an hour or a day (e.g. 15m, 1h, 6h, 1d)")


def key_in_env_file(path: Path) -> bool:
    """Whether the env file sets ANTHROPIC_API_KEY (never its value)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return any(re.fullmatch(r"\s*(export\s+)?ANTHROPIC_API_KEY\s*=\s*['\"]?\S+", line) for line in text.splitlines())


def check_run(kind: str, settings: Settings, roots: Sequence[str]) -> None:
    """Refuse what every scheduled run would fail on, before a unit is written: a source that does not exist, a
    model without a key where the unit finds one (this environment, or for systemd and cron the env file), and
    whatever `run` refuses (extract.select.check_options: --model or --batch-api for the offline rules, an Opus-class
    model without allow_expensive_model). A unit that fails every hour shows in neither `runs` nor `status`."""
    from distiller import extract
    from distiller.extract.select import Planned, check_options

    missing = [root for root in roots if not os.path.exists(root)]
    if missing:
        raise DistillError(f"source not found: {', '.join(missing)}; every scheduled run would fail: pass --source "
                           f"with the directory that holds your transcripts")
    reads_env_file = kind in ("systemd", "cron")  # a launchd agent gets only what its plist sets
    key = bool(os.environ.get("ANTHROPIC_API_KEY")) or (reads_env_file and key_in_env_file(env_file()))
    backend = extract.resolve(settings.extractor, key_set=key)
    if backend.uses_base_url:  # a server of the user's own (openai-compatible): made now, so a missing base_url
        check_options(settings, backend.make(settings))  # or model is refused before a unit is written
        if not settings.base_url:  # named by OPENAI_BASE_URL alone, which the unit's environment does not hold
            raise DistillError(f"the {kind} unit would not see the server named in this shell's environment: pass "
                               f"--base-url (written into the unit), or put base_url = \"…\" in "
                               f"{settings.state_dir / 'distill.toml'}")
        return
    chosen_offline = settings.extractor != extract.AUTO and backend.offline
    wanted = (f"the {backend.label} extractor" if backend.needs_key else f"--model {settings.model}"
              if settings.origin("model").startswith("flag") else "--batch-api" if settings.batch_api else None)
    if not key and not chosen_offline and wanted is not None:
        keyed = extract.resolve(extract.AUTO, key_set=True)
        where = f"put {keyed.key_env}=… in {env_file()} (chmod 600)" if reads_env_file else (
            f"launchd agents do not read the env file: add {keyed.key_env} to the plist's EnvironmentVariables "
            "after installing it, or drop the option")
        raise DistillError(f"{wanted} needs an {keyed.label} key and the {kind} unit would find none: {where}")
    check_options(settings, backend.make(settings) if backend.offline else Planned(settings.model, backend.name))


_PLIST_NOTE = b"<!-- Written by `distill schedule install launchd`; `distill schedule uninstall launchd` removes it. -->"


def launchd_plist(agent: dict[str, Any]) -> str:
    """The launchd agent's plist, written by plistlib (escaping, types and the DTD are its job, not ours), with a
    note saying who wrote it. plistlib is imported here, not at every start (~4 ms). A value XML cannot carry (a
    control character in a path) is a clear error, not a broken file."""
    import plistlib

    try:
        data = plistlib.dumps(agent, sort_keys=False)
    except ValueError as exc:
        raise DistillError(f"cannot write a launchd plist for these paths and options: {exc}") from exc
    return data.replace(b"<plist ", _PLIST_NOTE + b"\n<plist ", 1).decode("utf-8")


def _plist_arguments(text: str) -> list[str] | None:
    """A plist's ProgramArguments (None: not a plist, or not one with a list of strings there)."""
    import plistlib
    from xml.parsers.expat import ExpatError

    try:
        agent = plistlib.loads(text.encode("utf-8"))
    except (plistlib.InvalidFileException, ExpatError, ValueError):
        return None
    arguments = agent.get("ProgramArguments") if isinstance(agent, dict) else None
    if isinstance(arguments, list) and all(isinstance(a, str) for a in arguments):
        return arguments
    return None


def installed_state_dir(text: str) -> str | None:
    """The state dir an installed unit runs on, from its command's `--state-dir` (None when it cannot be told)."""
    if text.lstrip().startswith("<?xml"):
        words = _plist_arguments(text)
        return next((following for word, following in pairwise(words or ()) if word == "--state-dir"), None)
    for line in text.splitlines():
        if line.startswith("ExecStart="):  # systemd: % and $ doubled, quoted as a shell would
            line = line[len("ExecStart="):].replace("%%", "%").replace("$$", "$")
        elif line.endswith(CRON_TAG):
            line = line[: -len(CRON_TAG)].replace("\\%", "%")
        else:
            continue
        try:
            words = shlex.split(line)
        except ValueError:
            return None
        return next((following for word, following in pairwise(words) if word == "--state-dir"), None)
    return None


def command(state_dir: Path, run_args: Sequence[str], config_file: Path | None = None) -> list[str]:
    config = ["--config", os.path.abspath(config_file)] if config_file else []
    return [*program(), "--state-dir", str(state_dir), *config, "run", *run_args]


def plan(kind: str, state_dir: Path, run_args: Sequence[str], every: int, target: Path | None = None,
         config_file: Path | None = None) -> Plan:
    """The files for `kind` in their usual place (or in `target`), running `distill run` every `every` seconds
    with the same state dir and settings file as this command."""
    state_dir = Path(os.path.abspath(state_dir))
    home = Path.home()
    config = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    secrets = env_file()
    argv = command(state_dir, run_args, config_file)
    if kind == "systemd":
        where = target or config / "systemd" / "user"
        service = f"""# Written by `distill schedule install systemd`; `distill schedule uninstall systemd` removes it.
[Unit]
Description=Distill new transcript tails into beliefs (one run)
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
Environment={_systemd_quote(f"DISTILL_STATE_DIR={state_dir}")}
EnvironmentFile=-{_systemd_quote(str(secrets))}
ExecStart={" ".join(_systemd_quote(a) for a in argv)}
# 75: another run holds the lock (cron, a manual run): skipped, not failed
SuccessExitStatus=75
TimeoutStartSec=50min
TimeoutStopSec=90s
KillSignal=SIGTERM
Nice=10
IOSchedulingClass=idle
NoNewPrivileges=yes
"""
        timer = f"""# Written by `distill schedule install systemd`.
[Unit]
Description=Run distill every {every // 60} minute(s)

[Timer]
OnCalendar={_calendar(every)}
Persistent=true
RandomizedDelaySec={min(600, every // 6)}s
FixedRandomDelay=true
AccuracySec=1min
Unit=distill.service

[Install]
WantedBy=timers.target
"""
        return Plan(kind, ((where / "distill.service", service), (where / "distill.timer", timer)),
                    ("systemctl --user daemon-reload", "systemctl --user enable --now distill.timer",
                     'loginctl enable-linger "$USER"   # keep running while logged out'),
                    ("systemctl --user disable --now distill.timer", "systemctl --user daemon-reload"))
    if kind == "cron":
        where = target or config / "distiller"
        log = state_dir / "cron.log"
        inner = (f"umask 077; mkdir -p {shlex.quote(str(state_dir))}; [ -r {shlex.quote(str(secrets))} ] && set -a && . {shlex.quote(str(secrets))}; set +a; "
                 f"exec {' '.join(shlex.quote(a) for a in argv)} >>{shlex.quote(str(log))} 2>&1")
        line = f"{_cron_times(every)} {inner.replace('%', chr(92) + '%')} {CRON_TAG}"
        text = f"{CRON_MARK}\nSHELL=/bin/sh\n{line}\n"
        path = where / "distill.cron"
        return Plan(kind, ((path, text),),
                    ((f"( crontab -l 2>/dev/null | grep -vF '{CRON_TAG}'; grep -v '^SHELL' {shlex.quote(str(path))} ) "
                      f"| crontab -"),),
                    (f"crontab -l | grep -vF '{CRON_TAG}' | crontab -",))
    if kind == "launchd":
        where = target or home / "Library" / "LaunchAgents"
        logs = str(home / "Library" / "Logs" / "distill.log")
        text = launchd_plist({
            "Label": LABEL, "ProgramArguments": argv, "EnvironmentVariables": {"DISTILL_STATE_DIR": str(state_dir)},
            "StartInterval": every, "RunAtLoad": True, "StandardOutPath": logs, "StandardErrorPath": logs,
            "ProcessType": "Background", "LowPriorityIO": True, "Nice": 10,
        })
        path = where / f"{LABEL}.plist"
        return Plan(kind, ((path, text),),
                    (f"launchctl bootstrap gui/$(id -u) {shlex.quote(str(path))}",
                     f"launchctl kickstart gui/$(id -u)/{LABEL}   # run once now"),
                    (f"launchctl bootout gui/$(id -u)/{LABEL}",))
    raise UsageError(f"unknown scheduler {kind!r}: one of {', '.join(KINDS)}")


@dataclass(frozen=True, slots=True)
class Installed:
    kind: str
    written: tuple[str, ...]
    removed: tuple[str, ...]
    next_steps: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "written": list(self.written), "removed": list(self.removed),
                "next_steps": list(self.next_steps)}


def installed(state_dir: Path) -> list[tuple[str, Path, str | None]]:
    """The schedules installed in their usual places: (kind, unit file, the state dir it runs on or None)."""
    found = []
    for kind in KINDS:
        try:
            path = plan(kind, state_dir, [], 3600).files[0][0]
        except DistillError:  # a state dir no plist can name has no launchd agent installed for it
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        found.append((kind, path, installed_state_dir(text)))
    return found


def install(chosen: Plan, state_dir: Path) -> Installed:
    """Write the files (atomically, mode 0644: they hold paths, never secrets) and say how to enable them. A file
    already installed for another state dir is not replaced: the units share one name, so a second install would
    silently stop the first one's schedule."""
    state_dir = Path(os.path.abspath(state_dir))
    for path, _ in chosen.files:
        try:
            other = installed_state_dir(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
        if other is not None and Path(other) != state_dir:
            raise DistillError(f"{path} already runs distill on state dir {other}: nothing written. Remove it first "
                               f"(`distill --state-dir {shlex.quote(other)} schedule uninstall {chosen.kind}`), or "
                               f"write this one elsewhere with --dir")
    written = []
    for path, text in chosen.files:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.chmod(0o644)
            tmp.replace(path)
        except OSError as exc:
            raise DistillError(f"cannot write {path}: {exc.strerror or exc}") from exc
        written.append(str(path))
    return Installed(chosen.kind, tuple(written), (), chosen.enable)


def uninstall(chosen: Plan) -> Installed:
    """Remove the files an install wrote; disabling first is the scheduler's own command, printed."""
    removed = []
    for path, _ in chosen.files:
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise DistillError(f"cannot remove {path}: {exc.strerror or exc}") from exc
        removed.append(str(path))
    return Installed(chosen.kind, (), tuple(removed), chosen.disable)
