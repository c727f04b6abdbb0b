"""A big scan spread over worker processes: whole small files read, parsed and screened ahead of the main process.

A worker reads a file exactly as the main process would (read.py's reader, then `chunk.screen_read` message after
message: screening depends only on the message, the session skip in force when it was read and the file's last
user text, all carried along the file) and hands back what the main process needs to replay it: the messages with
their screened result, the counted skips (those logged, with their offsets, in order), the lines and bytes read and
the cursor at the end. The main process consumes the results strictly in plan order into the same chunk and
dispatcher (`replay`), so batches, batch ids, cursors, counters, decisions shown and progress are those of a plain
read. It reads a file itself, in order, as always, when the file is big (a worker hands a whole file back at once),
when its messages would fill the chunk (a mid-file commit needs the reader's open file for its cursor), when the
workers are still starting, and when a worker could not read it as planned or failed (the main process then does
what the plain reader does: skips it, counted, or raises its error).

On Linux, when the main process runs no other thread (Python's or native: no DuckDB connection is open then),
workers are forks of it (`_Forked`): nothing to start or import. They keep only their two pipes (stdio on /dev/null;
the run lock's descriptor is closed at once, so a killed run's lock is free though a worker lives a moment longer)
and never return into the main process's code. Elsewhere (macOS, where fork without exec is unsafe, or with threads
running) they are fresh interpreters running `serve()` (not multiprocessing's children, which import the caller's
main script again). Either way they run `_serve` on pickled frames over two pipes. They start before the planning of
a first run (`early`) and look at its files for it (`Scanner.looks`: stat and fingerprint, while the main process
looks at the next ones and matches them to the cursors), or when the scan begins while the main process reads the
first files itself; whenever the result it needs next is not back yet, the main process scans the next files itself
(the same functions, no pipe) rather than wait. They ignore SIGINT and SIGTERM (the main process stops at its safe
points and closes them), and end when their task pipe closes: when the main process is done, stops, fails or is
killed.

Why a pool of its own rather than `concurrent.futures.ProcessPoolExecutor` (tests/bench/bench_scan_pool.py: 3,000
small sessions, 32 MB, one worker on this 2-core host, the same task functions and schedule, the executor's answers
waited for only when the main process has nothing to scan alongside):
- speed is no reason either way: three runs (best of 2, 3, 5, the host's load 5-8) gave the main process alone
  1.79 / 1.19 / 2.15 s, this pool forked 1.32 / 1.13 / 2.11 s, the executor forked 1.85 / 1.05 / 2.02 s (with
  forkserver 2.46 / 1.38 / 2.43 s, spawn 2.29 / 1.79 / 3.11 s: a fresh interpreter imports the package first);
- a killed run is: SIGKILLed, this pool's workers (forked or spawned) end within 3 s and the run lock is free at
  once. The executor's workers outlive their run (each waits on a queue whose writing end it holds itself), and
  forked ones inherit the lock's descriptor, so every later run would find the lock held (`another distill run is
  in progress`) until they were killed by hand. Built on the executor, the pool would still need what `_Forked`
  does here (close every inherited descriptor but its own, ignore SIGINT/SIGTERM) and a watch for its parent's
  death in each worker, on an executor whose pipes it does not know.
"""

from __future__ import annotations

import fcntl
import gc
import io
import logging
import os
import pickle
import queue
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from operator import attrgetter
from pathlib import Path
from typing import NamedTuple, Protocol, Self, get_args

from distiller import sources as registry
from distiller.config import AUTO, Settings
from distiller.events import LOGGED_SKIPS, Tally, log
from distiller.pipeline.chunk import Chunk, Window, cost, screen_read
from distiller.pipeline.read import FileRead, open_reading, session_key
from distiller.progress import Progress
from distiller.records import Cursor, Message
from distiller.screen import Decision, Screened
from distiller.sources.base import SourceFile
from distiller.tail import Stat, tail_digest
from distiller.track import Look, Observed, ReadPlan, Unreadable, look

