"""The manual side of batches: commit an external agent's beliefs, list, retry or discard batches."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from pathlib import Path

import duckdb
import orjson

from distiller.batches import files as batches
from distiller.batches.model import DISTILLED, PENDING, SUBMITTED, SUBMITTING, Batch, Quarantined, quarantined_from
from distiller.config import Settings
from distiller.errors import DistillError
from distiller.events import Committed, Tally, log
from distiller.extract import EXTERNAL
from distiller.extract.base import Candidate, Extraction, Extractor
from distiller.extract.candidates import candidate
from distiller.lock import run_lock
from distiller.pipeline import distill
from distiller.pipeline.commit import commit_batch
from distiller.store import batch_rows, runs, scalars
from distiller.store.db import connect_for, transaction
from distiller.verify import verify


@dataclass(frozen=True, slots=True)
class BatchInfo:
    batch_id: str
    status: str  # pending | submitting | submitted | distilled | staged | quarantined | unreadable
    requests: int
    items: int
    path: str | None
    error: str | None

    def as_dict(self) -> dict[str, object]:
        return {"batch_id": self.batch_id, "status": self.status, "requests": self.requests, "items": self.items,
                "path": self.path, "error": self.error}


def list_batches(settings: Settings) -> list[BatchInfo]:
    waiting = batches.scan(settings.state_dir)
    found = [
        BatchInfo(b.batch_id, "staged" if b.extractor == EXTERNAL and b.status == PENDING else b.status,
                  len(b.requests), len(b.items), str(batches.path_of(settings.state_dir, b.batch_id)),
                  distill.may_be_billed(b.batch_id) + " (the next run quarantines it)" if b.status == SUBMITTING
                  else None)
        for b in waiting.batches
    ]
    found += [BatchInfo(p.name.split(".json")[0], "unreadable", 0, 0, str(p),
                        "does not parse; set aside by the next run, its messages read again; delete it when done")
              for p in waiting.unreadable]
    if settings.db_path.exists():
        with connect_for(settings, read_only=True) as con:
            found += [BatchInfo(q.batch_id, "quarantined", len(q.requests), len(q.items), None, q.error)
                      for q in _quarantined(con)]
    return found


def _parse_candidates(path: Path) -> list[tuple[int, Candidate]]:
    """One JSON object per line, in the extractor contract's shape, with its line number; a bad line is an error
    naming it."""
    try:
        lines = path.read_bytes().splitlines()
    except OSError as exc:
        raise DistillError(f"cannot read beliefs file {path}: {exc.strerror or exc}") from exc
    found = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise DistillError(f"{path}:{number}: not valid JSON ({exc})") from exc
        if not isinstance(data, dict) or not isinstance(data.get("evidence"), list):
            raise DistillError(f"{path}:{number}: expected an object with an `evidence` list")
        found.append((number, candidate(data)))
    return found


def _quarantined(con: duckdb.DuckDBPyConnection) -> list[Quarantined]:
    """In batch order (-10000 after -9999, not before it as the ids sort as text)."""
    rows = sorted(batch_rows.quarantined(con), key=lambda row: batches.order(row[0]))
    return [quarantined_from(*row) for row in rows]


@dataclass(frozen=True, slots=True)
class LineVerdict:
    line: int
    reason: str | None  # None: the candidate passes verification


@dataclass(frozen=True, slots=True)
class ExternalCommit:
    batch_id: str
    lines: tuple[LineVerdict, ...]
    tally: Tally | None  # None: a dry run, or nothing would be stored (the batch stays staged)
    refused: str | None = None  # why the store kept nothing, when every line passed verification

    @property
    def committed(self) -> bool:
        return self.tally is not None

    @property
    def accepted(self) -> int:
        return sum(v.reason is None for v in self.lines)

    def as_dict(self) -> dict[str, object]:
        return {"batch_id": self.batch_id, "committed": self.committed, "accepted": self.accepted,
                "refused": self.refused,
                "lines": [{"line": v.line, "accepted": v.reason is None, "reason": v.reason} for v in self.lines],
                **(self.tally.as_dict() if self.tally else {})}


def _verdicts(batch: Batch, numbered: list[tuple[int, Candidate]]) -> tuple[LineVerdict, ...]:
    """Each line verified alone, so every rejection can be reported with its line."""
    sources = batch.sources()
    verdicts = []
    for number, line in numbered:
        checked = verify(Extraction(batch.batch_id, (line,), ()), sources, extractor=EXTERNAL, model=None,
                         prompt_version=batch.prompt_version)
        verdicts.append(LineVerdict(number, checked.rejected[0][0] if checked.rejected else None))
    return tuple(verdicts)


def commit_external(settings: Settings, batch_id: str, beliefs_file: Path, *, dry_run: bool = False,
                    accept_empty: bool = False) -> ExternalCommit:
    """Verify and commit an external agent's beliefs for a staged batch, exactly as built-in extractions are.

    A file with candidates of which none passes is almost always a mistake (wrong batch, stale item ids): the batch
    stays staged, so its messages are not marked read without a belief, unless `accept_empty`."""
    batches.checked_id(batch_id)
    numbered = _parse_candidates(beliefs_file)
    with run_lock(settings.lock_path):
        path = batches.path_of(settings.state_dir, batch_id)
        if not path.exists():
            raise DistillError(f"no staged batch {batch_id} (see `distill batches list`)")
        batch = batches.load(path)
        verdicts = _verdicts(batch, numbered)
        passed = sum(v.reason is None for v in verdicts)
        if dry_run or (numbered and not passed and not accept_empty):
            return ExternalCommit(batch_id, verdicts, None)
        candidates = tuple(candidate for _, candidate in numbered)
        batch = replace(batch, status=DISTILLED, results=(Extraction(batch_id, candidates, ()),))
        tally = Tally(extractor=EXTERNAL)
        run_id = _start_run(settings, [str(beliefs_file)])
        require = None if accept_empty or not numbered else _stores_something
        try:
            commit_batch(settings, batch, run_id, tally, final=True, require=require)
        except NothingStored as refused:
            with connect_for(settings) as con:
                runs.update(con, run_id, {}, "failed", str(refused))
            return ExternalCommit(batch_id, verdicts, None, str(refused))
        return ExternalCommit(batch_id, verdicts, tally)


class NothingStored(DistillError):
    """Every candidate passed verification but the store refused each one (forgotten, or holding a secret)."""


def _stores_something(done: Committed) -> None:
    result = done.beliefs
    if not (result.inserted + result.reinforced + result.merged + result.superseded + result.flagged
            + result.replayed):
        refused = {k: v for k, v in result.as_dict().items() if v}
        raise NothingStored("the store refused every belief (" + ", ".join(f"{k} {v}" for k, v in refused.items())
                            + ")")


def _start_run(settings: Settings, sources: list[str]) -> str:
    run_id = uuid.uuid4().hex
    with connect_for(settings) as con:
        runs.start(con, run_id, sources)
    return run_id


def retry(settings: Settings, batch_id: str, extractor: Extractor) -> Tally:
    """Extract a quarantined batch's failed requests again; what succeeds is committed, the rest stays."""
    batches.checked_id(batch_id)
    with run_lock(settings.lock_path):
        with connect_for(settings, read_only=True) as con:
            match = [q for q in _quarantined(con) if q.batch_id == batch_id]
        if not match:
            raise DistillError(f"no quarantined batch {batch_id} (see `distill batches list`)")
        quarantined = match[0]
        attempt = Batch(f"{batch_id}-retry", quarantined.run_id, PENDING, extractor.name, extractor.model,
                        extractor.prompt_version, (), quarantined.items, quarantined.requests, ())
        results, failed = [], []
        for request in attempt.requests:
            extraction, failures = distill.extract_splitting(extractor, request)
            results.append(extraction)
            failed.extend(failures)
        attempt = replace(attempt, status=DISTILLED, results=tuple(results), failed=tuple(failed),
                          batch_id=f"{batch_id}-r{_retries(settings, batch_id) + 1}")
        tally = Tally(extractor=extractor.name, model=extractor.model)
        run_id = _start_run(settings, [f"retry:{batch_id}"])
        commit_batch(settings, attempt, run_id, tally, status="ok",
                     also=lambda con, _: batch_rows.settle(con, batch_id, "retried"))
        return tally


