"""Recall's terms: the stemmer and stop words (distiller/terms.py), and the term table the store keeps in the same
transaction as the beliefs (store/terms.py), proven equal to a rebuild from scratch."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from distiller.records import Belief, EvidenceItem
from distiller.store import terms as term_table
from distiller.store import writes as store
from distiller.store.db import connect, migrate, transaction
from distiller.store.forget import forget_beliefs, forget_source
from distiller.terms import STOP_WORDS, stem, terms, words

NOW = datetime(2026, 3, 10, tzinfo=UTC)


@pytest.mark.parametrize("word, expected", [
    ("caresses", "caress"), ("ponies", "poni"), ("cats", "cat"), ("agreed", "agre"), ("plastered", "plaster"),
    ("motoring", "motor"), ("hopping", "hop"), ("filing", "file"), ("happy", "happi"), ("relational", "relat"),
    ("hopefulness", "hope"), ("adjustment", "adjust"), ("controlling", "control"), ("generalization", "gener"),
    ("lives", "live"), ("living", "live"), ("hiking", "hike"), ("running", "run"),
])
def test_stems_follow_porters_published_examples(word, expected):
    assert stem(word) == expected


def test_terms_leave_out_stop_words_and_count_stems():
    assert terms("The user lives in Lisbon and loves living there") == {"live": 2, "lisbon": 1, "love": 1}
    assert terms("what do I like?") == {"like": 1}
    assert not terms("the and of it")
    assert words("I don't like Neovim's plugins") == ["i", "dont", "like", "neovims", "plugins"]
    assert "user" in STOP_WORDS


def _belief(statement: str, session: str, message: str, quote: str, day: int) -> Belief:
    evidence = EvidenceItem(message, session, "main", f"/agents/main/sessions/{session}.jsonl", 0, 10,
                            f"2026-03-{day:02d}T10:00:00Z", quote)
    return Belief(statement, "preference", "user", "", 0.9, "explicit", 5, "medium", None, "agent:main",
                  (evidence,), "rules", None, "p1")


def _table(con: duckdb.DuckDBPyConnection) -> tuple[list[tuple], list[tuple]]:
    return (sorted(con.execute("SELECT * FROM belief_terms").fetchall()),
            sorted(con.execute("SELECT * FROM belief_lengths").fetchall()))


STATEMENTS = ["The user likes hiking in the mountains", "The user likes hiking in the mountains near Lisbon",
              "The user lives in Lisbon", "The user prefers tabs over spaces", "The user prefers tabs"]
step = st.one_of(
    st.tuples(st.just("upsert"), st.lists(st.tuples(st.sampled_from(STATEMENTS), st.sampled_from("abc"),
                                                    st.sampled_from("xyz"), st.sampled_from(["hiking up", "Lisbon!",
                                                                                             "tabs please"]),
                                                    st.integers(1, 9)), min_size=1, max_size=4)),
    st.tuples(st.just("forget_source"), st.sampled_from("abc")),
    st.tuples(st.just("forget_belief"), st.integers(0, 5)),
)


@pytest.mark.slow  # a property over many generated stores: CI runs it with the slow tests
@hypothesis_settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(step, min_size=1, max_size=6))
def test_the_term_table_kept_by_each_write_equals_a_rebuild(tmp_path, steps):
    path = tmp_path / f"{abs(hash(str(steps)))}.duckdb"
    with connect(path) as con:
        for kind, arg in steps:
            with transaction(con):
                if kind == "upsert":
                    store.upsert(con, [_belief(*spec) for spec in arg], "r1", now=NOW)
                elif kind == "forget_source":
                    forget_source(con, arg, store.StoreSettings(), NOW)
                else:
                    ids = [r[0] for r in con.execute("SELECT belief_id FROM beliefs ORDER BY 1").fetchall()]
                    if ids:
                        forget_beliefs(con, [ids[arg % len(ids)]], "forget-id", NOW)
        kept = _table(con)
        with transaction(con):
            term_table.rebuild(con)
        assert kept == _table(con)
        # and nothing indexed belongs to a belief that is gone
        for table in ("belief_terms", "belief_lengths"):
            assert not con.execute(f"SELECT 1 FROM {table} ANTI JOIN beliefs USING (belief_id)").fetchall()


def test_the_migration_backfills_the_terms_of_an_existing_database(tmp_path):
    """A database from before the term table: its beliefs get their terms when it is migrated."""
    path = tmp_path / "old.duckdb"
    with connect(path) as con, transaction(con):
        store.upsert(con, [_belief(STATEMENTS[2], "a", "x", "Lisbon!", 3)], "r1", now=NOW)
    con = duckdb.connect(str(path))
    con.execute("DROP TABLE belief_terms")
    con.execute("DROP TABLE belief_lengths")
    con.execute("DELETE FROM schema_migrations WHERE name = 'm021_belief_terms'")
    assert migrate(con) == ["m021_belief_terms"]
    assert sorted(con.execute("SELECT session_id, term, tf FROM belief_terms").fetchall()) == [
        ("", "lisbon", 1), ("", "live", 1), ("a", "lisbon", 1)]
    assert con.execute("SELECT statement, quotes FROM belief_lengths").fetchall() == [(2, 1)]
    con.close()
