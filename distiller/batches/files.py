"""Batches: the unit of extraction and of commit, kept as files so that a crash never loses work or pays twice.

A batch holds everything one commit needs: the ledger rows of the messages read, the items sent to the
extractor (kept messages as citable evidence, each with its trimmed preceding turn as context), the requests
packed per agent by an estimated token budget, the cursor moves, and, once extracted, the results. It is written
atomically (tmp + fsync + rename) as `pending` before any model call and again as `distilled` with the results
before the commit, so the next run resumes it instead of reading or paying again.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import orjson

from distiller.errors import EXIT_USAGE, DistillError, os_fault
from distiller.extract.base import Candidate, EvidenceRef, Extraction, Extractor, ExtractRequest, Item, Usage
from distiller.screen.prefilter import DROP, KEEP
from distiller.records import EvidenceItem, Message
from distiller.screen import Decision, Screened
from distiller.store.cursors import Cursor
from distiller.verify import Source

FORMAT_VERSION = 1
CONTEXT_CHARS = 400
ITEM_OVERHEAD_TOKENS = 12
PENDING, SUBMITTED, DISTILLED = "pending", "submitted", "distilled"


def estimate_tokens(text: str) -> int:
    """About four characters per token for English; CJK runs closer to one per character. A CJK character takes
    three bytes in UTF-8, so half the extra bytes approximates how many there are, without a loop in Python."""
    wide = 0 if text.isascii() else (len(text.encode("utf-8")) - len(text)) // 2
    return (len(text) - wide) // 4 + wide + 1


@dataclass(frozen=True, slots=True)
class BatchItem:
    item: Item
    request_id: str
    provenance: EvidenceItem


@dataclass(frozen=True, slots=True)
class LedgerRow:
    verdict: Decision
    file_id: str


@dataclass(frozen=True)
class Batch:
    batch_id: str
    run_id: str
    status: str
    extractor: str
    model: str | None
    prompt_version: str
    ledger: tuple[LedgerRow, ...]
    items: tuple[BatchItem, ...]
    requests: tuple[ExtractRequest, ...]
    cursors: tuple[tuple[Cursor, int | None], ...]
    results: tuple[Extraction, ...] = ()
    failed: tuple[tuple[ExtractRequest, str], ...] = ()  # (part of) a request that could not be extracted, and why
    attempts: int = 0
    estimated_tokens: int = 0
    remote_id: str | None = None  # the Message Batches API id while the requests are processed there

    def sources(self) -> dict[str, Source]:
        return {b.item.item_id: Source(b.item.text, b.item.evidence, b.provenance) for b in self.items}

    @property
    def todo(self) -> tuple[ExtractRequest, ...]:
        done = {r.request_id for r in self.results}
        return tuple(r for r in self.requests if r.request_id not in done)


def _provenance(decision: Decision) -> EvidenceItem:
    m = decision.message
    return EvidenceItem(decision.item_id, m.session_id, m.agent, m.file, m.byte_start, m.byte_end, m.ts, "")


# An item to send: its number in reading order, the decision it comes from, its text, whether it is evidence.
_Entry = tuple[int, Decision, str, bool]


@dataclass
class _Packer:
    """Packs items of one agent into requests no larger than the token budget."""

    budget_tokens: int
    requests: list[list[_Entry]] = field(default_factory=list)
    used: list[int] = field(default_factory=list)  # the estimated tokens of each request's items

    def add(self, group: list[_Entry]) -> None:
        cost = sum(estimate_tokens(text) + ITEM_OVERHEAD_TOKENS for _, _, text, _ in group)
        if not self.requests or (self.used[-1] + cost > self.budget_tokens and self.used[-1] > 0):
            self.requests.append([])
            self.used.append(0)
        self.requests[-1].extend(group)
        self.used[-1] += cost


def _pack(screened: Sequence[tuple[Screened, str]], request_budget_tokens: int) -> dict[str, _Packer]:
    """Kept items become citable evidence, each preceded by the turn before it (trimmed) as context."""
    packers: dict[str, _Packer] = {}
    previous: dict[str, Decision] = {}
    counter = 0
    for entry, _ in screened:
        for decision in entry.decisions:
            session = decision.message.session_id
            if decision.decision == KEEP:
                group: list[_Entry] = []
                before = previous.get(session)
                if before is not None and before.decision != KEEP:
                    counter += 1
                    group.append((counter, before, before.text[-CONTEXT_CHARS:], False))
                counter += 1
                group.append((counter, decision, decision.text, True))
                agent = decision.message.agent
                if agent not in packers:
                    packers[agent] = _Packer(request_budget_tokens)
                packers[agent].add(group)
            if decision.decision != DROP:
                previous[session] = decision
    return packers


@dataclass(frozen=True, slots=True)
class Plan:
    """What a batch would send: all a dry run reports of it."""

    requests: int
    estimated_tokens: int


def plan(screened: Sequence[tuple[Screened, str]], *, request_budget_tokens: int, prompt_tokens: int) -> Plan:
    """The requests `build` would pack, counted without making them."""
    used = [tokens for packer in _pack(screened, request_budget_tokens).values() for tokens in packer.used]
    return Plan(len(used), sum(prompt_tokens + tokens for tokens in used))


def build(
    batch_id: str,
    run_id: str,
    extractor: Extractor,
    screened: Sequence[tuple[Screened, str]],
    cursors: Iterable[tuple[Cursor, int | None]],
    *,
    request_budget_tokens: int,
    prompt_tokens: int,
) -> Batch:
    """The ledger rows of the screened messages and the requests their kept items are packed into."""
    ledger = tuple(LedgerRow(s.decision, file_id) for s, file_id in screened)
    packers = _pack(screened, request_budget_tokens)
    requests, items, estimated = [], [], 0
    for agent in sorted(packers):
        for group, used in zip(packers[agent].requests, packers[agent].used):
            request_id = f"{batch_id}-r{len(requests) + 1}"
            request_items = [
                BatchItem(Item(f"m{number}", d.message.role, d.message.ts, text, evidence), request_id, _provenance(d))
                for number, d, text, evidence in group
            ]
            requests.append(ExtractRequest(request_id, agent, tuple(b.item for b in request_items)))
            items.extend(request_items)
            estimated += prompt_tokens + used
    return Batch(batch_id, run_id, PENDING, extractor.name, extractor.model, extractor.prompt_version, ledger,
                 tuple(items), tuple(requests), tuple(cursors), estimated_tokens=estimated)


def split(request: ExtractRequest) -> tuple[ExtractRequest, ...]:
    """Halve a refused request, keeping each context item with the evidence item after it."""
    items = request.items
    if len(items) < 2:
        return ()
    middle = len(items) // 2
    while middle < len(items) and not items[middle - 1].evidence:
        middle += 1
    if middle >= len(items):
        return ()
    return (replace(request, request_id=f"{request.request_id}a", items=items[:middle]),
            replace(request, request_id=f"{request.request_id}b", items=items[middle:]))


# Files ------------------------------------------------------------------------------------------------------------

# `<first 12 hex digits of the run id>-<sequence>`, and `-r<n>` for each retry of a quarantined batch.
BATCH_ID = re.compile(r"[0-9a-f]{12}-[0-9]{4}(?:-r[0-9]+)*")
SET_ASIDE_SUFFIX = ".unreadable"


class BadBatchId(DistillError):
    exit_code = EXIT_USAGE


def checked_id(batch_id: str) -> str:
    """A batch id from outside (the command line) is joined into a path only if it has the shape of one."""
    if not BATCH_ID.fullmatch(batch_id):
        raise BadBatchId(f"not a batch id: {batch_id!r} (ids look like 0123456789ab-0001; see `distill batches list`)")
    return batch_id


class BatchUnreadable(DistillError):
    """A batch file that does not parse (truncated by a full disk, edited by hand, from a future version)."""


def batches_dir(state_dir: Path) -> Path:
    return state_dir / "batches"


def path_of(state_dir: Path, batch_id: str) -> Path:
    return batches_dir(state_dir) / f"{batch_id}.json"


def _write_all(fd: int, data: bytes) -> None:
    """os.write may write less than asked (a full disk, a file size limit): loop until all is written."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(28, "No space left on device")
        view = view[written:]


