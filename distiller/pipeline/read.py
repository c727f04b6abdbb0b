"""The reader: the new complete lines of one file, as messages, each with the cursor position after it.

A reading checks that the file it opens is the one planned (same device and inode, not shorter), carries the
session's skip (cron or dreaming) and the last user text read before where it starts (screening needs it), and
makes the cursor for any position it reached: mid-file (its size is the offset, so the unchanged-file shortcut
cannot skip the rest) or at the end of what was read.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

import orjson

from distiller import compressed, stop
from distiller import sources as registry
from distiller.config import Settings
from distiller.events import Tally
from distiller.progress import Progress
from distiller.records import Cursor, Message
from distiller.screen import Screened, screen
from distiller.sources.base import Format, first_entry
from distiller.tail import CHUNK_BYTES, open_regular, read_head, read_lines, skip_reason, stat_of, tail_digest
from distiller.track import ReadPlan


@dataclass
class FileRead:
    """One reading of a file: screening a message needs the last user text read before it in the same file, and
    the message screened just before it (a secret split across the two is redacted in both)."""

    previous_user_text: str | None = None
    previous: Screened | None = None


@dataclass
class Reading:
    """An open file being read along its plan. Iterating yields, for every line read, the message it holds (None
    for a line that is not one) and the offset after it."""

    plan: ReadPlan
    fmt: Format
    file: BinaryIO
    skip: str | None  # why every message of this session is dropped, once known
    state: FileRead
    settings: Settings
    tally: Tally
    progress: Progress | None = None
    retracted: frozenset[int] = frozenset()  # offsets of lines a later line took back (Format.retracted)
    subagent: bool = False  # a subagent's file by its first line (Format.subagent_header): its messages marked

    def __iter__(self) -> Iterator[tuple[Message | None, int]]:
        if self.fmt.group is not None:
            return self._grouped(self.fmt.group)
        return self._lines()

    def _lines(self) -> Iterator[tuple[Message | None, int]]:
        plan, tally, progress = self.plan, self.tally, self.progress
        target = plan.target
        stopping = stop.requested
        skip_line, to_message, entry_session_skip = self.fmt.skip_line, self.fmt.to_message, self.fmt.entry_session_skip
        retracted, subagent = self.retracted, self.subagent
        for line in read_lines(self.file, plan.start, plan.stop, max_line_bytes=self.settings.max_line_bytes):
            if stopping():
                stop.check()  # a safe point: what was read but not committed is simply read again next run
            tally.lines += 1
            tally.bytes_read += line.end - line.start
            if progress is not None and not tally.lines & 1023:
                progress.tick()
            data = line.data
            message = None
            if data is None:
                tally.line_skipped("oversized_line", target.path, line.start)
            elif not data or data.isspace():
                tally.line_skipped("nul_run" if line.nul else "blank", target.path, line.start)
            elif (skipped := skip_line(data)) is not None:
                tally.line_skipped(skipped, target.path, line.start)
            else:
                try:
                    entry = loads(data)
                except ValueError:
                    tally.line_skipped(_decode_failure(data), target.path, line.start)
                else:
                    result = to_message(
                        entry,
                        agent=target.agent,
                        session_id=target.session_id,
                        file=target.path,
                        byte_start=line.start,
                        byte_end=line.end,
                    )
                    if isinstance(result, str):
                        tally.line_skipped(result, target.path, line.start)
                        if self.skip is None:  # a line that is no message may mark the session skipped
                            self.skip = entry_session_skip(entry)
                    elif retracted and line.start in retracted:
                        tally.line_skipped("rolled_back", target.path, line.start)
                    else:
                        message = replace(result, inter_session=True) if subagent else result
            yield message, line.end

    def _grouped(self, group: Callable[[object], tuple[str, bool] | None]) -> Iterator[tuple[Message | None, int]]:
        """The lines of a format that writes one message over several lines (`Format.group`): the lines of one
        group become one message, yielded with the offset after its last line, so no cursor ever falls inside it.

        A group still open where the read stops (its last line may not be written yet) is held back: its lines are
        not counted, and the cursor stays before it, so the next run reads the group whole. Where groups end
        depends on the lines alone, never on where a read starts or stops, so any sequence of runs makes the same
        messages as one run over the final file."""
        plan, tally, progress = self.plan, self.tally, self.progress
        target = plan.target
        stopping = stop.requested
        fmt = self.fmt
        skip_line, to_message, entry_session_skip = fmt.skip_line, fmt.to_message, fmt.entry_session_skip
        pending: Message | None = None  # the group's text so far (None while it has none)
        key: str | None = None  # the open group's key; None when no group is open
        first = held_lines = held_bytes = end = 0
        for line in read_lines(self.file, plan.start, plan.stop, max_line_bytes=self.settings.max_line_bytes):
            if stopping():
                stop.check()
            tally.lines += 1
            tally.bytes_read += line.end - line.start
            if progress is not None and not tally.lines & 1023:
                progress.tick()
            data = line.data
            entry = skipped = None
            if data is None:
                skipped = "oversized_line"
            elif not data or data.isspace():
                skipped = "blank"
            elif (skipped := skip_line(data)) is None:
                try:
                    entry = orjson.loads(data)
                except orjson.JSONDecodeError:
                    skipped = _decode_failure(data)
            grouping = group(entry) if entry is not None else None
            if key is not None and (grouping is None or grouping[0] != key):
                if pending is None:
                    tally.line_skipped("no_text", target.path, first)
                yield pending, end
                pending, key = None, None
            if skipped is not None:
                tally.line_skipped(skipped, target.path, line.start)
                yield None, line.end
                continue
            result = to_message(entry, agent=target.agent, session_id=target.session_id, file=target.path,
                                byte_start=line.start, byte_end=line.end)
            if not isinstance(result, str) and self.retracted and line.start in self.retracted:
                result = "rolled_back"
                if grouping is not None:  # a part taken back: counted here, and not joined to its group
                    tally.line_skipped(result, target.path, line.start)
            if grouping is not None:
                if key is None:
                    key, first, held_lines, held_bytes = grouping[0], line.start, 0, 0
                held_lines += 1
                held_bytes += line.end - line.start
                end = line.end
                if not isinstance(result, str):
                    result = replace(result, inter_session=True) if self.subagent else result
                    pending = result if pending is None else _joined(pending, result)
                if grouping[1]:  # the line that surely ends its group
                    if pending is None:
                        tally.line_skipped("no_text", target.path, first)
                    yield pending, end
                    pending, key = None, None
                continue
            if isinstance(result, str):
                tally.line_skipped(result, target.path, line.start)
                if self.skip is None:
                    self.skip = entry_session_skip(entry)
                yield None, line.end
            else:
                yield replace(result, inter_session=True) if self.subagent else result, line.end
        if key is not None:  # an open group at the end: read whole next time
            tally.lines -= held_lines
            tally.bytes_read -= held_bytes

    def cursor(self, offset: int, *, mid_file: bool = False) -> Cursor:
        """The cursor at `offset`; mid-file progress stores size = offset so the unchanged-file shortcut cannot
        skip the rest."""
        target = self.plan.target
        if mid_file:
            return replace(target, offset=offset, size=offset, tail_digest=tail_digest(self.file, offset),
                           session_skip=self.skip)
        return replace(target, offset=offset, tail_digest=tail_digest(self.file, offset), session_skip=self.skip)


def open_reading(plan: ReadPlan, settings: Settings, session_keys: dict[str, str], tally: Tally,
                 progress: Progress | None = None) -> Reading | None:
    """The file of the plan opened for reading, or None (counted as skipped) when it cannot be opened or is no
    longer the file planned. The caller closes `reading.file`."""
    target = plan.target
    try:
        f = open_regular(target.path)
    except OSError as exc:
        tally.file_skipped(skip_reason(exc), target.path, exc.strerror or str(exc))
        return None
    now = stat_of(os.fstat(f.fileno()))
    if (now.dev, now.inode) != (target.dev, target.inode) or now.size < plan.stop:
        f.close()
        tally.file_skipped("changed_during_read", target.path)
        return None
    if compressed.is_compressed(target.path):  # read whole, once: its offsets are the plain file's
        try:
            decompressed = compressed.whole(f)
        except compressed.Unreadable as exc:
            f.close()
            tally.file_skipped(exc.reason, target.path, str(exc))
            return None
        f.close()
        f = decompressed
        plan = replace(plan, stop=len(decompressed.getbuffer()))
    tally.files += 1
    fmt = registry.named(plan.format)
    skip = target.session_skip or fmt.session_skip(session_key(target, session_keys))
    try:
        subagent = skip is None and _subagent(f, fmt)
        if subagent and not settings.read_subagents:
            skip, subagent = "subagent-session", False
        state = FileRead(_previous_user_text(f, plan, fmt, settings, skip, subagent))
        retracted = _retracted(f, plan, fmt, settings, tally)
    except BaseException:
        f.close()
        raise
    return Reading(plan, fmt, f, skip, state, settings, tally, progress, retracted, subagent)


def _subagent(f: BinaryIO, fmt: Format) -> bool:
    """Whether the file is a subagent's by its first line (`Format.subagent_header`): read here, whatever
    offset the read starts at, so a run that resumes mid-file marks its messages as one from the top would."""
    if fmt.subagent_header is None:
        return False
    head = read_head(f)
    return fmt.subagent_header(first_entry(head.line if head is not None else None))


def _retracted(f: BinaryIO, plan: ReadPlan, fmt: Format, settings: Settings, tally: Tally) -> frozenset[int]:
    """The lines of the file taken back by a line in this read's range (`Format.retracted`); only a range that
    holds the format's marker costs a second look at the file."""
    if fmt.retracted is None or not fmt.retraction_marker or not _holds(f, plan.start, plan.stop,
                                                                        fmt.retraction_marker):
        return frozenset()
    f.seek(0)
    lines = ((line.start, line.data) for line in read_lines(f, 0, plan.stop, max_line_bytes=settings.max_line_bytes)
             if line.data is not None)
    taken_back = fmt.retracted(lines)
    for offset in sorted(o for o, by in taken_back.items() if o < plan.start <= by):
        tally.line_skipped("rolled_back_after_read", plan.target.path, offset)
    return frozenset(taken_back)