def _retries(settings: Settings, batch_id: str) -> int:
    with connect_for(settings, read_only=True) as con:
        return scalars.count(con, "SELECT count(*) FROM batches WHERE batch_id LIKE ?", [f"{batch_id}-r%"])


def _cost(batch: Batch) -> str | None:
    """What discarding the batch throws away, if it cost anything: its messages are read, and paid for, again."""
    if batch.status in (SUBMITTED, SUBMITTING):
        how = "submitted" if batch.status == SUBMITTED else "being submitted"
        return f"batch {batch.batch_id} was {how} to the Message Batches API: it may be billed"
    if batch.results and batch.model is not None:
        return f"batch {batch.batch_id} holds {len(batch.results)} paid answer(s)"
    return None


def discard(settings: Settings, batch_id: str, *, paid_too: bool = False) -> list[str]:
    """Unstage a staged batch and the ones staged after it (their cursors start where it ends), so their messages
    are read again next run; or give up on a quarantined batch. A batch that may have cost something is discarded
    only when `paid_too` (its messages are sent, and paid for, again). Returns the batch ids affected."""
    batches.checked_id(batch_id)
    with run_lock(settings.lock_path):
        if batches.path_of(settings.state_dir, batch_id).exists():
            # The batch itself is named even when its file does not parse: discarding it is the way out. Only
            # the same run's later batches start where it ends.
            later = {b.batch_id: b for b in batches.load_all(settings.state_dir)
                     if b.batch_id[:12] == batch_id[:12] and batches.order(b.batch_id) >= batches.order(batch_id)}
            affected = sorted({batch_id, *later}, key=batches.order)
            costs = [cost for staged in affected if staged in later and (cost := _cost(later[staged]))]
            if costs and not paid_too:
                them = "them" if len(costs) > 1 else "it"
                raise DistillError(f"{'; '.join(costs)}: discarding sends the messages, and pays for them, again. "
                                   f"The next run collects or resumes {them}; pass --yes to discard anyway")
            for cost in costs:
                log.warning("discarded %s; its messages are sent again next run", cost)
            for staged in affected:
                batches.remove(settings.state_dir, staged)
            return affected
        if settings.db_path.exists():
            with connect_for(settings) as con, transaction(con):
                if batch_rows.settle(con, batch_id, "discarded"):
                    return [batch_id]
    raise DistillError(f"no staged or quarantined batch {batch_id} (see `distill batches list`)")

