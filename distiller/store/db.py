"""Short-lived DuckDB connections: created 0600, migrated on open, retried while another process holds the file."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from pathlib import Path

import duckdb

from distiller.errors import DistillError, Unavailable, db_fault, os_fault
from distiller.store.migrations import pending

_HOLDER = re.compile(r"Conflicting lock is held in (.+?) \(PID (\d+)\)")
MEMORY_LIMIT = "128MB"  # with the run's own buffers, keeps a first run over any corpus under 200 MB RSS


def _is_lock_error(exc: duckdb.Error) -> bool:
    return "Could not set lock" in str(exc) or "Conflicting lock" in str(exc)


def _holder(exc: duckdb.Error) -> str:
    match = _HOLDER.search(str(exc))
    if not match:
        return "another process"
    program, pid = match.groups()
    return f"{Path(program).name} (PID {pid})"


def _open(path: Path, read_only: bool, wait_seconds: float) -> duckdb.DuckDBPyConnection:
    deadline = time.monotonic() + wait_seconds
    delay = 0.05
    while True:
        try:
            con = duckdb.connect(str(path), read_only=read_only, config={"memory_limit": MEMORY_LIMIT})
            # A UTC session: every timestamp read back is RFC 3339 with a `Z`, whatever the host's zone.
            con.execute("SET TimeZone = 'UTC'")
            # No progress bar: DuckDB draws one on stdout during a long query, which would corrupt `--json`.
            con.execute("SET enable_progress_bar = false")
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


def _create(path: Path, wait_seconds: float) -> duckdb.DuckDBPyConnection:
    """The new database, migrated, and its connection still open for writing (opening one costs ~11 ms)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise os_fault("create the state dir", path.parent, exc) from exc
    con = _open(path, False, wait_seconds)
    try:
        migrate(con)
        os.chmod(path, 0o600)
    except BaseException:
        con.close()
        raise
    _MIGRATED.add(_identity(path))
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
    _MIGRATED.add(_identity(path))


# The database files this context holds open (see `held`).
_HELD: ContextVar[frozenset[Path]] = ContextVar("held_databases", default=frozenset())


@contextmanager
def held(path: Path, *, wait_seconds: float = 5.0) -> Iterator[None]:
    """Keep the database open across a span of quick steps: DuckDB shares one open database among a process's
    connections to it, so each `connect` inside the span costs microseconds instead of opening the file again
    (~11 ms). Connections inside are opened for writing, read-only ones included (one open database has one
    mode). Other processes wait for the span as for any connection: keep it short, never across model calls."""
    with connect(path, wait_seconds=wait_seconds):
        token = _HELD.set(_HELD.get() | {path})
        try:
            yield
        finally:
            _HELD.reset(token)


class _Ahead:
    """A new database created, migrated and given its first write on a thread of its own (see `held_ahead`)."""

    def __init__(self, path: Path, wait_seconds: float, first: Callable[[duckdb.DuckDBPyConnection], None]) -> None:
        self.path = path
        self.con: duckdb.DuckDBPyConnection | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._create, args=(wait_seconds, first), name="distill-store-ahead",
                                       daemon=True)
        self.thread.start()

    def _create(self, wait_seconds: float, first: Callable[[duckdb.DuckDBPyConnection], None]) -> None:
        try:
            with private_files():  # the process's umask: nothing else in it creates files meanwhile (see held_ahead)
                self.con = _create(self.path, wait_seconds)
                first(self.con)
        except BaseException as exc:
            self.error = self._fault(exc)

    def wait(self) -> None:
        """Done once this returns; what failed is raised here, once."""
        self.thread.join()
        error, self.error = self.error, None
        if error is not None:
            raise error

    def close(self) -> None:
        self.thread.join()
        con, self.con = self.con, None
        if con is not None:
            try:
                con.close()
            except duckdb.Error as exc:
                raise self._fault(exc)

    def _fault(self, exc: BaseException) -> BaseException:
        """A DuckDB error as the one-line fault `connect` would report (db_fault), anything else as it is."""
        return (db_fault(self.path, str(exc)) if isinstance(exc, duckdb.Error) else None) or exc


