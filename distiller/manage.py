"""The library behind `distill beliefs …`, `distill runs` and the belief counts of `distill status`.

Each function opens its own short connection (read-only for reads), so a scheduled run is never blocked for long.
"""

from __future__ import annotations

import csv
import io
import os
import stat
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, fields, replace
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import orjson

from distiller.config import Settings
from distiller.errors import DistillError, UsageError
from distiller.lock import held
from distiller.recall import drop_derived
from distiller.records import message_time
from distiller.store import clock, reads, runs, scalars, tombstones
from distiller.store.bulk import pack, rows
from distiller.store.db import connect_for, private_files, transaction
from distiller.store.forget import Forgotten, forget_beliefs, forget_source, source_sessions
from distiller.store.reads import BeliefCounts, BeliefRow, Filters, HistoryEvent
from distiller.store.settings import StoreSettings
from distiller.store.writes import StoredBelief, StoredEvidence, UpsertResult, restore

FORMATS = ("jsonl", "csv", "parquet", "markdown")
HEADINGS = {"identity": "Identity", "goal": "Goals", "preference": "Preferences", "decision": "Decisions",
            "fact": "Facts", "implicit_inference": "Inferences"}


def store_settings(settings: Settings) -> StoreSettings:
    """The store's knobs; the seam where distill.toml settings will reach them."""
    return StoreSettings()


def _now() -> datetime:
    return datetime.now(UTC)


def _read(settings: Settings) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
    """A read never creates a database: an empty one in the wrong state dir would hide the real one."""
    if not settings.db_path.exists():
        raise DistillError(no_database(settings))
    return connect_for(settings, read_only=True)


def no_database(settings: Settings) -> str:
    return (f"no database at {settings.db_path} yet (state dir from {settings.origin('state_dir')}): "
            f"`distill run` creates it, or pass --state-dir")


def list_beliefs(settings: Settings, filters: Filters) -> list[BeliefRow]:
    if not settings.db_path.exists():
        return []
    with _read(settings) as con:
        return reads.select(con, filters, store_settings(settings), _now())


def count_beliefs(settings: Settings, filters: Filters) -> int:
    """How many beliefs match the filters whatever the limit, so a listing cut at its limit can say so."""
    if not settings.db_path.exists():
        return 0
    with _read(settings) as con:
        return reads.count(con, filters)


def hidden_archived(settings: Settings, filters: Filters) -> int:
    """How many archived beliefs the default listing (every status but archived) left out, for a hint."""
    if filters.status is not None:
        return 0
    return count_beliefs(settings, replace(filters, status="archived"))


def never_ingested(settings: Settings, source: str) -> bool:
    """Nothing in the store came from this transcript path or session id: forgetting it would only leave a
    tombstone for something never read. A path counts if messages were ever read under it, also when its file has
    since been renamed (`files` knows the current path only) or its cursor reset by `init --from-start`."""
    if not settings.db_path.exists():
        return True
    with _read(settings) as con:
        path, sessions = source_sessions(con, source)
        if path is not None:
            return not sessions and not scalars.exists(
                con, "SELECT EXISTS (SELECT 1 FROM ingested_paths WHERE path = ?)", [path])
        return not scalars.exists(
            con, "SELECT EXISTS (SELECT 1 FROM ingested WHERE session_id = $s) OR EXISTS "
            "(SELECT 1 FROM evidence WHERE session_id = $s)", {"s": source})


@dataclass(frozen=True, slots=True)
class BeliefDetail:
    belief: BeliefRow
    evidence: tuple[StoredEvidence, ...]

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self.belief), "evidence": [asdict(e) for e in self.evidence]}


def show(settings: Settings, ref: str) -> BeliefDetail:
    with _read(settings) as con:
        belief_id = reads.resolve(con, ref)
        row = reads.by_ids(con, [belief_id], store_settings(settings), _now())[0]
        return BeliefDetail(row, tuple(e.item for e in reads.evidence(con, [belief_id])))


