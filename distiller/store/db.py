"""Short-lived DuckDB connections: created 0600, migrated on open, retried while another process holds the file;
and the `Store` a run uses (held open across quick steps, checkpointed once)."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from distiller.errors import DistillError, Unavailable, db_fault, os_fault
from distiller.store.migrations import pending

if TYPE_CHECKING:
    from distiller.config import Settings

_HOLDER = re.compile(r"Conflicting lock is held in (.+?) \(PID (\d+)\)")
MEMORY_LIMIT = "128MB"  # with the run's own buffers, keeps a first run over any corpus under 200 MB RSS
# The block size of a new database file (DuckDB's default is 262,144; see `_create`).
BLOCK_SIZE = 16_384
# What every open passes: DuckDB refuses a second connection in one process to an open database with another
# config. `default_block_size` applies only to a file the open creates (see `_create`).
CONFIG: dict[str, str | bool | int | float | list[str]] = {"memory_limit": MEMORY_LIMIT, "default_block_size": str(BLOCK_SIZE)}
# The WAL a run's store lets grow before DuckDB checkpoints it (its default is 16 MB; see `Store`).
RUN_CHECKPOINT_THRESHOLD = "32MB"


def _is_lock_error(exc: duckdb.Error) -> bool:
    return "Could not set lock" in str(exc) or "Conflicting lock" in str(exc)


def _holder(exc: duckdb.Error) -> str:
    match = _HOLDER.search(str(exc))
    if not match:
        return "another process"
    program, pid = match.groups()
    return f"{Path(program).name} (PID {pid})"


def _open(path: Path, read_only: bool, wait_seconds: float, *,
          defer_checkpoint: bool = False) -> duckdb.DuckDBPyConnection:
    """A connection, retried while another process holds the file. With `defer_checkpoint`, closing the database
    (its last connection in this process) leaves the WAL as it is, for one CHECKPOINT later (see `Store`)."""
    deadline = time.monotonic() + wait_seconds
    delay = 0.05
    while True:
        try:
            con = duckdb.connect(str(path), read_only=read_only, config=CONFIG)
            # A UTC session: every timestamp read back is RFC 3339 with a `Z`, whatever the host's zone.
            con.execute("SET TimeZone = 'UTC'")
            # No progress bar: DuckDB draws one on stdout during a long query, which would corrupt `--json`.
            con.execute("SET enable_progress_bar = false")
            if defer_checkpoint and not read_only:
                con.execute("PRAGMA disable_checkpoint_on_shutdown")
                con.execute(f"SET checkpoint_threshold = '{RUN_CHECKPOINT_THRESHOLD}'")
            return con
        except duckdb.Error as exc:
            if not _is_lock_error(exc):
                raise db_fault(path, str(exc)) or DistillError(f"cannot open database {path}: {exc}") from exc
            if time.monotonic() >= deadline:
                raise Unavailable(f"database {path} is busy: held by {_holder(exc)}; try again shortly") from exc
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Each pending migration in its own transaction, recorded with it; a new database gets them all in one (it
    has no data an alteration could trip over, and one commit instead of one per migration)."""
    con.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name VARCHAR PRIMARY KEY, applied_at TIMESTAMPTZ)")
    applied = {row[0] for row in con.execute("SELECT name FROM schema_migrations").fetchall()}
    steps = pending(applied)
    groups = [steps] if not applied else [[step] for step in steps]
    for group in groups:
        with transaction(con):
            for _, fn in group:
                fn(con)
            con.execute("INSERT INTO schema_migrations SELECT unnest(?), now()", [[name for name, _ in group]])
    return [name for name, _ in steps]


def _needs_migration(con: duckdb.DuckDBPyConnection) -> bool:
    try:
        applied = {row[0] for row in con.execute("SELECT name FROM schema_migrations").fetchall()}
    except duckdb.CatalogException:
        return True
    return bool(pending(applied))


@contextmanager
def private_files() -> Iterator[None]:
    """Files created meanwhile (the database, its .wal, DuckDB's temp files) are readable by their owner only."""
    old_umask = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old_umask)


def _tighten(path: Path) -> None:
    """A database (or .wal) left readable by others by an older version is made private again."""
    for file in (path, path.with_name(path.name + ".wal")):
        try:
            st = os.stat(file)
            if st.st_mode & 0o077 and st.st_uid == os.geteuid():
                os.chmod(file, 0o600)
        except OSError:
            continue