def _holds(f: BinaryIO, start: int, stop: int, marker: bytes) -> bool:
    """Whether bytes [start, stop) of the file hold `marker`, read a chunk at a time."""
    f.seek(start)
    position, tail = start, b""
    while position < stop:
        block = f.read(min(CHUNK_BYTES, stop - position))
        if not block:
            return False
        window = tail + block
        if marker in window:
            return True
        tail = window[-(len(marker) - 1):] if len(marker) > 1 else b""
        position += len(block)
    return False


def session_key(target: Cursor, session_keys: dict[str, str]) -> str | None:
    """The key an index gives the file's session (by its id, else by the file's name), which may skip it whole."""
    return session_keys.get(target.session_id) or session_keys.get(Path(target.path).name.split(".jsonl")[0])


def _joined(first: Message, then: Message) -> Message:
    """Two lines of one message as one: the first line's id and start, the texts in order, the last line's end."""
    return replace(first, text=f"{first.text}\n\n{then.text}", byte_end=then.byte_end)


_LONE_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def loads(data: bytes) -> object:
    """A JSON line parsed; ValueError when it is not JSON. A string holding an unpaired surrogate escape
    ("\\ud800", valid JSON that orjson refuses) keeps its message, the surrogate replaced by U+FFFD."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        if not _LONE_SURROGATE_ESCAPE.search(data):
            raise
    try:
        return _without_surrogates(json.loads(data.decode("utf-8"), parse_constant=_no_constant))
    except RecursionError:
        raise ValueError("nested too deep") from None


def _no_constant(name: str) -> object:
    raise ValueError(f"not JSON: {name}")  # NaN and Infinity, which orjson refuses too


def _without_surrogates(value: object) -> object:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    return value


def _decode_failure(data: bytes) -> str:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "invalid_utf8"
    return "malformed_json"


# How far back a read that starts mid-file looks for the user turn before it (tool results can be long).
LOOKBACK_BYTES = 16 * 1024 * 1024


def _lines_before(f: BinaryIO, offset: int) -> Iterator[bytes]:
    """The complete lines that end at or before `offset`, last first, within LOOKBACK_BYTES."""
    end, floor = offset, max(0, offset - LOOKBACK_BYTES)
    while end > floor:
        start = max(floor, end - CHUNK_BYTES)
        f.seek(start)
        block = f.read(end - start)
        cut = 0 if start == 0 else block.find(b"\n") + 1
        if cut == 0 and start > 0:
            if start == floor:
                return
            end = start  # a line longer than the block: look further back for its start
            continue
        yield from reversed(block[cut:].split(b"\n"))
        end = start + cut
        if start == 0:
            return


def _previous_user_text(f: BinaryIO, plan: ReadPlan, fmt: Format, settings: Settings, skip: str | None,
                        subagent: bool = False) -> str | None:
    """The screened text of the last user turn before `plan.start`, as a read from the top would have carried it:
    screening a message depends on it (echoes), so where a run starts must not change what it keeps."""
    if plan.start == 0 or skip is not None:
        return None
    target = plan.target
    for data in _lines_before(f, plan.start):
        if fmt.user_line_marker not in data or fmt.skip_line(data) is not None:
            continue
        try:
            entry = loads(data.replace(b"\x00", b""))
        except ValueError:
            continue
        result = fmt.to_message(entry, agent=target.agent, session_id=target.session_id, file=target.path,
                                byte_start=0, byte_end=0)
        if isinstance(result, str) or result.role != "user":
            continue
        if subagent:
            result = replace(result, inter_session=True)
        text = screen(result, assistant_decision=settings.assistant_decision,
                      extra_blocks=settings.extra_injected_blocks).decisions[-1].text
        if text:
            return text
    return None