@dataclass(frozen=True, slots=True)
class BeliefHistory:
    id: str
    timeline: tuple[BeliefRow, ...]  # the slot's beliefs and supersession links, oldest first
    events: tuple[HistoryEvent, ...]

    def as_dict(self) -> dict[str, object]:
        return {"id": self.id, "timeline": [asdict(b) for b in self.timeline],
                "events": [asdict(e) for e in self.events]}


def history(settings: Settings, ref: str) -> BeliefHistory:
    with _read(settings) as con:
        belief_id = reads.resolve(con, ref)
        ids, events = reads.slot_history(con, belief_id)
        timeline = reads.by_ids(con, ids, store_settings(settings), _now())
    return BeliefHistory(belief_id, tuple(timeline), tuple(events))


@dataclass(frozen=True, slots=True)
class Forgetting:
    """What a forget deleted (or would delete), with the statements, so a person sees what goes, not only ids."""

    forgotten: Forgotten
    statements: tuple[str, ...]  # of forgotten.beliefs, in the same order

    def as_dict(self) -> dict[str, object]:
        return {**self.forgotten.as_dict(), "statements": list(self.statements)}


def forget(
    settings: Settings, refs: Sequence[str] = (), *, match: str | None = None, source: str | None = None,
    dry_run: bool = False,
) -> Forgetting:
    """Delete beliefs (by id, by text, or a source's evidence) and tombstone them, in one transaction.

    The work is done first and rolled back, so a dry run reports exactly what would go and the statements of what
    goes are read while they still exist; a real forget then does it again on the same connection (no other
    process can write meanwhile) and commits."""
    if sum(bool(x) for x in (refs, match, source)) != 1:
        raise UsageError("forget needs exactly one of: belief ids, --match TEXT, --source FILE|SESSION")
    if not settings.db_path.exists():
        raise DistillError(no_database(settings))
    if source and never_ingested(settings, source):
        raise DistillError(f"{source} was never ingested (no message or evidence comes from it): nothing to "
                           f"forget, no tombstone written")
    with connect_for(settings) as con:
        preview = _forget_in(con, settings, refs, match, source, commit=False)
        found = dict(con.execute(f"SELECT belief_id, statement FROM beliefs SEMI JOIN {rows({'belief_id': 'VARCHAR'})}"
                                 f" i USING (belief_id)", {"rows": pack(belief_id=list(preview.beliefs))}).fetchall())
        result = preview if dry_run else _forget_in(con, settings, refs, match, source, commit=True)
    if not dry_run:
        drop_derived(settings.state_dir)  # no forgotten statement outlives its belief in recall's caches
    return Forgetting(result, tuple(found.get(belief_id, "") for belief_id in result.beliefs))


def _forget_in(con: duckdb.DuckDBPyConnection, settings: Settings, refs: Sequence[str], match: str | None, source: str | None, *,
               commit: bool) -> Forgotten:
    con.execute("BEGIN TRANSACTION")
    try:
        now = _now()
        if source:
            result = forget_source(con, source, store_settings(settings), now)
        else:
            if match:
                ids = [b.id for b in reads.select(
                    con, Filters(status="all", text=match, limit=None), store_settings(settings), now)]
            else:
                ids = [reads.resolve(con, ref) for ref in refs]
            result = forget_beliefs(con, ids, "forget-match" if match else "forget-id", now)
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT" if commit else "ROLLBACK")
    return result


@dataclass(frozen=True, slots=True)
class Exported:
    format: str
    beliefs: int
    path: str | None  # None: written to stdout


def _stored(settings: Settings, statuses: Sequence[str] | None) -> list[StoredBelief]:
    with _read(settings) as con:
        filters = Filters(status="all", limit=None, sort="recent")
        ids = [b.id for b in reads.select(con, filters, store_settings(settings), _now())
               if statuses is None or b.status in statuses]
        return reads.stored(con, ids)