# The databases being created ahead (see `held_ahead`): a connection to one waits for it first.
_AHEAD: dict[Path, _Ahead] = {}


@contextmanager
def held_ahead(path: Path, first: Callable[[duckdb.DuckDBPyConnection], None], *,
               wait_seconds: float = 5.0) -> Iterator[None]:
    """`held` for a database that does not exist yet, created, migrated and given `first(con)` on a thread while
    the caller goes on: DuckDB does that work outside the GIL, and opening a database alone costs ~15 ms. Every
    `connect` to it inside the span waits for that thread first. Only for a span in which nothing else connects
    to the database or creates files, but through `connect` (the thread sets the process's umask)."""
    ahead = _AHEAD[path] = _Ahead(path, wait_seconds, first)
    token = _HELD.set(_HELD.get() | {path})
    try:
        yield
    finally:
        _HELD.reset(token)
        del _AHEAD[path]
        ahead.close()
    ahead.wait()  # what failed on the thread, if nothing connected to raise it


@contextmanager
def connect(path: Path, *, read_only: bool = False, wait_seconds: float = 5.0) -> Iterator[duckdb.DuckDBPyConnection]:
    """A migrated connection, closed on exit; a read-only open migrates first through a brief write open. Each
    database file is checked for pending migrations once per process.

    Every command reaches the database through here, so each one reports a full disk, a read-only state dir or a
    damaged file the same way: one line naming the file and what to do."""
    ahead = _AHEAD.get(path)
    if ahead is not None:
        ahead.wait()
    read_only = read_only and path not in _HELD.get()
    with private_files():
        try:
            con = None
            if not path.exists():
                con = _create(path, wait_seconds)
                if read_only:
                    con.close()
                    con = None
            elif read_only:
                if _identity(path) not in _MIGRATED:
                    _ensure_migrated(path, wait_seconds)
            else:
                _tighten(path)
            if con is None:
                con = _open(path, read_only, wait_seconds)
            try:
                if not read_only and _identity(path) not in _MIGRATED:
                    migrate(con)
                    _MIGRATED.add(_identity(path))
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


def connect_for(settings, *, read_only: bool = False) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
    """connect() to the settings' database (a `config.Settings`: its db_path and db_wait_seconds)."""
    return connect(settings.db_path, read_only=read_only, wait_seconds=settings.db_wait_seconds)


def held_for(settings) -> AbstractContextManager[None]:
    """held() for the settings' database."""
    return held(settings.db_path, wait_seconds=settings.db_wait_seconds)


class Holding:
    """A `held` span that may be let go before it ends (`release`, at most once): a quick run holds the store from
    its start through its first chunk, and lets go early where that span would grow long or where worker
    processes are forked (they must not inherit DuckDB's threads). Let go outside any other held span."""

    def __init__(self, settings, *, active: bool = True,
                 ahead: Callable[[duckdb.DuckDBPyConnection], None] | None = None) -> None:
        """With `ahead`, the database does not exist yet: it is created on a thread (`held_ahead`) that runs
        `ahead(con)` first."""
        self._span: AbstractContextManager[None] | None = None
        if active:
            self._span = (held_for(settings) if ahead is None else
                          held_ahead(settings.db_path, ahead, wait_seconds=settings.db_wait_seconds))

    def __enter__(self) -> Holding:
        if self._span is not None:
            self._span.__enter__()
        return self

    def release(self) -> None:
        span, self._span = self._span, None
        if span is not None:
            span.__exit__(None, None, None)

    def __exit__(self, *exc: object) -> None:
        span, self._span = self._span, None
        if span is not None:
            span.__exit__(*exc)
