"""Migrations, file mode and transactions of the DB layer, on real DuckDB files."""

from __future__ import annotations

import subprocess
import sys

import duckdb
import pytest

from distiller.records import Cursor, Message
from distiller.store import messages, migrations, schema
from distiller.store.cursors import CursorConflict
from distiller.store.db import BLOCK_SIZE, MEMORY_LIMIT, Store, connect, transaction
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


def test_a_held_store_is_opened_once_for_every_connection_in_the_span_and_closed_after(tmp_path):
    path = tmp_path / "distill.duckdb"
    with connect(path) as con:
        con.execute("CREATE TABLE t (x INTEGER)")
    store = Store(path)
    with store.hold():
        # a span inside a held one: let go only by the outer span
        with store.hold(), store.connect() as con, transaction(con):
            con.execute("INSERT INTO t VALUES (1)")
        assert store.held
        with store.connect(read_only=True) as con:  # served by the open database, in its one mode
            assert con.execute("SELECT x FROM t").fetchall() == [(1,)]
        with pytest.raises(duckdb.ConnectionException, match="different configuration"):
            duckdb.connect(str(path), read_only=True, config={"memory_limit": MEMORY_LIMIT})  # it is open
    assert not store.held
    with duckdb.connect(str(path), read_only=True) as con:  # closed after the span: any mode opens it again
        assert con.execute("SELECT x FROM t").fetchall() == [(1,)]


def test_a_store_opened_is_created_migrated_and_private_and_let_go_at_once(tmp_path):
    path = tmp_path / "state" / "distill.duckdb"
    store = Store(path)
    store.open()
    with store.hold(), store.connect(read_only=True) as con:
        assert con.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] == len(migrations.pending(set()))
    assert store.held  # the inner span did not open it: it does not let go of it
    store.let_go()
    store.let_go()  # twice is once
    with duckdb.connect(str(path), read_only=True):
        pass
    assert path.stat().st_mode & 0o777 == 0o600


def _wal(path):
    wal = path.with_name(path.name + ".wal")
    return wal.stat().st_size if wal.exists() else 0


def test_a_store_deferring_checkpoints_leaves_commits_in_the_wal_until_it_closes(tmp_path):
    """Closing a connection checkpoints by default (every table a commit touched written again); a run's store
    appends to the WAL only, and checkpoints once when it closes; what it wrote is there all along, for another
    process too."""
    path = tmp_path / "distill.duckdb"
    with connect(path) as con:
        con.execute("CREATE TABLE t (x INTEGER)")
    with connect(path) as con:
        con.execute("INSERT INTO t VALUES (0)")
    assert _wal(path) == 0  # checkpointed on close
    store = Store(path, defer_checkpoints=True)
    for x in (1, 2):
        with store.connect() as con, transaction(con):
            con.execute("INSERT INTO t VALUES (?)", [x])
        assert _wal(path) > 0
        reader = subprocess.run([sys.executable, "-c", ("import duckdb, sys; print(duckdb.connect(sys.argv[1], "
                                 "read_only=True).execute('SELECT count(*) FROM t').fetchone()[0])"), str(path)],
                                capture_output=True, text=True, check=True)
        assert reader.stdout.strip() == str(x + 1)
    store.close()
    assert _wal(path) == 0
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT x FROM t ORDER BY x").fetchall() == [(0,), (1,), (2,)]


def test_a_runs_store_lets_the_wal_pass_duckdbs_16_mb_before_checkpointing(tmp_path):
    """Each checkpoint before a run's last rewrites its partly filled row groups whole: a run's store leaves
    ~20 MB of commits in the WAL (DuckDB alone would have checkpointed past 16 MB) and checkpoints at its close."""
    path = tmp_path / "distill.duckdb"
    store = Store(path, defer_checkpoints=True)
    with store.connect() as con:
        con.execute("CREATE TABLE t (x VARCHAR)")
    for step in range(5):
        with store.connect() as con, transaction(con):
            con.execute("INSERT INTO t SELECT repeat(?, 1000) || i FROM range(4000) r(i)", [str(step)])
    assert 20e6 < _wal(path) < 32e6
    store.close()
    assert _wal(path) == 0
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM t").fetchone() == (20_000,)