def _jsonl(beliefs: list[StoredBelief]) -> bytes:
    return b"".join(orjson.dumps(asdict(b)) + b"\n" for b in beliefs)


def _csv(beliefs: list[StoredBelief]) -> bytes:
    names = [f.name for f in fields(StoredBelief)]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(names)
    for belief in beliefs:
        row = asdict(belief)
        writer.writerow([orjson.dumps(row[n]).decode() if n in ("keys", "evidence") else row[n] for n in names])
    return out.getvalue().encode("utf-8")


def _markdown(beliefs: list[StoredBelief]) -> bytes:
    """MEMORY.md style: a heading per category, one bullet per belief, unconfirmed ones marked."""
    lines = ["# MEMORY.md", "", f"_Distilled from conversations by distill on {_now():%Y-%m-%d}._"]
    for category, heading in HEADINGS.items():
        chosen = [b for b in beliefs if b.category == category]
        if chosen:
            lines += ["", f"## {heading}", ""]
            lines += [f"- {b.statement}" + (" _(unconfirmed)_" if b.status == "provisional" else "") for b in chosen]
    return ("\n".join(lines) + "\n").encode("utf-8")


def _parquet(settings: Settings, statuses: Sequence[str] | None, path: Path, mode: int) -> int:
    """COPY … TO on the store's own connection, into a private file beside `path`, renamed over it once complete
    (a special file, such as /dev/stdout, is written in place); the number of beliefs written."""
    in_place = path.exists() and not path.is_file()
    target = path if in_place else path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with _read(settings) as con, private_files():
            written = reads.copy_to(con, str(target), "parquet", None if statuses is None else list(statuses))
        if not in_place:
            os.chmod(target, mode)
            os.replace(target, path)
    except BaseException as exc:
        if not in_place:
            target.unlink(missing_ok=True)
        if isinstance(exc, (duckdb.Error, OSError)) and not isinstance(exc, DistillError):
            raise DistillError(f"cannot write {path}: {getattr(exc, 'strerror', None) or exc}") from exc
        raise
    return written


EXPORT_MODE = 0o600


def export(settings: Settings, fmt: str, output: Path | None, statuses: Sequence[str] | None = None,
           mode: int = EXPORT_MODE) -> tuple[Exported, bytes]:
    """Write the beliefs to `output` (with permissions `mode`: private unless asked otherwise), or return the bytes
    for stdout; markdown defaults to live beliefs only."""
    if fmt not in FORMATS:
        raise DistillError(f"unknown export format {fmt!r}")
    if fmt == "markdown" and statuses is None:
        statuses = ("active", "provisional")
    if output is not None and not output.parent.is_dir():
        raise DistillError(f"cannot write {output}: directory {output.parent} does not exist")
    if fmt == "parquet":
        if output is None:
            raise DistillError("parquet export needs --output FILE")
        return Exported(fmt, _parquet(settings, statuses, output, mode), str(output)), b""
    beliefs = _stored(settings, statuses)
    if fmt == "markdown":
        beliefs = sorted(beliefs, key=lambda b: (-b.confidence, b.statement))
    data = {"jsonl": _jsonl, "csv": _csv, "markdown": _markdown}[fmt](beliefs)
    if fmt == "jsonl":
        data = _clock_lines(settings) + _tombstone_lines(settings) + data
    if output is not None:
        _write_file(output, data, mode)
        return Exported(fmt, len(beliefs), str(output)), b""
    return Exported(fmt, len(beliefs), None), data


def _write_file(path: Path, data: bytes, mode: int) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
    except OSError as exc:
        raise DistillError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _clock_lines(settings: Settings) -> bytes:
    """The transcripts' clock per scope (store/clock.py): activation and lifecycle are measured on it, so an import
    that restores it first gives every belief the status and activation it had here (on the wall clock instead,
    two-year-old evidence would arrive archived)."""
    if not settings.db_path.exists():
        return b""
    with _read(settings) as con:
        found = clock.read(con)
    return b"".join(orjson.dumps({"clock": {"scope": scope, "at": at.astimezone(UTC).isoformat()}}) + b"\n"
                    for scope, at in sorted(found.items()))