def write(state_dir: Path, batch: Batch) -> Path:
    """Written whole or not at all: a failed write removes its tmp file and leaves the previous version intact."""
    directory = batches_dir(state_dir)
    target = path_of(state_dir, batch.batch_id)
    tmp = target.with_suffix(".json.tmp")
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            _write_all(fd, orjson.dumps(_to_json(batch)))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise os_fault("write batch file", target, exc,
                       "nothing was lost: what this batch holds is read again next run") from exc
    return target


def remove(state_dir: Path, batch_id: str) -> None:
    path_of(state_dir, batch_id).unlink(missing_ok=True)


def load(path: Path) -> Batch:
    try:
        return _from_json(orjson.loads(path.read_bytes()))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BatchUnreadable(f"batch file {path} does not parse ({exc}): the next run sets it aside and reads its "
                              f"messages again") from exc


@dataclass(frozen=True)
class Waiting:
    """The batch files of a state dir: those that parse, and those that do not or were set aside."""

    batches: list[Batch]
    unreadable: list[Path]


def scan(state_dir: Path) -> Waiting:
    directory = batches_dir(state_dir)
    if not directory.is_dir():
        return Waiting([], [])
    found, unreadable = [], sorted(directory.glob(f"*.json{SET_ASIDE_SUFFIX}"))
    for path in sorted(directory.glob("*.json")):
        try:
            found.append(load(path))
        except BatchUnreadable:
            unreadable.append(path)
        except FileNotFoundError:
            continue  # committed and removed by a run meanwhile
    return Waiting(found, sorted(unreadable))


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
    waiting = scan(state_dir)
    bad = [p for p in waiting.unreadable if p.suffix == ".json"]
    bad_ids = [p.stem for p in bad]
    later = [path_of(state_dir, b.batch_id) for b in waiting.batches
             if any(b.batch_id[:12] == i[:12] and b.batch_id > i for i in bad_ids)]
    for path in [*bad, *later]:
        _set_aside(path)
    return [p.name for p in [*bad, *later]]