def test_a_new_store_has_small_blocks_and_an_old_one_keeps_its_own(tmp_path):
    """16 kB blocks: a checkpoint fills whole blocks, and the store's tables are many and small (persona's first
    run left 5.6 MB instead of 9.7)."""
    new, old = tmp_path / "new.duckdb", tmp_path / "old.duckdb"
    duckdb.connect(str(old)).close()  # DuckDB's default blocks, as every store before this had
    for path in (new, old):
        with connect(path) as con:
            messages.record(con, [_message("1", "/a")], ["keep"], [None], ["f"], "r1")
    for path, size in ((new, BLOCK_SIZE), (old, 262_144)):
        with duckdb.connect(str(path), read_only=True) as con:
            assert con.execute("SELECT block_size FROM pragma_database_size()").fetchone() == (size,)
            assert con.execute("SELECT message_id FROM ingested").fetchall() == [("1",)]
    assert new.stat().st_mode & 0o077 == 0


def test_no_progress_bar_ever_reaches_stdout(tmp_path):
    """DuckDB draws a progress bar on stdout during a query over ~2 s (a large first run's): it would corrupt the
    one JSON document `--json` prints."""
    with connect(tmp_path / "d.duckdb") as con:
        assert con.execute("SELECT current_setting('enable_progress_bar')").fetchone()[0] is False


def _at_version(path, last: str) -> None:
    """A database created by the migrations up to and including `last`, recorded as such."""
    with duckdb.connect(str(path)) as raw:
        raw.execute("CREATE TABLE schema_migrations (name VARCHAR PRIMARY KEY, applied_at TIMESTAMPTZ)")
        for name, fn in migrations.MIGRATIONS:
            fn(raw)
            raw.execute("INSERT INTO schema_migrations VALUES (?, now())", [name])
            if name == last:
                return
    raise AssertionError(f"no migration {last}")


def test_a_populated_ledger_loses_its_path_column_and_keeps_every_path_read(tmp_path):
    path = tmp_path / "d.duckdb"
    _at_version(path, "m021_belief_terms")
    with duckdb.connect(str(path)) as raw:
        # file f1 read under two names (renamed between runs), f2 under one; 3 rows of f1 under its first name
        raw.execute("""
            INSERT INTO ingested SELECT 's1', 'm' || i, 'main', 'f1', '/t/a.jsonl', i, i + 1, 'user', NULL, false,
                                        'r1', 'kept', NULL FROM range(3) t(i)""")
        raw.execute("INSERT INTO ingested VALUES ('s1', 'm9', 'main', 'f1', '/t/a.jsonl.1', 9, 10, 'assistant',"
                    " '2026-03-01T10:00:00Z', true, 'r2', 'dropped', 'tool')")
        raw.execute("INSERT INTO ingested VALUES ('s2', 'x', 'ops', 'f2', '/t/b.jsonl', 0, 5, 'user', NULL, false,"
                    " 'r2', NULL, NULL)")
        before = raw.execute("SELECT * EXCLUDE (path) FROM ingested ORDER BY session_id, message_id").fetchall()
    with connect(path) as con:
        assert "path" not in [r[0] for r in con.execute("DESCRIBE ingested").fetchall()]
        assert con.execute("SELECT * FROM ingested ORDER BY session_id, message_id").fetchall() == before
        assert con.execute("SELECT file_id, path FROM ingested_paths ORDER BY 1, 2").fetchall() == [
            ("f1", "/t/a.jsonl"), ("f1", "/t/a.jsonl.1"), ("f2", "/t/b.jsonl")]
        assert con.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] == len(migrations.MIGRATIONS)


def _message(message_id: str, file: str) -> Message:
    return Message("openclaw", "main", "s", message_id, None, None, "user", "hi", file, 0, 3)


def test_the_ledger_records_each_path_once_and_only_for_messages_it_adds(tmp_path):
    with connect(tmp_path / "d.duckdb") as con:
        messages.record(con, [_message("1", "/a"), _message("2", "/a")], ["kept"] * 2, [None] * 2, ["f"] * 2, "r1")
        # the same file renamed: a message already read adds no path, a new one adds its path once
        messages.record(con, [_message("1", "/b")], ["kept"], [None], ["f"], "r2")
        assert con.execute("SELECT path FROM ingested_paths").fetchall() == [("/a",)]
        messages.record(con, [_message("3", "/b"), _message("4", "/b")], ["kept"] * 2, [None] * 2, ["f"] * 2, "r3")
        assert con.execute("SELECT file_id, path FROM ingested_paths ORDER BY 2").fetchall() == [("f", "/a"),
                                                                                                 ("f", "/b")]
        assert con.execute("SELECT message_id, run_id FROM ingested ORDER BY 1").fetchall() == [
            ("1", "r1"), ("2", "r1"), ("3", "r3"), ("4", "r3")]


