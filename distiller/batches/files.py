"""Batch files: a batch kept on disk so that a crash never loses work or pays twice.

A batch is written atomically (tmp + fsync + rename) as `pending` before any model call and again as `distilled`
with the results before the commit, so the next run resumes it instead of reading or paying again. In between,
each answered request is appended to the batch's journal (batches/journal.py), which loading a pending batch
replays. A file that does not parse, or is of a format this version does not know, is reported as unreadable and
set aside.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from distiller.batches import disk, journal
from distiller.batches.model import PENDING, Batch, BatchItem, LedgerRow, redacted, redacted_failures
from distiller.errors import EXIT_USAGE, DistillError, os_fault
from distiller.extract.base import Candidate, EvidenceRef, Extraction, ExtractRequest, Item, Usage
from distiller.records import Cursor, EvidenceItem, Message
from distiller.screen import Decision

FORMAT_VERSION = 1

# `<first 12 hex digits of the run id>-<sequence>` (4 digits or more), and `-r<n>` for each retry of a quarantined
# batch.
BATCH_ID = re.compile(r"[0-9a-f]{12}-[0-9]{4,}(?:-r[0-9]+)*")
SET_ASIDE_SUFFIX = ".unreadable"


class BadBatchId(DistillError):
    exit_code = EXIT_USAGE


def checked_id(batch_id: str) -> str:
    """A batch id from outside (the command line) is joined into a path only if it has the shape of one."""
    if not BATCH_ID.fullmatch(batch_id):
        raise BadBatchId(f"not a batch id: {batch_id!r} (ids look like 0123456789ab-0001; see `distill batches list`)")
    return batch_id


def order(batch_id: str) -> tuple[str | int, ...]:
    """The order batches are made and committed in: by run, then by sequence number (so -10000 follows -9999), then
    by retry; a name not shaped like a batch id sorts after the others of its run, by name."""
    run, _, rest = batch_id.partition("-")
    parts = rest.split("-")
    if BATCH_ID.fullmatch(batch_id):
        return (run, 0, int(parts[0]), *(int(p[1:]) for p in parts[1:]))
    return (run, 1, batch_id)


class BatchUnreadable(DistillError):
    """A batch file that does not parse (truncated by a full disk, edited by hand, from a future version)."""


def batches_dir(state_dir: Path) -> Path:
    return state_dir / "batches"


def path_of(state_dir: Path, batch_id: str) -> Path:
    return batches_dir(state_dir) / f"{batch_id}.json"


def write(state_dir: Path, batch: Batch) -> Path:
    """Written whole or not at all: a failed write removes its tmp file and leaves the previous version intact."""
    directory = batches_dir(state_dir)
    target = path_of(state_dir, batch.batch_id)
    tmp = target.with_suffix(".json.tmp")
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            disk.write_all(fd, orjson.dumps(_to_json(batch)))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
        disk.fsync_dir(directory)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise os_fault("write batch file", target, exc,
                       "nothing was lost: what this batch holds is read again next run") from exc
    return target


def remove(state_dir: Path, batch_id: str) -> None:
    """The batch file, then its journal (a journal left alone by a kill in between is removed by `tidy`)."""
    path = path_of(state_dir, batch_id)
    path.unlink(missing_ok=True)
    journal.remove(path)


def load(path: Path) -> Batch:
    """A batch file; a pending one with the requests its journal says were answered since."""
    try:
        data = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise _unreadable(path, str(exc)) from exc
    version = data.get("format") if isinstance(data, dict) else None
    if version != FORMAT_VERSION:
        # Written by another version (or not a batch file): its fields cannot be trusted to mean what ours do.
        raise _unreadable(path, f"batch file format {version!r}, this version reads format {FORMAT_VERSION}")
    try:
        batch = _from_json(data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _unreadable(path, str(exc)) from exc
    return with_journal(path, batch) if batch.status == PENDING else batch


def with_journal(path: Path, batch: Batch) -> Batch:
    """The batch with the records of its journal that it does not hold yet."""
    done = {r.request_id for r in batch.results}
    records = [r for r in journal.replay(path, batch.batch_id, batch.requests,
                                         {b.item.item_id: b.item for b in batch.items})
               if r[0].request_id not in done]
    if not records:
        return batch
    return replace(batch, results=(*batch.results, *(x for x, _ in records)),
                   failed=(*batch.failed, *(f for _, failed in records for f in failed)))


def _unreadable(path: Path, why: str) -> BatchUnreadable:
    return BatchUnreadable(f"batch file {path} does not parse ({why}): the next run sets it aside and reads its "
                           f"messages again")


@dataclass(frozen=True)
class Waiting:
    """The batch files of a state dir: those that parse, and those that do not or were set aside."""

    batches: list[Batch]
    unreadable: list[Path]


def scan(state_dir: Path) -> Waiting:
    directory = batches_dir(state_dir)
    if not directory.is_dir():
        return Waiting([], [])
    found, unreadable = [], list(directory.glob(f"*.json{SET_ASIDE_SUFFIX}"))
    for path in sorted(directory.glob("*.json"), key=lambda p: order(p.stem)):
        try:
            found.append(load(path))
        except BatchUnreadable:
            unreadable.append(path)
        except FileNotFoundError:
            continue  # committed and removed by a run meanwhile
    return Waiting(found, sorted(unreadable, key=lambda p: order(p.name.split(".json")[0])))


def load_all(state_dir: Path) -> list[Batch]:
    return scan(state_dir).batches


def tidy(state_dir: Path) -> list[str]:
    """At the start of a run (under the run lock): remove the tmp files a killed run left (they hold redacted
    text), and set aside every batch file that does not parse, with the later batches of the same run, whose cursor
    moves start where it ends. None of them was committed, so their messages are read again. Returns the names set
    aside."""
    directory = batches_dir(state_dir)
    if not directory.is_dir():
        return []
    for tmp in directory.glob("*.json.tmp"):
        tmp.unlink(missing_ok=True)
    for orphan in directory.glob(f"*{journal.SUFFIX}"):  # its batch was committed and removed
        if not orphan.with_suffix(".json").exists():
            orphan.unlink(missing_ok=True)
    waiting = scan(state_dir)
    bad = [p for p in waiting.unreadable if p.suffix == ".json"]
    bad_ids = [p.stem for p in bad]
    later = [path_of(state_dir, b.batch_id) for b in waiting.batches
             if any(b.batch_id[:12] == i[:12] and order(b.batch_id) > order(i) for i in bad_ids)]
    for path in [*bad, *later]:
        _set_aside(path)
    return [p.name for p in [*bad, *later]]


def _set_aside(path: Path) -> None:
    kept = journal.path_of(path)
    if kept.exists():
        os.replace(kept, kept.with_name(kept.name + SET_ASIDE_SUFFIX))
    os.replace(path, path.with_name(path.name + SET_ASIDE_SUFFIX))


def set_aside(state_dir: Path, batch_id: str) -> str:
    """Keep a batch that cannot be committed out of the way (its messages are read again); returns its name."""
    path = path_of(state_dir, batch_id)
    _set_aside(path)
    return path.name


def _to_json(batch: Batch) -> dict[str, Any]:
    return {
        "format": FORMAT_VERSION,
        "batch_id": batch.batch_id,
        "run_id": batch.run_id,
        "status": batch.status,
        "extractor": batch.extractor,
        "model": batch.model,
        "prompt_version": batch.prompt_version,
        "ledger": [{"verdict": _decision_json(r.verdict), "file_id": r.file_id} for r in batch.ledger],
        "items": [{"item": b.item, "request_id": b.request_id, "provenance": b.provenance} for b in batch.items],
        "requests": [{"request_id": r.request_id, "agent": r.agent, "items": [i.item_id for i in r.items]}
                     for r in batch.requests],
        "cursors": [{"cursor": c, "expected": e} for c, e in batch.cursors],
        "results": [redacted(x) for x in batch.results],
        "failed": [{"request_id": r.request_id, "agent": r.agent, "items": [i.item_id for i in r.items], "error": e}
                   for r, e in redacted_failures(batch.failed)],
        "attempts": batch.attempts,
        "estimated_tokens": batch.estimated_tokens,
        "remote_id": batch.remote_id,
    }


def _decision_json(decision: Decision) -> dict[str, Any]:
    """The ledger needs no text: a batch file holds only the redacted text of the items it sends."""
    m = decision.message
    message = {"format": m.format, "agent": m.agent, "session_id": m.session_id, "message_id": m.message_id,
               "parent_id": m.parent_id, "ts": m.ts, "role": m.role, "text": "", "file": m.file,
               "byte_start": m.byte_start, "byte_end": m.byte_end, "inter_session": m.inter_session}
    return {"message": message, "item_id": decision.item_id, "decision": decision.decision, "reason": decision.reason}


def _from_json(data: dict[str, Any]) -> Batch:
    items = tuple(BatchItem(Item(**b["item"]), b["request_id"], EvidenceItem(**b["provenance"])) for b in data["items"])
    by_id = {b.item.item_id: b.item for b in items}
    return Batch(
        batch_id=data["batch_id"],
        run_id=data["run_id"],
        status=data["status"],
        extractor=data["extractor"],
        model=data["model"],
        prompt_version=data["prompt_version"],
        ledger=tuple(
            LedgerRow(Decision(Message(**r["verdict"]["message"]), r["verdict"]["item_id"], "",
                               r["verdict"]["decision"], r["verdict"]["reason"]), r["file_id"])
            for r in data["ledger"]
        ),
        items=items,
        requests=tuple(ExtractRequest(r["request_id"], r["agent"], tuple(by_id[i] for i in r["items"]))
                       for r in data["requests"]),
        cursors=tuple((Cursor(**c["cursor"]), c["expected"]) for c in data["cursors"]),
        results=tuple(
            Extraction(
                x["request_id"],
                tuple(Candidate(**{**c, "evidence": tuple(EvidenceRef(**e) for e in c["evidence"])})
                      for c in x["candidates"]),
                tuple(Usage(**u) for u in x["usage"]),
            )
            for x in data["results"]
        ),
        failed=tuple((ExtractRequest(f["request_id"], f["agent"], tuple(by_id[i] for i in f["items"])), f["error"])
                     for f in data["failed"]),
        attempts=data["attempts"],
        estimated_tokens=data["estimated_tokens"],
        remote_id=data["remote_id"],
    )