def _set_aside(path: Path) -> None:
    os.replace(path, path.with_name(path.name + SET_ASIDE_SUFFIX))


def set_aside(state_dir: Path, batch_id: str) -> str:
    """Keep a batch that cannot be committed out of the way (its messages are read again); returns its name."""
    path = path_of(state_dir, batch_id)
    _set_aside(path)
    return path.name


def _to_json(batch: Batch) -> dict:
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
        "results": batch.results,
        "failed": [{"request_id": r.request_id, "agent": r.agent, "items": [i.item_id for i in r.items], "error": e}
                   for r, e in batch.failed],
        "attempts": batch.attempts,
        "estimated_tokens": batch.estimated_tokens,
        "remote_id": batch.remote_id,
    }


def _decision_json(decision: Decision) -> dict:
    """The ledger needs no text: a batch file holds only the redacted text of the items it sends."""
    m = decision.message
    message = {"format": m.format, "agent": m.agent, "session_id": m.session_id, "message_id": m.message_id,
               "parent_id": m.parent_id, "ts": m.ts, "role": m.role, "text": "", "file": m.file,
               "byte_start": m.byte_start, "byte_end": m.byte_end, "inter_session": m.inter_session}
    return {"message": message, "item_id": decision.item_id, "decision": decision.decision, "reason": decision.reason}


def _from_json(data: dict) -> Batch:
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
