"""Migrations, file mode and transactions of the DB layer, on real DuckDB files."""

from __future__ import annotations

import threading

import duckdb
import pytest

from distiller.errors import DistillError
from distiller.records import Cursor
from distiller.store import migrations, schema
from distiller.store.cursors import CursorConflict
from distiller.store.db import MEMORY_LIMIT, connect, held, held_ahead, transaction
from distiller.track import load_cursors, save_cursors


def test_migrations_apply_in_order_once_and_are_recorded(tmp_path):
    path = tmp_path / "d.duckdb"
    with connect(path) as con:
        names = [r[0] for r in con.execute("SELECT name FROM schema_migrations ORDER BY applied_at, name").fetchall()]
    assert names == [name for name, _ in migrations.MIGRATIONS]
    with connect(path) as con:
        assert con.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] == len(migrations.MIGRATIONS)
    assert path.stat().st_mode & 0o777 == 0o600


def test_read_only_open_of_an_old_database_migrates_it_first(tmp_path):
    path = tmp_path / "d.duckdb"
    with duckdb.connect(str(path)) as raw:
        raw.execute("CREATE TABLE schema_migrations (name VARCHAR PRIMARY KEY, applied_at TIMESTAMPTZ)")
    with connect(path, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM files").fetchone()[0] == 0


def _cursor(offset: int) -> Cursor:
    return Cursor("fp", "/a.jsonl", "main", "s", 1, 2, 100, 5, offset, "digest")


def test_cursor_compare_and_set(tmp_path):
    with connect(tmp_path / "d.duckdb") as con:
        save_cursors(con, [(_cursor(10), None)])
        save_cursors(con, [(_cursor(20), 10)])
        with pytest.raises(CursorConflict):
            save_cursors(con, [(_cursor(30), 10)])
        assert [c.offset for c in load_cursors(con)] == [20]


def test_transaction_rolls_back_everything_on_error(tmp_path):
    with connect(tmp_path / "d.duckdb") as con:
        with pytest.raises(CursorConflict), transaction(con):
            save_cursors(con, [(_cursor(10), None)])
            save_cursors(con, [(_cursor(30), 999)])
        assert load_cursors(con) == []


def test_a_database_from_the_first_version_is_migrated_in_place(tmp_path):
    path = tmp_path / "d.duckdb"
    with duckdb.connect(str(path)) as raw:
        raw.execute("CREATE TABLE schema_migrations (name VARCHAR PRIMARY KEY, applied_at TIMESTAMPTZ)")
        name, first = migrations.MIGRATIONS[0]
        first(raw)
        raw.execute("INSERT INTO schema_migrations VALUES (?, now())", [name])
        raw.execute("INSERT INTO ingested VALUES ('s', 'm', 'a', 'f', '/p', 0, 1, 'user', NULL, false, 'r')")
    with connect(path) as con:
        assert con.execute("SELECT message_id, decision FROM ingested").fetchall() == [("m", None)]
        assert con.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] == len(migrations.MIGRATIONS)


def test_the_schema_description_is_where_the_migrations_end(tmp_path):
    with connect(tmp_path / "d.duckdb") as con:
        for table, columns in schema.COLUMNS.items():
            migrated = con.execute("SELECT column_name, data_type FROM information_schema.columns "
                                   "WHERE table_name = ? ORDER BY ordinal_position", [table]).fetchall()
            described = [(name, con.execute(f"SELECT typeof(NULL::{kind})").fetchone()[0])
                         for name, kind in columns.items()]
            assert described == migrated
    shared = schema.COLUMNS["beliefs"].keys() & schema.COLUMNS["evidence"].keys()
    assert all(schema.COLUMNS["beliefs"][n] == schema.COLUMNS["evidence"][n] for n in shared)


def test_a_held_database_is_opened_once_for_every_connection_in_the_span_and_closed_after(tmp_path):
    path = tmp_path / "distill.duckdb"
    with connect(path) as con:
        con.execute("CREATE TABLE t (x INTEGER)")
    with held(path):
        with connect(path) as con, transaction(con):
            con.execute("INSERT INTO t VALUES (1)")
        with connect(path, read_only=True) as con:  # served by the open database, in its one mode
            assert con.execute("SELECT x FROM t").fetchall() == [(1,)]
        with pytest.raises(duckdb.ConnectionException, match="different configuration"):
            duckdb.connect(str(path), read_only=True, config={"memory_limit": MEMORY_LIMIT})  # it is open
    with duckdb.connect(str(path), read_only=True) as con:  # closed after the span: any mode opens it again
        assert con.execute("SELECT x FROM t").fetchall() == [(1,)]


def test_a_database_held_ahead_is_created_on_a_thread_that_every_connection_waits_for(tmp_path):
    path = tmp_path / "state" / "distill.duckdb"
    started = threading.Event()

    def first(con):
        started.wait(5)  # the caller gets on before the database is there
        con.execute("CREATE TABLE t (x INTEGER)")
        con.execute("INSERT INTO t VALUES (1)")

    with held_ahead(path, first):
        started.set()
        with connect(path, read_only=True) as con:  # waits for the thread, then served by the open database
            assert con.execute("SELECT x FROM t").fetchall() == [(1,)]
            assert con.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] == len(migrations.pending(set()))
        with pytest.raises(duckdb.ConnectionException, match="different configuration"):
            duckdb.connect(str(path), read_only=True, config={"memory_limit": MEMORY_LIMIT})  # held open
    assert not [t for t in threading.enumerate() if t.name == "distill-store-ahead"]
    with duckdb.connect(str(path), read_only=True) as con:  # closed after the span
        assert con.execute("SELECT x FROM t").fetchall() == [(1,)]
    assert path.stat().st_mode & 0o777 == 0o600


def test_what_fails_on_the_thread_of_a_database_held_ahead_is_raised_where_it_is_next_needed(tmp_path):
    state = tmp_path / "state"
    state.write_text("a file where the state dir should be")
    with (pytest.raises(DistillError, match="state dir"), held_ahead(state / "distill.duckdb", lambda con: None),
          connect(state / "distill.duckdb")):
        pass

    def first(con):
        raise duckdb.IOException("IO Error: No space left on device")

    with pytest.raises(DistillError, match="No space left on device"), held_ahead(tmp_path / "full.duckdb", first):
        pass  # nothing connected inside: the span's end raises it


def test_no_progress_bar_ever_reaches_stdout(tmp_path):
    """DuckDB draws a progress bar on stdout during a query over ~2 s (a large first run's): it would corrupt the
    one JSON document `--json` prints."""
    with connect(tmp_path / "d.duckdb") as con:
        assert con.execute("SELECT current_setting('enable_progress_bar')").fetchone()[0] is False
