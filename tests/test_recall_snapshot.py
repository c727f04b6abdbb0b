"""The hook's snapshot ranks as recall's SQL does (a property test over generated stores), and is used only while
it matches the database files."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from distiller.recall import snapshot
from distiller.recall.lines import Limits
from distiller.recall.select import select
from distiller.records import Belief, EvidenceItem
from distiller.store import writes as store
from distiller.store.db import connect, transaction
from distiller.store.forget import forget_source

NOW = datetime(2026, 3, 20, tzinfo=UTC)
WORDS = ["lisbon", "hiking", "tea", "coffee", "boat", "nurse", "marathon", "python", "cats", "living", "lives"]
CATEGORIES = ["identity", "goal", "preference", "decision", "fact"]

belief_spec = st.tuples(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=5),  # statement words
    st.sampled_from(CATEGORIES), st.sampled_from(["agent:main", "agent:work", "global"]),
    st.floats(0.3, 1.0), st.integers(1, 9), st.sampled_from("abcd"), st.integers(1, 19),
    st.lists(st.sampled_from(WORDS), max_size=3),  # quote words
    st.sampled_from(["", "home", "drink"]),  # attribute: a slot, so some are superseded
)


def _belief(n: int, spec) -> Belief:
    words, category, scope, confidence, importance, session, day, quote, attribute = spec
    agent = scope.split(":")[1] if scope.startswith("agent:") else "main"
    evidence = EvidenceItem(f"m{n}", session, agent, f"/agents/{agent}/sessions/{session}.jsonl", 0, 10,
                            f"2026-03-{day:02d}T10:00:00Z", " ".join(quote) or "x")
    return Belief("The user " + " ".join(words), category, "user", attribute, confidence, "explicit", importance,
                  "medium", None, scope, (evidence,), "rules", None, "p1")


@pytest.mark.slow  # a property over many generated stores: CI runs it with the slow tests
@hypothesis_settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(belief_spec, min_size=1, max_size=25), st.lists(st.sampled_from(WORDS + ["the", "what"]), max_size=4),
       st.sampled_from([None, "main", "work"]), st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(0, 6)),
       st.booleans())
def test_the_snapshot_ranks_as_the_sql_does(tmp_path, specs, prompt_words, agent, limits, forget):
    db = tmp_path / f"{abs(hash(repr((specs, forget))))}" / "distill.duckdb"
    with connect(db) as con, transaction(con):
        store.upsert(con, [_belief(n, spec) for n, spec in enumerate(specs)], "r1", now=NOW)
        if forget:
            forget_source(con, "a", store.StoreSettings(), NOW)
    prompt, limits = " ".join(prompt_words), Limits(*limits)
    with connect(db, read_only=True) as con:
        expected = select(con, prompt, agent=agent, limits=limits, now=NOW)
        snap = snapshot.build(con, db, now=NOW)
    got = snapshot.rank(snap, prompt, agent=agent, limits=limits)
    assert [(line.tier, line.belief_id) for line in got] == [(line.tier, line.belief_id) for line in expected]
    assert all(abs(a.score - b.score) < 1e-9 for a, b in zip(got, expected, strict=True))


def test_a_snapshot_is_used_only_while_the_database_is_unchanged(tmp_path):
    state = tmp_path / "state"
    db = state / "distill.duckdb"
    with connect(db) as con, transaction(con):
        store.upsert(con, [_belief(0, (["tea"], "fact", "agent:main", 0.9, 5, "a", 1, [], ""))], "r1", now=NOW)
    with connect(db, read_only=True) as con:
        snapshot.save(state, snapshot.build(con, db, now=NOW))
    assert snapshot.load(state, db) is not None
    with connect(db) as con, transaction(con):
        store.upsert(con, [_belief(1, (["coffee"], "fact", "agent:main", 0.9, 5, "b", 2, [], ""))], "r1", now=NOW)
    assert snapshot.load(state, db) is None
    assert snapshot.load(state, db, current=False) is not None  # while a run holds the store
