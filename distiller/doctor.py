"""`distill doctor`: every precondition of an unattended run checked at once, each problem one line with its fix.

Doctor only looks: it never creates the state dir or the database and never takes the run lock.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import stat
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from distiller import extract, install, pipeline
from distiller import sources as registry
from distiller.config import Settings, env_file
from distiller.errors import DistillError
from distiller.lock import lock_holder
from distiller.pipeline import batches_admin
from distiller.sources import sniff
from distiller.sources.claude_code import discover as cc_discover
from distiller.store.db import open_existing
from distiller.store.migrations import MIGRATIONS
from distiller.store.runs import RunRecord

OK, WARN, PROBLEM = "ok", "warning", "problem"
LOW_DISK_BYTES = 1024**3  # a first run over a big history stages batches and grows the database
MIN_DISK_BYTES = 100 * 1024**2
# Anthropic keys: "sk-ant-" then a kind ("api03", "admin01", …) and a long url-safe token.
_KEY = re.compile(r"sk-ant-[a-z]+[0-9]{2}-[A-Za-z0-9_-]{20,}")


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    level: str  # ok | warning | problem
    detail: str
    fix: str | None = None


@dataclass(slots=True)
class Report:
    state_dir: str
    state_dir_origin: str
    checks: list[Check] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return all(c.level != PROBLEM for c in self.checks)

    def add(self, name: str, level: str, detail: str, fix: str | None = None) -> None:
        self.checks.append(Check(name, level, detail, fix))

    def as_dict(self) -> dict[str, object]:
        return {"state_dir": self.state_dir, "state_dir_origin": self.state_dir_origin, "healthy": self.healthy,
                "checks": [asdict(c) for c in self.checks]}


def _state_dir(settings: Settings, report: Report) -> bool:
    path = settings.state_dir
    try:
        st = path.stat()
    except FileNotFoundError:
        report.add("state_dir", WARN, f"{path} does not exist yet", f"`distill --state-dir {path} init` creates it")
        return False
    except OSError as exc:
        report.add("state_dir", PROBLEM, f"{path}: {exc.strerror}", f"check the permissions of {path.parent}")
        return False
    if not stat.S_ISDIR(st.st_mode):
        report.add("state_dir", PROBLEM, f"{path} is not a directory", "point --state-dir at a directory")
        return False
    if not os.access(path, os.W_OK | os.X_OK):
        report.add("state_dir", PROBLEM, f"{path} is not writable by this user", f"chown/chmod u+rwx {path}")
        return True
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        report.add("state_dir", WARN, f"{path} is mode {mode:04o}: others may read private data",
                   f"chmod 700 {path}")
    else:
        report.add("state_dir", OK, f"{path} (mode {mode:04o})")
    return True


def _database(settings: Settings, report: Report) -> bool:
    path = settings.db_path
    if not path.exists():
        report.add("database", WARN, f"{path} does not exist yet", "the first `distill run` creates it")
        return False
    mode = stat.S_IMODE(path.stat().st_mode)
    try:
        with open_existing(path, wait_seconds=settings.db_wait_seconds) as con:
            try:
                applied = {r[0] for r in con.execute("SELECT name FROM schema_migrations").fetchall()}
            except duckdb.CatalogException:  # no migration was ever recorded
                applied = set()
            tables = [r[0] for r in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall()]
            for table in tables:
                con.execute(f'SELECT count(*) FROM "{table}"').fetchone()
    except DistillError as exc:
        report.add("database", PROBLEM, str(exc), f"restore {path} from a backup, or move it aside and rerun")
        return False
    except Exception as exc:  # noqa: BLE001  (the doctor reports any failure to read the store, never a traceback)
        report.add("database", PROBLEM, f"{path} cannot be read: {type(exc).__name__}: {exc}",
                   f"restore {path} from a backup, or move it aside and rerun")
        return False
    known = [name for name, _ in MIGRATIONS]
    unknown = sorted(applied - set(known))
    if unknown:
        report.add("database", PROBLEM, f"{path} has migrations this distill does not know ({', '.join(unknown)})",
                   "upgrade distill: a newer version wrote this database")
    else:
        behind = len([n for n in known if n not in applied])
        report.add("database", OK, f"{path}: schema {len(applied)}/{len(known)}"
                   + (f" ({behind} migration(s) apply on the next write)" if behind else "")
                   + f", {len(tables)} tables readable")
    if mode & 0o077:
        report.add("database_mode", WARN, f"{path} is mode {mode:04o}", f"chmod 600 {path}")
    return True


def _lock(settings: Settings, report: Report) -> None:
    path = settings.lock_path
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        report.add("lock", OK, "free (no run yet)")
        return
    except OSError as exc:
        report.add("lock", PROBLEM, f"{path}: {exc.strerror}", f"check the permissions of {path}")
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = lock_holder(fd)
            report.add("lock", OK, f"held by a run in progress{f' (pid {holder})' if holder else ''}")
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
            report.add("lock", OK, "free")
    finally:
        os.close(fd)


AGENTS_SHOWN = 6  # agents named on the sources line; the rest are counted


def agent_summary(agents: Counter[str]) -> str:
    """`by agent: main 3, work 2`; a long list names the busiest few and counts the rest, so the line stays short."""
    if len(agents) <= AGENTS_SHOWN:
        return "by agent: " + ", ".join(f"{a} {n}" for a, n in sorted(agents.items()))
    busiest = sorted(agents.items(), key=lambda kv: (-kv[1], kv[0]))
    rest = busiest[AGENTS_SHOWN - 1:]
    return (f"{len(agents)} agents, busiest: " + ", ".join(f"{a} {n}" for a, n in busiest[:AGENTS_SHOWN - 1])
            + f" and {len(rest)} more with {sum(n for _, n in rest)} transcript(s)")


def _sources(settings: Settings, sources: Sequence[Path] | None, report: Report) -> None:
    roots = pipeline.resolve_sources(sources, settings)
    found = registry.discover([Path(r) for r in roots], settings.excluded_agents, subagents=settings.read_subagents,
                              state_dir=settings.state_dir, overrides=settings.format_overrides)
    for missing in found.missing:
        report.add("sources", PROBLEM, f"source not found: {missing}", "pass --source with an existing path")
    agents = Counter(c.agent for c in found.live)
    kinds: Counter[str] = Counter()
    for root in roots:
        if os.path.isdir(root):
            kinds.update(sniff.survey(Path(root)))
        elif os.path.isfile(root):
            kinds[sniff.sniff(root)] += 1
    by_format = ", ".join(f"{sniff.label(k)} {n}" for k, n in kinds.most_common() if k != sniff.EMPTY)
    known = registry.formats()
    if found.live:
        formats = Counter(c.format for c in found.live)
        found_by_format = ", ".join(f"{fmt.label} {formats[fmt.name]}" for fmt in known if formats[fmt.name])
        forced = sum(c.forced for c in found.live)
        found_by_format += f"; {forced} of them as format_overrides names" if forced else ""
        report.add("sources", OK, f"{len(found.live)} transcript(s) under {', '.join(roots)} ({found_by_format}); "
                   f"{agent_summary(agents)}")
    elif not found.missing:
        labels = " or ".join(fmt.label for fmt in known)
        layouts = ", ".join(f"{fmt.label}: {fmt.layout}" for fmt in known if fmt.layout)
        report.add("sources", PROBLEM, f"no {labels} transcripts under {', '.join(roots)}"
                   + (f" (found {by_format})" if by_format else ""),
                   f"pass --source with a dir of one of them ({layouts})")
    for fmt in known:  # each default tree read, with its files
        tree = fmt.default_source()
        if any(os.path.abspath(tree) == root for root in roots):
            files = sum(1 for c in found.live if c.path.startswith(os.path.abspath(tree) + os.sep))
            report.add("sources", OK, f"{fmt.label}: {tree}, {files} transcript file(s)")
    if found.skipped.get("excluded_agent"):
        report.add("excluded_agents", OK, f"{found.skipped['excluded_agent']} agent dir(s) excluded "
                   f"({', '.join(settings.excluded_agents)})")


def _behind_and_batches(settings: Settings, sources: Sequence[Path] | None, report: Report) -> None:
    status = pipeline.status(settings, sources)
    report.add("bytes_behind", OK, f"{status.bytes_behind:,} byte(s) not yet read "
               f"({status.files_tracked} tracked, {status.files_untracked} untracked file(s))")
    _claude_code_retention(settings, sources, status.last_run, report)
    waiting = Counter(b.status for b in batches_admin.list_batches(settings))
    if waiting.get("staged"):
        report.add("batches", PROBLEM, f"{waiting['staged']} batch(es) staged for an external agent block every run",
                   "`distill commit BATCH --beliefs FILE` or `distill batches discard BATCH`")
    if waiting.get("quarantined"):
        report.add("batches", WARN, f"{waiting['quarantined']} quarantined batch(es)",
                   "`distill batches list`, then `distill batches retry|discard BATCH`")
    others = {k: v for k, v in waiting.items() if k not in ("staged", "quarantined")}
    if others:
        report.add("batches", OK, "waiting for the next run: " + ", ".join(f"{k} {v}" for k, v in others.items()))
    if not waiting:
        report.add("batches", OK, "none waiting")


def _claude_code_retention(settings: Settings, sources: Sequence[Path] | None, last_run: RunRecord | None,
                           report: Report) -> None:
    """Claude Code deletes transcripts older than `cleanupPeriodDays`: runs further apart than that lose turns."""
    tree = cc_discover.default_source()
    if not any(os.path.abspath(tree) == root for root in pipeline.resolve_sources(sources, settings)):
        return
    days = cc_discover.cleanup_period_days(tree)
    if last_run is None:
        return
    try:
        started = datetime.strptime(last_run.started_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except (TypeError, ValueError):
        return
    age = (datetime.now(UTC) - started).days
    if age >= days:
        report.add("claude_code_retention", WARN, f"the last run was {age} day(s) ago; Claude Code deletes "
                   f"transcripts after {days} day(s) (cleanupPeriodDays), so turns may have gone unread",
                   "schedule runs more often than that (`distill schedule install …`)")
    else:
        report.add("claude_code_retention", OK, f"Claude Code keeps transcripts {days} day(s); the last run was "
                   f"{age} day(s) ago")


def _extractor(settings: Settings, report: Report) -> None:
    """Which extractor a run would use (from the registry), and what that one needs: Anthropic's key, or an
    OpenAI-compatible server that answers and serves the model."""
    try:
        backend = extract.resolve(settings.extractor)
    except DistillError as exc:
        report.add("extractor", PROBLEM, str(exc), "set extractor to one of " + ", ".join(extract.names()))
        return
    model = f", model {settings.model}" if not backend.offline else ""
    report.add("extractor", OK, f"{backend.name}{model} ({settings.origin('extractor')}): {backend.summary}")
    if backend.uses_base_url:
        _openai_server(settings, report)
    else:
        _api_key(settings, report, backend)


def _openai_server(settings: Settings, report: Report) -> None:
    from distiller.extract import openai_compatible

    url = openai_compatible.base_url(settings)
    if not url:
        report.add("server", PROBLEM, "no OpenAI-compatible server named",
                   "set base_url (e.g. http://localhost:11434/v1 for Ollama) in distill.toml, or OPENAI_BASE_URL")
        return
    if settings.origin("model") == "default":
        report.add("server", PROBLEM, f"no model named for {url}", "set model (e.g. llama3.1:8b) in distill.toml")
        return
    found = openai_compatible.probe(url, settings.model)
    if not found.reachable:
        report.add("server", PROBLEM, found.detail, "start the server (e.g. `ollama serve`), or fix base_url")
    elif found.serves_model is False:
        report.add("server", PROBLEM, found.detail, f"pull or load it (e.g. `ollama pull {settings.model}`), "
                   "or fix model")
    else:
        report.add("server", OK if found.serves_model else WARN, found.detail)
    key = os.environ.get(openai_compatible.KEY_ENV)
    report.add("api_key", OK, f"{openai_compatible.KEY_ENV} " + (f"set ({len(key)} characters; value not shown)"
                                                                   if key else "not set (local servers need none)"))


def _api_key(settings: Settings, report: Report, backend: extract.Backend) -> None:
    key = os.environ.get("ANTHROPIC_API_KEY")
    if key is None:
        level = PROBLEM if backend.needs_key else OK  # chosen by name: auto without a key runs the rules
        report.add("api_key", level, "ANTHROPIC_API_KEY not set: the offline rules extractor runs",
                   "set ANTHROPIC_API_KEY (e.g. in ~/.config/distiller/env) to distill with the model"
                   if level == PROBLEM else None)
    elif key != key.strip() or not key:
        report.add("api_key", PROBLEM, f"ANTHROPIC_API_KEY has surrounding whitespace or is empty ({len(key)} "
                   f"characters; value not shown)", "set it again without quotes, spaces or a newline")
    elif not _KEY.fullmatch(key):
        # Behind ANTHROPIC_BASE_URL (a gateway, a proxy) keys of another shape are normal.
        level = WARN if os.environ.get("ANTHROPIC_BASE_URL") else PROBLEM
        report.add("api_key", level, f"ANTHROPIC_API_KEY is set but not shaped like an Anthropic key "
                   f"({len(key)} characters; value not shown)",
                   "copy the key again from console.anthropic.com" if level == PROBLEM else None)
    else:
        report.add("api_key", OK, f"ANTHROPIC_API_KEY set and well-formed ({len(key)} characters; value not shown)")


def _schedules(settings: Settings, report: Report) -> None:
    """An installed schedule runs with its own environment: a key set here may be missing there, and its failures
    show in neither `runs` nor `status`. Said only when one is installed."""
    here = os.path.abspath(settings.state_dir)
    for kind, path, state_dir in install.installed(settings.state_dir):
        if state_dir is not None and os.path.abspath(state_dir) != here:
            report.add("schedule", WARN, f"{kind} schedule {path} runs on state dir {state_dir}, not this one")
            continue
        if kind == "launchd" or not os.environ.get("ANTHROPIC_API_KEY"):
            report.add("schedule", OK, f"{kind} schedule installed: {path}")
        elif install.key_in_env_file(env_file()):
            report.add("schedule", OK, f"{kind} schedule installed: {path}; it reads the key from {env_file()}")
        else:
            report.add("schedule", WARN, f"{kind} schedule {path} will not see the ANTHROPIC_API_KEY set here: "
                       f"{env_file()} does not set it, so its runs use the offline rules (or fail, with "
                       f"--model)", f"put ANTHROPIC_API_KEY=… in {env_file()} (chmod 600)")


def _disk(settings: Settings, report: Report) -> None:
    probe = settings.state_dir
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        free = shutil.disk_usage(probe).free
    except OSError as exc:
        report.add("disk", WARN, f"cannot measure free space at {probe}: {exc.strerror}")
        return
    text = f"{free / 1024**3:.1f} GiB free at {probe}"
    if free < MIN_DISK_BYTES:
        report.add("disk", PROBLEM, text, "free disk space: runs fail when a batch or commit cannot be written")
    elif free < LOW_DISK_BYTES:
        report.add("disk", WARN, text, "free some disk space before a large first run")
    else:
        report.add("disk", OK, text)


def diagnose(settings: Settings, sources: Sequence[Path] | None = None) -> Report:
    report = Report(str(settings.state_dir), settings.origin("state_dir"))
    exists = _state_dir(settings, report)
    readable = exists and _database(settings, report)
    if exists:
        _lock(settings, report)
    _sources(settings, sources, report)
    if readable:
        try:
            _behind_and_batches(settings, sources, report)
        except DistillError as exc:
            report.add("batches", PROBLEM, str(exc), "see the message")
    _extractor(settings, report)
    _schedules(settings, report)
    _disk(settings, report)
    return report