# The database files this process has seen fully migrated, by (device, inode): a migration check opens the file
# and reads its records (about 50 ms), once per process is enough. The identity, not the path, so a database
# replaced by another file (a restored copy, a test's fresh one) is checked again.
_MIGRATED: set[tuple[int, int]] = set()


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _mark_migrated(path: Path) -> None:
    identity = _identity(path)
    if identity is not None:
        _MIGRATED.add(identity)


def _create(path: Path, wait_seconds: float, defer_checkpoint: bool = False) -> duckdb.DuckDBPyConnection:
    """The new database, migrated, and its connection still open for writing (opening one costs ~11 ms).

    Its blocks are `BLOCK_SIZE`, 16 kB, not DuckDB's 256 kB (the `default_block_size` every open passes). A
    checkpoint writes each table's column segments into whole blocks, and the store's tables are many and small:
    the persona corpus's first run left 9.7 MB at 256 kB blocks (37 blocks, most of them part empty) and 5.6 MB at
    16 kB, the same rows (`tests/bench/bench_writes.py`). The block size is the file's for good (an existing store
    keeps its 256 kB); DuckDB reads it from the file's header on every open. (It was set by a first open of its
    own, an in-memory database that ATTACHed the file: a second DuckDB instance, ~12 ms, per new store.)"""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise os_fault("create the state dir", path.parent, exc) from exc
    con = _open(path, False, wait_seconds, defer_checkpoint=defer_checkpoint)
    try:
        migrate(con)
        os.chmod(path, 0o600)
    except BaseException:
        con.close()
        raise
    _mark_migrated(path)
    return con


def _ensure_migrated(path: Path, wait_seconds: float) -> None:
    con = _open(path, True, wait_seconds)
    try:
        needed = _needs_migration(con)
    finally:
        con.close()
    if needed:
        con = _open(path, False, wait_seconds)
        try:
            migrate(con)
        finally:
            con.close()
    _mark_migrated(path)