def _tombstone_lines(settings: Settings) -> bytes:
    """Forgetting survives export → import: tombstones (hashes, no text) come first, applied before any belief."""
    if not settings.db_path.exists():
        return b""
    with _read(settings) as con:
        found = tombstones.every(con)
    return b"".join(orjson.dumps({"tombstone": {"key": key, "kind": kind, "forgotten_at": at, "reason": reason}})
                    + b"\n" for key, kind, at, reason in found)




# An import line is input: every field is checked for its type here, so a wrong one is named with its line
# (`distill beliefs import`: "in.jsonl:3: … importance must be an integer"), never a failure deeper down.
Json = Mapping[str, object]


def _text(obj: Json, name: str, default: str | None = None) -> str:
    """A string field; absent or null: `default` (a required field has none)."""
    value = obj.get(name)
    if value is None and default is not None:
        return default
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string")
    return value


def _optional_text(obj: Json, name: str) -> str | None:
    value = obj.get(name)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{name} must be a string or null")
    return value


def _number(obj: Json, name: str, default: float) -> float:
    value = obj.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number")
    return float(value)


def _integer(obj: Json, name: str, default: int | None = None) -> int:
    value = obj.get(name)
    if value is None and default is not None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer")
    return value


def _objects(obj: Json, name: str) -> list[Json]:
    value = obj.get(name) or []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ValueError(f"{name} must be a list of objects")
    return value


def _evidence(item: Json) -> StoredEvidence:
    return StoredEvidence(
        _text(item, "message_id"), _text(item, "session"), _text(item, "agent"), _text(item, "file"),
        _integer(item, "byte_start"), _integer(item, "byte_end"), _text(item, "ts", ""), _text(item, "quote", ""),
        _text(item, "run", "import"), _text(item, "statement", ""), _number(item, "confidence", 0.7),
        _text(item, "evidence_type", "explicit"),
    )


_REQUIRED = ("id", "statement", "category", "confidence", "scope", "subject", "attribute")


def _belief(obj: object) -> StoredBelief:
    if not isinstance(obj, dict):
        raise TypeError("not a JSON object")
    missing = [name for name in _REQUIRED if obj.get(name) is None]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    keys = obj.get("keys") or []
    if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
        raise ValueError("keys must be a list of strings")
    return StoredBelief(
        id=_text(obj, "id"), statement=_text(obj, "statement"), category=_text(obj, "category"),
        confidence=_number(obj, "confidence", 0.0), status=_text(obj, "status", "provisional"),
        scope=_text(obj, "scope"), subject=_text(obj, "subject"), attribute=_text(obj, "attribute"),
        valid_from=_optional_text(obj, "valid_from"), valid_to=_optional_text(obj, "valid_to"),
        evidence_type=_text(obj, "evidence_type", "explicit"), importance=_integer(obj, "importance", 5),
        decay_sensitivity=_text(obj, "decay_sensitivity", "medium"),
        superseded_by=_optional_text(obj, "superseded_by"), supersedes=_optional_text(obj, "supersedes"),
        conflicts_with=_optional_text(obj, "conflicts_with"), evidence_count=_integer(obj, "evidence_count", 0),
        sessions=_integer(obj, "sessions", 0), first_seen=_text(obj, "first_seen", ""),
        last_seen=_text(obj, "last_seen", ""), extractor=_text(obj, "extractor", "import"),
        model=_optional_text(obj, "model"), prompt_version=_text(obj, "prompt_version", "import"),
        keys=tuple(keys), evidence=tuple(_evidence(item) for item in _objects(obj, "evidence")),
    )


def _entry(obj: Json, name: str) -> Json:
    entry = obj[name]
    if not isinstance(entry, dict):
        raise TypeError(f"{name} must be an object")
    return entry