# A scan is spread over workers (scan_workers = auto) only when it plans at least this much: an hourly run's tails
# stay in the main process, and no process is started for them.
MIN_SCAN_BYTES = 8 * 1024 * 1024
# Files of up to this many planned bytes are read by workers; bigger ones by the main process, in order.
MAX_FILE_BYTES = 2 * 1024 * 1024
# A task is consecutive files of up to this many planned bytes, or TASK_FILES files, for one worker.
TASK_BYTES = 512 * 1024
TASK_FILES = 256
# Tasks handed to each worker and not yet consumed: enough to keep it busy while the main process dispatches a
# chunk; bounds the results waiting in memory.
TASKS_AHEAD = 6
# The main process scans smaller tasks alongside the workers, to be back soon for their answers.
TASK_BYTES_HERE = TASK_BYTES // 4
# The size asked of the workers' pipes (Linux; 1 MiB is the default limit for unprivileged processes).
PIPE_BYTES = 1024 * 1024
# The collector's thresholds while a scan runs: with the default young generation (700 objects) it walks the
# records a chunk holds over and over, some 9 % of a scan's CPU; a scan makes few reference cycles.
SCAN_GC_THRESHOLDS = (50_000, 20, 20)
# The planning of a first run looks at this many files at a time in a worker (LOOKS_AHEAD of them handed ahead),
# and at LOOK_FILES_HERE at a time in the main process alongside.
LOOK_FILES = 64
LOOKS_AHEAD = 2
LOOK_FILES_HERE = 32
LOOK_HERE = "here"  # what a worker answers for a file it could not look at
# How long closing waits for a worker to end before it is killed.
CLOSE_SECONDS = 2.0
_FRAME = struct.Struct("<Q")  # a pickled frame's length, before it on the pipes

# A file as a worker gets it: path, device, inode, agent, session id, the session skip known, start, stop, format
# and the index's session key.
FileTask = tuple[str, int, int, str, str, "str | None", int, int, str, "str | None"]

# A screened message as a worker packs it for the pipe (plain tuples pickle an order of magnitude faster than the
# records): Message's fields in order, each Decision's fields but its message, then the rest of Screened.
_PackedMessage = tuple[str, str, str, str, "str | None", "str | None", str, str, str, int, int, bool]
_PackedDecision = tuple[str, str, str, str]
_PackedScreened = tuple[_PackedMessage, tuple[_PackedDecision, ...], tuple[str, ...], tuple[tuple[str, int], ...], int]


class FileScan(NamedTuple):
    """What a worker (or the main process alongside) read of one file: the offset after its last line read, the
    lines read, the tail digest at that offset, the session skip in force there, the skips counted (reason, count)
    apart from those logged (reason, offset, in order), what its messages count toward the chunk, and its messages
    with their screened result: as records when the main process scanned it (`messages`), or packed as plain tuples
    by a worker (`packed`); the other list is empty."""

    end: int
    lines: int
    digest: str
    skip: str | None
    counted: tuple[tuple[str, int], ...]
    logged: tuple[tuple[str, int], ...]
    size: int
    messages: list[Screened]
    packed: list[_PackedScreened]


_MESSAGE = attrgetter(*(f.name for f in fields(Message)))
_DECISION_FIELDS = tuple(f.name for f in fields(Decision))
assert _DECISION_FIELDS[0] == "message"  # a packed decision is the rest, in order
_DECISION = attrgetter(*_DECISION_FIELDS[1:])
# The packed types name every field: one added to Message or Decision must be added to them too.
assert len(get_args(_PackedMessage)) == len(fields(Message))
assert len(get_args(_PackedDecision)) == len(_DECISION_FIELDS) - 1


def _pack(screened: Screened) -> _PackedScreened:
    return (_MESSAGE(screened.decisions[0].message), tuple(map(_DECISION, screened.decisions)),
            screened.clean_events, screened.redactions, screened.invisible_chars)


def _packed(scanned: FileScan, screened: list[Screened]) -> FileScan:
    """A worker's scan: its messages packed for the pipe."""
    return scanned._replace(packed=[_pack(each) for each in screened])


def _kept(scanned: FileScan, screened: list[Screened]) -> FileScan:
    """The main process's scan: its messages kept as records."""
    return scanned._replace(messages=screened)


def _unpacked(packed: _PackedScreened) -> Screened:
    message_fields, decisions, clean_events, redactions, invisible_chars = packed
    message = Message(*message_fields)
    return Screened(tuple([Decision(message, *decision) for decision in decisions]), clean_events, redactions,
                    invisible_chars)


# --- the worker side ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Job:
    settings: Settings
    window: Window | None


_job: list[_Job] = []  # the worker's one job, read first

# A file to look at, as `look` takes it: path, agent, format, forced.
_LookItem = tuple[str, str, str, bool]


class _Looks(NamedTuple):
    """A task of looking at files (`Scanner.looks`), answered with a list of `_LookAnswer`."""

    files: list[_LookItem]


class _Scans(NamedTuple):
    """A task of scanning files, answered with a list of FileScan | None (`scan_files`)."""

    files: list[FileTask]


