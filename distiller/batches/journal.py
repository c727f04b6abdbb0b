"""The result journal of a batch: one line appended (and fsynced) per finished request, next to the batch file.

A paid answer is on disk before the next request can be lost with it, without rewriting the batch file after every
request: the batch file is written only when its status changes (pending, submitted, distilled), and loading a
pending batch replays its journal. A crash mid-append leaves a torn last line, which is ignored (its request is
sent again: it was never saved, so never used) and cut off before the next append. A whole line that does not
parse (a disk that lost a block) is skipped the same way, and so is a line that is not this batch's (another batch
id, a request or failed items the batch does not have: a file copied or edited by hand): it is counted in a warning,
and never committed or charged. A line holds the model's text redacted (model.redacted), like the batch file.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any, Self

import orjson

from distiller.batches import disk
from distiller.batches.model import redacted, redacted_failures
from distiller.errors import os_fault
from distiller.extract.base import Candidate, EvidenceRef, Extraction, ExtractRequest, Item, Usage

SUFFIX = ".journal"
log = logging.getLogger("distiller")

# A finished request: its extraction (candidates and the usage of every call), and what of it failed, and why.
Record = tuple[Extraction, tuple[tuple[ExtractRequest, str], ...]]


def path_of(batch_file: Path) -> Path:
    """`<batch id>.journal` next to `<batch id>.json`."""
    return batch_file.with_suffix(SUFFIX)


def _extraction(x: dict[str, Any]) -> Extraction:
    return Extraction(
        x["request_id"],
        tuple(Candidate(**{**c, "evidence": tuple(EvidenceRef(**e) for e in c["evidence"])}) for c in x["candidates"]),
        tuple(Usage(**u) for u in x["usage"]),
    )


def encode(batch_id: str, extraction: Extraction, failed: tuple[tuple[ExtractRequest, str], ...]) -> bytes:
    return orjson.dumps({
        "batch_id": batch_id,
        "request_id": extraction.request_id,
        "extraction": redacted(extraction),
        "failed": [{"request_id": r.request_id, "agent": r.agent, "items": [i.item_id for i in r.items], "error": e}
                   for r, e in redacted_failures(failed)],
    }) + b"\n"


def _decode(line: bytes, by_id: dict[str, Item]) -> tuple[dict[str, Any], Record]:
    data = orjson.loads(line)
    failed = tuple((ExtractRequest(f["request_id"], f["agent"], tuple(by_id[i] for i in f["items"])), f["error"])
                   for f in data["failed"])
    return data, (_extraction(data["extraction"]), failed)


def _complete(data: bytes) -> int:
    """The length of the journal up to its last newline: what follows is a torn line."""
    return data.rfind(b"\n") + 1


def _part_of(request: ExtractRequest, part: ExtractRequest) -> bool:
    """A failed request is the request itself or one of its halves (`<id>a`, `<id>ab`, …), of its agent and items."""
    suffix = part.request_id[len(request.request_id):]
    own = {i.item_id for i in request.items}
    return (part.request_id.startswith(request.request_id) and set(suffix) <= {"a", "b"}
            and part.agent == request.agent and all(i.item_id in own for i in part.items))


def _belongs(batch_id: str, requests: dict[str, ExtractRequest], data: dict[str, Any], record: Record) -> bool:
    """Whether a line is this batch's: its batch id (lines written before it was recorded have none), and a
    request of the batch, answered for it, whose failed parts are that request's."""
    request = requests.get(data["request_id"])
    return (data.get("batch_id", batch_id) == batch_id and request is not None
            and record[0].request_id == request.request_id
            and all(_part_of(request, part) for part, _ in record[1]))


def replay(batch_file: Path, batch_id: str, requests: tuple[ExtractRequest, ...],
           by_id: dict[str, Item]) -> list[Record]:
    """The records of a batch's journal in the order they were appended (none when there is no journal); a line
    that is not one of this batch's requests is skipped, with a warning."""
    try:
        data = path_of(batch_file).read_bytes()
    except FileNotFoundError:
        return []
    by_request = {r.request_id: r for r in requests}
    records, seen, foreign = [], set(), 0
    for line in data[:_complete(data)].splitlines():
        try:
            fields, record = _decode(line, by_id)
            ours = _belongs(batch_id, by_request, fields, record)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
            log.warning("skipped a journal line of %s that does not parse: its request is sent again", batch_file)
            continue
        if not ours:
            foreign += 1
        elif record[0].request_id not in seen:
            seen.add(record[0].request_id)
            records.append(record)
    if foreign:
        log.warning("skipped %d journal line(s) of %s that are not answers to this batch's requests", foreign,
                    batch_file)
    return records


class Journal:
    """Appends records to a batch's journal, each fsynced before append() returns. Use as a context manager."""

    def __init__(self, batch_file: Path) -> None:
        self.path = path_of(batch_file)
        self.batch_id = batch_file.stem
        self._fd: int | None = None
        self._lock = threading.Lock()  # worker threads append their answers

    def __enter__(self) -> Self:
        try:
            existed = self.path.exists()
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            size = os.fstat(self._fd).st_size
            if size:
                os.lseek(self._fd, 0, os.SEEK_SET)
                keep = _complete(_read_all(self._fd, size))
                if keep != size:  # a torn last line: cut it off, or the next record would be glued to it
                    os.ftruncate(self._fd, keep)
            os.lseek(self._fd, 0, os.SEEK_END)
            if not existed:
                disk.fsync_dir(self.path.parent)
        except OSError as exc:
            self.close()
            raise os_fault("open batch journal", self.path, exc,
                           "nothing was lost: what this batch holds is read again next run") from exc
        return self

    def append(self, extraction: Extraction, failed: tuple[tuple[ExtractRequest, str], ...]) -> None:
        assert self._fd is not None, "the journal is not open"
        line = encode(self.batch_id, extraction, failed)
        with self._lock:
            try:
                end = os.lseek(self._fd, 0, os.SEEK_END)
                try:
                    disk.write_all(self._fd, line)
                    os.fsync(self._fd)
                except OSError:
                    os.ftruncate(self._fd, end)  # no half line for the next append to be glued to
                    raise
            except OSError as exc:
                raise os_fault("append to batch journal", self.path, exc, "the answers saved before this one are "
                               "kept; this request is sent again next run") from exc

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _read_all(fd: int, size: int) -> bytes:
    chunks, left = [], size
    while left > 0:
        chunk = os.read(fd, left)
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def remove(batch_file: Path) -> None:
    path_of(batch_file).unlink(missing_ok=True)