@contextmanager
def connect(path: Path, *, read_only: bool = False, wait_seconds: float = 5.0,
            defer_checkpoint: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    """A migrated connection, closed on exit; a read-only open migrates first through a brief write open. Each
    database file is checked for pending migrations once per process. (`defer_checkpoint`: see `Store`.)

    Every command reaches the database through here, so each one reports a full disk, a read-only state dir or a
    damaged file the same way: one line naming the file and what to do."""
    with private_files():
        try:
            con = None
            if not path.exists():
                con = _create(path, wait_seconds, defer_checkpoint)
                if read_only:
                    con.close()
                    con = None
            elif read_only:
                if _identity(path) not in _MIGRATED:
                    _ensure_migrated(path, wait_seconds)
            else:
                _tighten(path)
            if con is None:
                con = _open(path, read_only, wait_seconds, defer_checkpoint=defer_checkpoint)
            try:
                if not read_only and _identity(path) not in _MIGRATED:
                    migrate(con)
                    _mark_migrated(path)
                yield con
            finally:
                con.close()
        except duckdb.Error as exc:
            fault = db_fault(path, str(exc))
            if fault is None:
                raise
            raise fault from exc


@contextmanager
def open_existing(path: Path, *, wait_seconds: float = 5.0) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection to an existing database as it is: not created, not migrated (for diagnosis)."""
    con = _open(path, True, wait_seconds)
    try:
        yield con
    finally:
        con.close()


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """BEGIN … COMMIT, with an explicit ROLLBACK on error (DuckDB's commit silently rolls back aborted work)."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield
    except BaseException:
        try:
            con.execute("ROLLBACK")
        except duckdb.Error:
            pass  # a connection a fatal error invalidated cannot roll back; the first error says what happened
        raise
    con.execute("COMMIT")


def connect_for(settings: Settings, *, read_only: bool = False) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
    """connect() to the settings' database (its db_path and db_wait_seconds)."""
    return connect(settings.db_path, read_only=read_only, wait_seconds=settings.db_wait_seconds)


class Store:
    """The database as one run uses it: opened (created and migrated on first use) by `connect`, held open across
    a span of quick steps, and checkpointed once, when the run closes it.

    Held (`hold`, `open`): DuckDB shares one open database among a process's connections to it, so each `connect`
    inside costs ~0.2 ms instead of opening the file again (a new DuckDB instance: 11-15 ms here). A run holds it
    from its start (`pipeline/run.py`) and lets it go (`let_go`) only before a model call or an upload, before
    worker processes are forked (they must not inherit DuckDB's threads), and before a scan long enough to spread
    over them; each chunk's commit, with the checkpoint after the last one, holds it again. So an offline run opens
    the file once, and a run that calls a model once more per chunk it sends: on the bundled sample, a first
    offline run 2 opens -> 1 (136 -> 122 ms CPU in-process), an hourly run with one new message for the Anthropic
    extractor (a fake API) 4 -> 2 (117 -> 86 ms); medians of 20, paired. Connections inside are opened for
    writing, read-only ones included (one open database has one mode; the run holds the run lock). Other
    processes wait for a held store as for any connection: it is held only across quick steps, never across a
    model call.

    Checkpointed once (`defer_checkpoints`): DuckDB checkpoints a database when its last connection closes,
    writing every table a commit touched again (the ledger of messages read grows by each commit, and is rewritten
    whole each time). A run that opens the store once per chunk wrote its ledger many times over: 83 MB for a
    16 MB corpus of conversations. Deferred, each commit only appends to the WAL (DuckDB still checkpoints
    it when it grows past 32 MB), and `close` checkpoints what is left once: 38 MB then, 18 MB now with the
    narrower ledger (m023), the later threshold below and smaller blocks (`_create`; `tests/bench/bench_writes.py`).
    A run killed before `close` leaves the WAL, which the next open replays (as after any crash).

    At 32 MB of WAL, not DuckDB's 16 (`RUN_CHECKPOINT_THRESHOLD`): a checkpoint rewrites every row group a commit
    touched since the last one, and a first run's tables are each one partly filled row group (under 122,880
    rows), so each checkpoint before the last rewrites them whole. DuckDB checkpoints on commit when the WAL plus
    its estimate of the commit passes the threshold: at 16 MB the persona corpus's first run (12.8 MB of WAL) was
    checkpointed once more before its end and wrote its database 1.6× (15.7 MB, 9.7 MB at 32: 1.80× the corpus
    → 1.51×). What it costs: committed rows wait uncompressed in memory for longer, and a crash leaves a longer
    WAL to replay. The peak RSS of a first run over one 144,000-message session (39 MB) was 194.9 MB at 16 MB
    and 196.6 at 32 before the ledger narrowed (m023), 191.0 and 191.6 at 32 after; at 64 MB the 72,000-message
    session rose from 178 to 188 MB (`tests/bench/bench_one_session.py`, one run each on a shared host; the target
    is 200), so 32 it is."""

    def __init__(self, path: Path, wait_seconds: float = 5.0, *, defer_checkpoints: bool = False) -> None:
        self.path = path
        self.wait_seconds = wait_seconds
        self.defer_checkpoints = defer_checkpoints
        self._held: AbstractContextManager[duckdb.DuckDBPyConnection] | None = None
        self._opened = False  # whether it was ever opened: a store that never was has nothing to checkpoint

    @classmethod
    def of(cls, settings: Settings, *, defer_checkpoints: bool = False) -> Store:
        """The store of the settings' database (its db_path and db_wait_seconds)."""
        return cls(settings.db_path, settings.db_wait_seconds, defer_checkpoints=defer_checkpoints)

    @contextmanager
    def connect(self, *, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection (see `connect`), for writing while the store is held."""
        with connect(self.path, read_only=read_only and self._held is None, wait_seconds=self.wait_seconds,
                     defer_checkpoint=self.defer_checkpoints) as con:
            self._opened = True
            yield con

    @property
    def held(self) -> bool:
        return self._held is not None

    def open(self) -> None:
        """Hold the store open from now until `let_go` (created and migrated now if it does not exist)."""
        if self._held is None:
            span = self.connect()
            span.__enter__()
            self._held = span

    def let_go(self) -> None:
        """No longer held (a no-op when it is not)."""
        span, self._held = self._held, None
        if span is not None:
            span.__exit__(None, None, None)

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Held across the span: opened at its start unless already held, let go at its end if it opened it."""
        if self._held is not None:
            yield
            return
        self.open()
        try:
            yield
        finally:
            self.let_go()

    def checkpoint(self) -> None:
        """Fold what the deferred closes left in the WAL into the database now: through the held store when it is
        held (a run's last chunk), so it costs no open of its own."""
        if self.defer_checkpoints:
            with self.connect() as con:
                con.execute("CHECKPOINT")

    def close(self) -> None:
        """Checkpoint what is still in the WAL, through the held store when it is held (nothing to do when the WAL
        is empty, or when the store was never opened: it may be busy, and the run already said so), and let go."""
        try:
            wal = self.path.with_name(self.path.name + ".wal")
            if self.defer_checkpoints and self._opened and wal.exists() and wal.stat().st_size > 0:
                self.checkpoint()
        finally:
            self.let_go()