class _Seen(NamedTuple):
    """An observation packed for the pipe: what `look` found that the main process does not know already."""

    dev: int
    inode: int
    size: int
    mtime_ns: int
    fingerprint: str
    session_id: str
    distinctive: bool


# What a worker answers for a file it looked at: what it saw, why it could not be read, None for a file gone, or
# LOOK_HERE.
_LookAnswer = _Seen | Unreadable | str | None


class _Ready(NamedTuple):
    """A worker's first answer: it runs, and which code."""

    pid: int
    module: str


class _Source(Protocol):
    """A pipe to read frames from (a raw pipe fills `readinto` with what it has)."""

    def readinto(self, buffer: memoryview, /) -> int | None: ...


class _Sink(Protocol):
    """A pipe to write frames to (an unbuffered one may take part of a write)."""

    def write(self, data: memoryview, /) -> int | None: ...

    def flush(self) -> None: ...


class _FileTally:
    """What reading one file counts, in a worker (a whole Tally per file costs more than reading a small one); the
    skips that are logged are noted with their offsets, for the main process to log them in order."""

    __slots__ = ("bytes_read", "files", "lines", "noted", "skipped")

    def __init__(self) -> None:
        self.files = self.lines = self.bytes_read = 0
        self.skipped: Counter[str] = Counter()
        self.noted: list[tuple[str, int]] = []

    def line_skipped(self, reason: str, path: str, start: int) -> None:
        self.skipped[reason] += 1
        if reason in LOGGED_SKIPS:
            self.noted.append((reason, start))

    def file_skipped(self, reason: str, path: str, detail: str = "") -> None:
        """The main process reads such a file itself, and counts it."""


def _write(out: _Sink, value: object) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    for part in (_FRAME.pack(len(data)), data):
        view = memoryview(part)
        while view:  # an unbuffered pipe may take part of it (a signal mid-write)
            view = view[out.write(view) or 0:]
    out.flush()


def _exactly(inp: _Source, size: int) -> bytearray:
    """`size` bytes (a raw pipe returns what it has); EOFError when the other side closed first."""
    data = bytearray(size)
    view, got = memoryview(data), 0
    while got < size:
        n = inp.readinto(view[got:])
        if not n:
            raise EOFError("the scan worker ended")
        got += n
    return data


def _read(inp: _Source) -> object:
    """The next frame's value; EOFError when the other side closed."""
    return pickle.loads(_exactly(inp, _FRAME.unpack(_exactly(inp, _FRAME.size))[0]))


def _take(inp: _Source, tasks: queue.SimpleQueue[object]) -> None:
    """Read tasks as they come (the main process never blocks writing one); None once stdin closes, and also after
    any other failure to read a task (a frame that does not unpickle): the worker then ends, and the main process
    meets a gone worker and reads the rest itself, instead of both waiting for ever."""
    try:
        while True:
            tasks.put(_read(inp))
    except (EOFError, OSError):
        return
    finally:
        tasks.put(None)