def _clock(obj: Json) -> tuple[str, datetime]:
    entry = _entry(obj, "clock")
    scope = entry.get("scope")
    if not isinstance(scope, str) or not (scope == clock.GLOBAL or scope.startswith("agent:")):
        raise ValueError("a clock needs a scope: global or agent:<id>")
    at = datetime.fromisoformat(str(entry["at"]))
    return scope, min(at if at.tzinfo else at.replace(tzinfo=UTC), _now() + clock.SKEW)


def _tombstone(obj: Json) -> tuple[str, str, datetime, str]:
    entry = _entry(obj, "tombstone")
    key, kind, reason = (entry.get(name) for name in ("key", "kind", "reason"))
    if not (isinstance(key, str) and key and isinstance(kind, str) and kind and isinstance(reason, str) and reason):
        raise ValueError("a tombstone needs key, kind and reason")
    at = datetime.fromisoformat(str(entry["forgotten_at"]))
    return key, kind, at if at.tzinfo else at.replace(tzinfo=UTC), reason


_NOT_JSONL = {b"PAR1": "a Parquet file", b"id,": "a CSV export"}


def import_file(settings: Settings, path: Path) -> ImportResult:
    """Import a JSONL export; idempotent (evidence is unique per belief and message). Its tombstones are applied
    first, so what was forgotten where it was exported stays forgotten here."""
    beliefs: list[StoredBelief] = []
    dead: list[tuple[str, str, datetime, str]] = []
    clocks: dict[str, datetime] = {}
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DistillError(f"cannot read {path}: {exc.strerror or exc}") from exc
    for magic, what in _NOT_JSONL.items():
        if data.startswith(magic):
            raise DistillError(f"{path} is {what}: import reads JSONL exports "
                               f"(`distill beliefs export --format jsonl`)")
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
            if isinstance(obj, dict) and "tombstone" in obj:
                dead.append(_tombstone(obj))
            elif isinstance(obj, dict) and "clock" in obj:
                scope, at = _clock(obj)
                clocks[scope] = max(at, clocks.get(scope, at))
            else:
                beliefs.append(_belief(obj))
        except (orjson.JSONDecodeError, ValueError, TypeError, KeyError, AttributeError) as exc:
            raise DistillError(f"{path}:{number}: not a belief or tombstone: {exc}") from exc
    # The clock first (an export without one: its evidence's newest times), so lifecycle and activation are
    # measured as where it was exported, not on the wall clock.
    clocks = clocks or clock.newest_of((e.agent, message_time(e.ts)) for b in beliefs for e in b.evidence)
    with connect_for(settings) as con, transaction(con):
        clock.advance(con, clocks)
        applied = tombstones.restore(con, dead)
        return ImportResult(restore(con, beliefs, settings=store_settings(settings)), applied)


@dataclass(frozen=True, slots=True)
class ImportResult:
    beliefs: UpsertResult
    tombstones: int

    def as_dict(self) -> dict[str, object]:
        return {**self.beliefs.as_dict(), "tombstones": self.tombstones}


def counts(settings: Settings) -> BeliefCounts:
    if not settings.db_path.exists():
        return BeliefCounts((), ())
    with _read(settings) as con:
        return reads.counts(con)


def recent_runs(settings: Settings, limit: int) -> list[runs.RunRecord]:
    if not settings.db_path.exists():
        return []
    with _read(settings) as con:
        records = runs.recent(con, limit)
    return runs.as_seen(records, held(settings.lock_path))


def from_run(settings: Settings, run_id: str) -> list[BeliefRow]:
    """The beliefs a run added evidence to, so a run can say what it learned."""
    with _read(settings) as con:
        ids = [r[0] for r in con.execute("SELECT DISTINCT belief_id FROM evidence WHERE run_id = ?", [run_id]).fetchall()]
        return reads.by_ids(con, ids, store_settings(settings), _now()) if ids else []