def test_a_populated_ledger_narrows_to_numbered_reads_and_verdicts_and_reads_back_the_same(tmp_path):
    path = tmp_path / "d.duckdb"
    _at_version(path, "m022_ingested_paths_apart")
    with duckdb.connect(str(path)) as raw:
        # two runs over file f1 (session s1), one of them also over f2 (session s2, agent ops); NULL stamps, verdicts
        raw.execute("""
            INSERT INTO ingested SELECT 's1', 'm' || i, 'main', 'f1', i, i + 1, 'user', NULL, false, 'r1', 'keep',
                                        NULL FROM range(3) t(i)""")
        raw.execute("INSERT INTO ingested VALUES ('s1', 'm9', 'main', 'f1', 9, 10, 'assistant',"
                    " '2026-03-01T10:00:00+02:00', true, 'r2', 'drop', 'ack-filler')")
        raw.execute("INSERT INTO ingested VALUES ('s2', 'x', 'ops', 'f2', 0, 5, 'user', NULL, false, 'r2', NULL, NULL)")
        before = raw.execute("SELECT * FROM ingested ORDER BY session_id, message_id").fetchall()
    with connect(path) as con:
        assert con.execute("SELECT * FROM ingested ORDER BY session_id, message_id").fetchall() == before
        assert con.execute("SELECT read_no, run_id, file_id, session_id, agent FROM ledger_reads ORDER BY 1"
                           ).fetchall() == [(1, "r1", "f1", "s1", "main"), (2, "r2", "f1", "s1", "main"),
                                            (3, "r2", "f2", "s2", "ops")]
        # one verdict per (role, inter-session, decision, reason), NULLs (a row older than m002) included
        assert con.execute("SELECT role, inter_session, decision, reason FROM ledger_verdicts ORDER BY verdict_no"
                           ).fetchall() == [("assistant", True, "drop", "ack-filler"), ("user", False, "keep", None),
                                            ("user", False, None, None)]
        assert messages.count(con) == 5
        assert con.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] == len(migrations.MIGRATIONS)
        # and the migrated ledger goes on: a message already read is not added again, a new one is numbered on
        messages.record(con, [_message("m1", "/a"), _message("n", "/a")], ["keep"] * 2, [None] * 2, ["f1"] * 2,
                        "r3")
        assert con.execute("SELECT message_id, run_id FROM ingested WHERE session_id = 's' ORDER BY 1"
                           ).fetchall() == [("m1", "r3"), ("n", "r3")]
        assert con.execute("SELECT max(read_no) FROM ledger_reads").fetchone() == (4,)
        assert con.execute("SELECT count(*) FROM ledger_verdicts").fetchone() == (3,)  # ('user', false, 'keep', NULL)


def test_a_run_numbers_each_file_it_reads_once_however_many_batches_it_commits(tmp_path):
    with connect(tmp_path / "d.duckdb") as con:
        for batch in range(3):
            messages.record(con, [_message(f"{batch}-{i}", "/a") for i in range(4)], ["keep"] * 4, [None] * 4,
                            ["f"] * 4, "r1")
        messages.record(con, [_message("9", "/a")], ["keep"], [None], ["f"], "r2")
        assert con.execute("SELECT read_no, run_id FROM ledger_reads ORDER BY 1").fetchall() == [(1, "r1"), (2, "r2")]
        assert con.execute("SELECT count(*), count(DISTINCT message_id) FROM ingested").fetchone() == (13, 13)
        assert con.execute("SELECT count(*) FROM ledger").fetchone() == (13,)
        # a verdict is numbered once, whichever run or batch first wrote it; NULL decisions and reasons match too
        messages.record(con, [_message("10", "/a"), _message("11", "/a")], ["drop", None], ["ack-filler", None],
                        ["f"] * 2, "r2")
        assert con.execute("SELECT verdict_no, decision, reason FROM ledger_verdicts ORDER BY 1").fetchall() == [
            (1, "keep", None), (2, "drop", "ack-filler"), (3, None, None)]
        messages.record(con, [_message("12", "/a")], [None], [None], ["f"], "r3")
        assert con.execute("SELECT count(*) FROM ledger_verdicts").fetchone() == (3,)
        assert con.execute("SELECT message_id, decision, reason FROM ingested WHERE message_id IN ('9', '10', '11', "
                           "'12') ORDER BY 1").fetchall() == [("10", "drop", "ack-filler"), ("11", None, None),
                                                              ("12", None, None), ("9", "keep", None)]