def serve() -> None:
    """A fresh worker's life (`_serve` on its stdin and stdout); anything else written to stdout goes to stderr."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    inp = sys.stdin.buffer
    if not isinstance(inp, io.BufferedReader):  # a pipe's, as subprocess.Popen gives it
        raise TypeError(f"a scan worker's stdin is a {type(inp).__name__}, not a pipe's reader")
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    _serve(inp, out)


def _serve(inp: _Source, out: _Sink) -> None:
    """A worker's life: its job, then tasks on `inp`, each task's scans on `out`, until `inp` closes (the main
    process is done or gone) or `out` does."""
    logging.disable(logging.CRITICAL)
    gc.set_threshold(*SCAN_GC_THRESHOLDS)
    try:
        job = _read(inp)
    except EOFError:
        return
    if not isinstance(job, _Job):
        raise TypeError(f"a scan worker's job of type {type(job).__name__}")
    _job[:] = [job]
    _write(out, _Ready(os.getpid(), os.path.realpath(__file__)))
    tasks: queue.SimpleQueue[object] = queue.SimpleQueue()
    threading.Thread(target=_take, args=(inp, tasks), daemon=True).start()
    try:
        while (task := tasks.get()) is not None:
            if isinstance(task, _Looks):
                _write(out, _looks(task.files))
            elif isinstance(task, _Scans):
                _write(out, scan_files(task.files, job, _packed))
            else:
                raise TypeError(f"a scan worker's task of type {type(task).__name__}")
    except BrokenPipeError:  # the main process stopped reading: it is done
        pass


def scan_files(tasks: list[FileTask], job: _Job,
               pack: Callable[[FileScan, list[Screened]], FileScan]) -> list[FileScan | None]:
    """A task: its files, each scanned or None (the main process reads it); a worker packs the screened messages
    for the pipe (`_packed`), the main process keeps the records (`_kept`). All files are read first, then all their
    messages screened: screening message after message keeps its code and patterns in the CPU caches (as a chunk
    does)."""
    return [None if read is None else _screened(read, job, pack) for read in [_read_file(task, job) for task in tasks]]


def _looks(files: list[_LookItem]) -> list[_LookAnswer]:
    """What `look` finds of each (path, agent, format, forced), an observation packed as what the main process
    does not know (`_Seen`, `_unpacked_look`); LOOK_HERE for one the main process looks at itself."""
    found: list[_LookAnswer] = []
    for path, agent, fmt, forced in files:
        try:
            seen = look(path, agent, fmt, forced)
        except Exception:  # noqa: BLE001 - any fault: the main process looks at the file again and meets it itself
            found.append(LOOK_HERE)
            continue
        if isinstance(seen, Observed):
            stat = seen.stat
            found.append(_Seen(stat.dev, stat.inode, stat.size, stat.mtime_ns, seen.fingerprint, seen.session_id,
                               seen.distinctive))
        else:
            found.append(seen)
    return found


def _unpacked_look(item: _LookItem, seen: object) -> Look:
    """What a worker saw of `item`, as `look` returns it; TypeError for an answer no worker gives."""
    path, agent, fmt, forced = item
    if isinstance(seen, _Seen):
        return Observed(path, agent, Stat(seen.dev, seen.inode, seen.size, seen.mtime_ns), seen.fingerprint,
                        seen.session_id, seen.distinctive, fmt)
    if seen == LOOK_HERE:
        return look(path, agent, fmt, forced)
    if seen is None or isinstance(seen, Unreadable):
        return seen
    raise TypeError(f"a look answer of type {type(seen).__name__}")


# A file read, its messages not screened yet: its scan but for the messages, its reading's state, and each message
# with the session skip it was read under.
_Read = tuple[FileScan, FileRead, list[tuple[Message, "str | None"]]]


def _read_file(task: FileTask, job: _Job) -> _Read | None:
    path, dev, inode, agent, session_id, known_skip, start, stop, format_name, key = task
    target = Cursor("", path, agent, session_id, dev, inode, 0, 0, 0, "", session_skip=known_skip)
    plan = ReadPlan(target, start, stop, None, "", format_name)
    tally = _FileTally()
    try:
        # _FileTally has every member of Tally that a reading uses (files, lines, bytes_read, line_skipped,
        # file_skipped) but none of the rest, which would cost more per file than reading a small one; read.py
        # types its counter as the whole Tally.
        reading = open_reading(plan, job.settings, {session_id: key} if key else {}, tally)  # type: ignore[arg-type]
        if reading is None:
            return None  # not the file planned, or unreadable: the main process finds so itself, and counts it
        with reading.file:
            offset, size = start, 0
            pending: list[tuple[Message, str | None]] = []
            window = job.window
            for message, offset in reading:  # noqa: B007 - the last offset is where the reading ended, used below
                if message is None:
                    continue
                if window is not None and (reason := window.excludes(message)) is not None:
                    tally.line_skipped(reason, path, message.byte_start)
                    continue
                size += cost(message)
                pending.append((message, reading.skip))
            digest = tail_digest(reading.file, offset)
    except Exception:  # noqa: BLE001 - a read error or any fault: the main process reads the file and meets it itself
        return None
    counted = tuple((reason, n) for reason, n in tally.skipped.items() if reason not in LOGGED_SKIPS)
    scanned = FileScan(offset, tally.lines, digest, reading.skip, counted, tuple(tally.noted), size, [], [])
    return scanned, reading.state, pending


def _screened(read: _Read, job: _Job, pack: Callable[[FileScan, list[Screened]], FileScan]) -> FileScan | None:
    """The file's messages screened in order, then packed or kept: all of them screened first, as screening one
    may change the one before (a secret split across the two is redacted in both)."""
    scanned, state, pending = read
    settings = job.settings
    try:
        return pack(scanned, [screen_read(message, skip, state, settings) for message, skip in pending])
    except Exception:  # noqa: BLE001 - any fault: the main process reads the file and meets it itself
        return None


# --- the main process side ---------------------------------------------------------------------------------------

def replay(scanned: FileScan, plan: ReadPlan, chunk: Chunk, tally: Tally, progress: Progress | None) -> None:
    """Count a file a worker read and put its messages in the chunk, as reading it here would have (the caller
    made sure they do not fill the chunk)."""
    target = plan.target
    tally.files += 1
    chunk.begin(plan)
    before = tally.lines
    tally.lines += scanned.lines
    tally.bytes_read += scanned.end - plan.start
    if progress is not None and before >> 10 != tally.lines >> 10:
        progress.tick()
    skipped = tally.skipped
    for reason, n in scanned.counted:
        skipped[reason] += n
    for reason, offset in scanned.logged:
        tally.line_skipped(reason, target.path, offset)
    chunk.add_screened([_unpacked(packed) for packed in scanned.packed] if scanned.packed else scanned.messages,
                       target.file_id, scanned.size)
    chunk.move(Cursor(target.file_id, target.path, target.agent, target.session_id, target.dev, target.inode,
                      target.size, target.mtime_ns, scanned.end, scanned.digest, target.state, scanned.skip))


def _for_workers(plan: ReadPlan) -> bool:
    """Whether a worker may read the plan: small enough, and of a format a fresh process knows."""
    return plan.stop - plan.start <= MAX_FILE_BYTES and registry.builtin(plan.format)


def workers_for(settings: Settings, planned_bytes: int) -> int:
    """How many workers a scan of `planned_bytes` uses (0: it is read in the main process)."""
    if settings.scan_workers != AUTO:
        return int(settings.scan_workers)
    if os.name != "posix":  # the workers' pipes are waited on with select
        return 0
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return usable - 1 if usable >= 2 and planned_bytes >= MIN_SCAN_BYTES else 0  # the main process scans too


class InProcess:
    """No workers: every file is read by the main process."""

    def result(self, index: int) -> FileScan | None:
        return None

    def close(self) -> None:
        pass

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# A spawned worker is this interpreter running serve(); it ignores SIGINT and SIGTERM from its first statement on.
_WORKER = ("import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); signal.signal(signal.SIGTERM, signal.SIG_IGN); "
           "from distiller.pipeline.scan import serve; serve()")


class _Spawned:
    """A worker started as a fresh interpreter running this very code (where a fork is not safe), with the handle
    `_Forked` has: its pid, its two pipes (raw, as subprocess.Popen opens them unbuffered), wait and kill."""

    def __init__(self) -> None:
        package_root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
        # Unbuffered: whether an answer is there is asked of the pipe itself (select), no buffer hides one.
        self.process = subprocess.Popen([sys.executable, "-c", _WORKER], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, bufsize=0)
        stdin, stdout = self.process.stdin, self.process.stdout
        if not isinstance(stdin, io.FileIO) or not isinstance(stdout, io.FileIO):  # bufsize=0 gives raw pipes
            self.process.kill()
            self.process.wait()
            raise OSError(f"a scan worker's pipes are {type(stdin).__name__} and {type(stdout).__name__}, not raw")
        self.pid = self.process.pid
        self.stdin, self.stdout = stdin, stdout

    def wait(self, timeout: float | None = None) -> int:
        return self.process.wait(timeout)

    def kill(self) -> None:
        self.process.kill()


@contextmanager
def fewer_collections() -> Iterator[None]:
    """The collector runs seldom within (SCAN_GC_THRESHOLDS), as it was after."""
    before = gc.get_threshold()
    gc.set_threshold(*SCAN_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _widen(fd: int) -> None:
    """A pipe that holds PIPE_BYTES where the system lets it: the main process hands out its tasks without waiting
    for a busy worker to take them, and a worker writes its results ahead without waiting for the main process to
    consume them (a default pipe holds 64 KiB, less than one task's results)."""
    if hasattr(fcntl, "F_SETPIPE_SZ"):
        try:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        except OSError:  # above the system's limit (fs.pipe-max-size): the default size only slows the scan
            pass


def can_fork() -> bool:
    """Whether workers may be forked from this process: on Linux (fork without exec is unsafe on macOS), with no
    other thread, of Python or native (a DuckDB connection's), that a child would inherit in whatever state it
    was in."""
    if sys.platform != "linux" or threading.active_count() != 1:
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


class _Forked:
    """A worker forked from the main process: no interpreter to start, nothing to import; it runs `_serve` on two
    pipes, with the handle the main process needs of a subprocess.Popen."""

    def __init__(self) -> None:
        task_read, task_write = os.pipe()
        result_read, result_write = os.pipe()
        try:
            self.pid = os.fork()
        except OSError:
            for fd in (task_read, task_write, result_read, result_write):
                os.close(fd)
            raise
        if self.pid == 0:
            _forked_life(task_read, result_write)  # never returns
        os.close(task_read)
        os.close(result_write)
        self.stdin = os.fdopen(task_write, "wb", buffering=0)
        self.stdout = os.fdopen(result_read, "rb", buffering=0)
        self.returncode: int | None = None

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            pid, status = os.waitpid(self.pid, 0 if deadline is None else os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
            elif deadline is None:  # waitpid without WNOHANG returns only with the child's status
                raise ChildProcessError(f"waitpid returned no status for scan worker {self.pid}")
            elif time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"scan worker {self.pid}", timeout or 0.0)
            else:
                time.sleep(0.005)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _forked_life(task_read: int, result_write: int) -> None:
    """The forked child: every inherited descriptor closed but its two pipe ends (the run lock's above all, so a
    worker that outlives a killed run never holds it) and stdio on /dev/null; SIGINT and SIGTERM ignored (the main
    process stops it by closing its pipe), the other signals as a fresh process has them; it never returns into
    the code of the main process."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        for signum in signal.valid_signals():
            if callable(signal.getsignal(signum)):
                signal.signal(signum, signal.SIG_DFL)
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            if fd not in (task_read, result_write):
                os.dup2(null, fd)
        low, high = sorted((task_read, result_write))
        os.closerange(3, low)
        os.closerange(low + 1, high)
        os.closerange(high + 1, os.sysconf("SC_OPEN_MAX"))
        gc.freeze()  # what it inherited is never collected here: no collection walks it, no page of it is copied
        _serve(os.fdopen(task_read, "rb", buffering=0), os.fdopen(result_write, "wb"))
        code = 0
    finally:
        os._exit(code)


_Worker = _Spawned | _Forked


def _scans(answer: object) -> list[FileScan | None]:
    """A worker's answer to a task of scans, checked to be one (TypeError: the worker failed)."""
    if not isinstance(answer, list) or not all(scanned is None or isinstance(scanned, FileScan) for scanned in answer):
        raise TypeError(f"a scan answer of type {type(answer).__name__}, not a list of scans")
    return answer


@dataclass(slots=True)
class _Task:
    """Consecutive plans scanned together: by a worker (its answer still to be read) or by the main process."""

    indices: list[int]
    worker: _Worker | None
    results: list[FileScan | None] | None = None


class Scanner(InProcess):
    """Hands the small files of the plans to worker processes, TASKS_AHEAD tasks each ahead of the main process
    (each worker answers in the order of its tasks), and gives their results back in plan order. Whenever the
    result it needs next is not there yet, the main process scans the next task itself instead of waiting."""

    def __init__(self, settings: Settings, window: Window | None, workers: int, fork: bool | None = None) -> None:
        self.job = _Job(settings, window)
        self.plans: Sequence[ReadPlan] = ()
        self.session_keys: dict[str, str] = {}
        self.eligible: list[bool] = []
        self.next_plan = 0  # the first plan in no task (nor passed over while the workers started)
        self.tasks: deque[_Task] = deque()  # in plan order
        self.handed: dict[_Worker, int] = {}  # the tasks each worker has not answered yet
        self.done: dict[int, FileScan | None] = {}
        self.by_workers = self.by_main = 0  # files handed to the workers, and scanned alongside them here
        self.ready = False
        self.failed = False
        self.workers: list[_Worker] = []
        self._ready_workers: set[_Worker] = set()
        self.forked = can_fork() if fork is None else fork
        try:
            for _ in range(workers):
                worker = _Forked() if self.forked else _Spawned()
                for pipe in (worker.stdin, worker.stdout):
                    _widen(pipe.fileno())
                self.workers.append(worker)
                self.handed[worker] = 0
                _write(worker.stdin, self.job)
            log.info("scan: %d worker process(es), %s", workers, "forked" if self.forked else "fresh interpreters")
        except OSError as exc:  # no processes here (a sandbox, a limit): everything is read in the main process
            log.info("scan workers could not start (%s): reading in the main process", exc)
            self._fail()

    def read(self, plans: Sequence[ReadPlan], session_keys: dict[str, str]) -> None:
        """The plans to scan (the workers may have been started before they were made)."""
        self.plans, self.session_keys = plans, session_keys
        self.eligible = [_for_workers(plan) for plan in plans]

    def looks(self, files: Sequence[SourceFile]) -> Iterator[Look]:
        """What `track.look` finds of each file, in order, for `plan_reads` (a first run's planning opens every
        file): chunks of them looked at by the workers while the main process looks at the next ones itself, as it
        scans alongside them; all of them here once a worker failed, or while none is ready."""
        items: list[_LookItem] = [(found.path, found.agent, found.format, found.forced) for found in files]
        chunks: deque[tuple[_Worker | None, int, list[Look]]] = deque()  # (worker, first item, looks) in order
        handed: Counter[_Worker] = Counter()
        given = taken = 0  # items in a chunk, items yielded
        try:
            while taken < len(items):
                try:
                    if not self.failed and (self.ready or self._started()):
                        self.ready = True
                        for worker in self.workers:
                            while handed[worker] < LOOKS_AHEAD and given < len(items):
                                part = items[given:given + LOOK_FILES]
                                if not all(map(registry.builtin, (fmt for _, _, fmt, _ in part))):
                                    break  # a format a fresh worker may not know: the rest is looked at here
                                _write(worker.stdin, _Looks(part))
                                handed[worker] += 1
                                chunks.append((worker, given, []))
                                given += len(part)
                    head = chunks[0] if chunks else None
                    if given < len(items) and (head is None or (head[0] is not None
                                                                and not select.select([head[0].stdout], [], [], 0)[0])):
                        part = items[given:given + LOOK_FILES_HERE]
                        chunks.append((None, given, [look(*item) for item in part]))
                        given += len(part)
                        continue
                    looker, first, found = chunks.popleft()  # looker: the worker looking, None for here
                    if looker is not None:
                        answer = _read(looker.stdout)
                        handed[looker] -= 1
                        if not isinstance(answer, list):
                            raise TypeError(f"a look answer of type {type(answer).__name__}")
                        if len(answer) != min(LOOK_FILES, len(items) - first):
                            raise ValueError("a look answer of the wrong size")
                        # The slice is exactly as long as the answer (just checked): strict says so.
                        found = [_unpacked_look(item, seen)
                                 for item, seen in zip(items[first:first + len(answer)], answer, strict=True)]
                except (EOFError, OSError, pickle.UnpicklingError, ValueError, TypeError) as exc:
                    log.warning("a scan worker failed (%s): planning in the main process", exc or type(exc).__name__)
                    self._fail()
                    chunks.clear()
                    for item in items[taken:]:
                        taken += 1
                        yield look(*item)
                    return
                for seen in found:
                    taken += 1
                    yield seen
        finally:
            if any(worker is not None for worker, _, _ in chunks) and not self.failed:
                self._fail()  # left before the end: the answers still due would be read as scans

    def wait_started(self, timeout: float = 30.0) -> bool:
        """Wait until every worker is ready (a test or a benchmark that wants the workers to read from the first
        file on); False if one failed or the time ran out."""
        deadline = time.monotonic() + timeout
        try:
            while not self.failed and not self._started():
                if time.monotonic() > deadline:
                    return False
                select.select([w.stdout for w in self.workers if w not in self._ready_workers], [], [],
                              max(0.0, deadline - time.monotonic()))
        except (EOFError, OSError, pickle.UnpicklingError, ValueError, TypeError):
            self._fail()
        self.ready = not self.failed
        return self.ready

    def _started(self) -> bool:
        """Whether every worker has said it is ready, waiting for none (the main process reads on meanwhile)."""
        waiting = [w for w in self.workers if w not in self._ready_workers]
        if waiting:
            readable, _, _ = select.select([w.stdout for w in waiting], [], [], 0)
            for worker in waiting:
                if worker.stdout in readable:
                    ready = _read(worker.stdout)
                    if not isinstance(ready, _Ready):
                        raise TypeError(f"a scan worker's first answer of type {type(ready).__name__}")
                    if ready.module != os.path.realpath(__file__):
                        raise EOFError(f"worker {ready.pid} runs {ready.module}, not this code")
                    self._ready_workers.add(worker)
        return len(self._ready_workers) == len(self.workers)

    def result(self, index: int) -> FileScan | None:
        """The scan of plan `index`, or None: the main process reads that file itself, as always."""
        if index in self.done:
            return self.done.pop(index)
        if self.failed or not self.eligible[index]:
            return None
        try:
            if not self.ready:
                self.ready = self._started()
                if not self.ready:
                    return None
            self.next_plan = max(self.next_plan, index)
            self._hand_out()
            while self.tasks and self.tasks[0].indices[0] <= index:
                task = self.tasks[0]
                if (task.worker is not None and len(self.tasks) < 8 * TASKS_AHEAD * len(self.workers)
                        and not select.select([task.worker.stdout], [], [], 0)[0] and self._scan_next_here()):
                    continue
                self.tasks.popleft()
                if task.worker is not None:
                    results = _scans(_read(task.worker.stdout))
                    self.handed[task.worker] -= 1
                elif task.results is not None:
                    results = task.results
                else:
                    raise RuntimeError(f"scan task {task.indices[0]} has neither a worker nor results")
                # One result per file of the task, in order (a worker answers `scan_files` of the task's files):
                # a shorter answer is a worker's fault, caught below, not files silently left to be read here.
                self.done.update(zip(task.indices, results, strict=True))
                self._hand_out()
        except (EOFError, OSError, pickle.UnpicklingError, ValueError, TypeError) as exc:
            # A worker died (killed, out of memory) or answered nonsense: the rest is read here.
            log.warning("a scan worker failed (%s): reading the rest in the main process", exc or type(exc).__name__)
            self._fail()
            return None
        return self.done.pop(index, None)

    def _next_task(self, task_bytes: int = TASK_BYTES) -> tuple[list[int], list[FileTask]]:
        """The eligible plans from `next_plan` on, up to `task_bytes` or TASK_FILES."""
        plans, eligible = self.plans, self.eligible
        indices: list[int] = []
        tasks: list[FileTask] = []
        planned = 0
        i = self.next_plan
        while i < len(plans) and planned < task_bytes and len(indices) < TASK_FILES:
            if eligible[i]:
                plan = plans[i]
                target = plan.target
                indices.append(i)
                tasks.append((target.path, target.dev, target.inode, target.agent, target.session_id,
                              target.session_skip, plan.start, plan.stop, plan.format,
                              session_key(target, self.session_keys)))
                planned += plan.stop - plan.start
            i += 1
        self.next_plan = i
        return indices, tasks

    def _hand_out(self) -> None:
        """Keep TASKS_AHEAD tasks handed to each worker."""
        for worker in self.workers:
            while self.handed[worker] < TASKS_AHEAD and self.next_plan < len(self.plans):
                indices, tasks = self._next_task()
                if indices:
                    _write(worker.stdin, _Scans(tasks))
                    self.handed[worker] += 1
                    self.by_workers += len(indices)
                    self.tasks.append(_Task(indices, worker))

    def _scan_next_here(self) -> bool:
        """Scan the next task in the main process (while the workers are busy); False when none is left."""
        self._hand_out()
        indices, tasks = self._next_task(TASK_BYTES_HERE)
        if not indices:
            return False
        self.tasks.append(_Task(indices, None, scan_files(tasks, self.job, _kept)))
        self.by_main += len(indices)
        return True

    def _fail(self) -> None:
        self.failed = True
        self.done.clear()
        self.tasks.clear()
        self.close()

    def close(self) -> None:
        """Stop the workers: closing their pipes ends them (a task running is cut off at its next write); one that
        does not end within CLOSE_SECONDS is killed."""
        workers, self.workers = self.workers, []
        if workers:
            log.info("scan: %d file(s) handed to %d worker(s), %d scanned alongside them", self.by_workers,
                     len(workers), self.by_main)
        for worker in workers:
            for pipe in (worker.stdin, worker.stdout):
                try:
                    pipe.close()
                except OSError:
                    pass
        deadline = time.monotonic() + CLOSE_SECONDS
        for worker in workers:
            try:
                worker.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()


def early(settings: Settings, paths: Sequence[str], before_workers: Callable[[], None]) -> Scanner | None:
    """Workers started before the reads are planned (their start overlaps the planning) for a first run, whose
    plans are whole files: when the files at `paths` hold enough for `workers_for`; `before_workers` is called
    before they start. The caller closes them."""
    total = 0
    for path in paths:
        try:
            total += os.stat(path).st_size
        except OSError:
            continue
        if total >= MIN_SCAN_BYTES:
            break
    workers = workers_for(settings, total)
    if workers < 1:
        return None
    before_workers()
    return Scanner(settings, None, workers)


def scanner(plans: Sequence[ReadPlan], session_keys: dict[str, str], settings: Settings,
            window: Window | None = None, started: Scanner | None = None,
            before_workers: Callable[[], None] = lambda: None) -> InProcess:
    """Workers for the plans when what they may read is worth spreading (see `workers_for`), else the main process
    alone; `started` are workers started early for them (without a window), `before_workers` is called before
    others start."""
    for_workers = sum(plan.stop - plan.start for plan in plans if _for_workers(plan))
    workers = workers_for(settings, for_workers) if for_workers else 0
    if started is not None and (workers < 1 or window is not None):
        started.close()
        started = None
    if workers < 1:
        return InProcess()
    if started is None:
        before_workers()
    scanning = started or Scanner(settings, window, workers)
    scanning.read(plans, session_keys)
    return scanning
