"""The belief store on real DuckDB files: dedupe, supersession, replay, tombstones, forgetting, lifecycle."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import duckdb
import orjson
import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from secretgen import prose, texts_with_secrets

from distiller import manage as api
from distiller.config import Settings
from distiller.records import Belief, EvidenceItem, Message
from distiller.redact import refusal
from distiller.storable import unsafe
from distiller.store import clock, lifecycle, migrations
from distiller.store import keys as normalization
from distiller.store import writes as store
from distiller.store.db import CONFIG, connect, transaction
from distiller.store.forget import forget_beliefs, forget_source
from distiller.store.keys import normalize

NOW = datetime(2026, 3, 10, tzinfo=UTC)


def belief(statement: str, *, session: str = "s1", message: str = "m1", ts: str = "2026-03-01T10:00:00Z",
           attribute: str = "", confidence: float = 0.9, evidence_type: str = "explicit", subject: str = "user",
           category: str = "preference", scope: str = "agent:main", decay: str = "medium",
           quote: str | None = None, file: str | None = None) -> Belief:
    evidence = EvidenceItem(message, session, "main", file or f"/agents/main/sessions/{session}.jsonl", 10, 90, ts,
                            quote or statement[:12])
    return Belief(statement, category, subject, attribute, confidence, evidence_type, 5, decay, None, scope,
                  (evidence,), "rules", None, "p1")


@pytest.fixture
def db(tmp_path, migrated_store):
    """A new store (a copy of the session's migrated one: its creation is not what these tests test)."""
    return migrated_store(tmp_path / "state" / "distill.duckdb")


def upsert(db, beliefs, run="r1", **kwargs) -> store.UpsertResult:
    with connect(db) as con, transaction(con):
        return store.upsert(con, beliefs, run, now=kwargs.pop("now", NOW), **kwargs)


def table(db, sql: str, params=None) -> list[tuple]:
    with connect(db, read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def live(db) -> dict[str, tuple]:
    """statement → (status, evidence_count, sessions, confidence) of every belief."""
    return {r[0]: r[1:] for r in table(db, "SELECT statement, status, evidence_count, sessions, confidence FROM beliefs")}


def test_exact_duplicates_reinforce_across_sessions(db):
    first = upsert(db, [belief("User prefers tea.", evidence_type="implied", confidence=0.6)])
    again = upsert(db, [belief("  user PREFERS tea ", session="s2", message="m9", evidence_type="implied",
                               confidence=0.6)])
    assert (first.inserted, again.reinforced) == (1, 1)
    [(status, evidence, sessions, confidence)] = live(db).values()
    assert (status, evidence, sessions) == ("active", 2, 2)  # provisional alone; two sessions make it active
    assert 0.6 < confidence < 1
    many = [belief("User prefers tea", session=f"x{i}", message=f"n{i}", confidence=1.0) for i in range(30)]
    upsert(db, many)
    assert table(db, "SELECT max(confidence) FROM beliefs")[0][0] <= 1.0


def test_near_duplicates_merge_keeping_the_more_informative_wording(db):
    result = upsert(db, [
        belief("User prefers dark mode in the editor", message="m1"),
        belief("The user prefers dark mode in editors, always", message="m2", session="s2"),
    ])
    assert (result.inserted, result.merged) == (1, 1)
    assert list(live(db)) == ["The user prefers dark mode in editors, always"]
    assert table(db, "SELECT count(*) FROM belief_keys")[0][0] == 2


@pytest.mark.parametrize("a, b", [("I have 2 kids", "I have 3 kids"), ("I have two kids", "I have 3 kids"),
                                  ("Meets the team on Monday", "Meets the team on Tuesday"),
                                  ("User likes tea", "User does not like tea")])
def test_near_misses_stay_apart(db, a, b):
    upsert(db, [belief(a, message="m1"), belief(b, message="m2")])
    assert len(live(db)) == 2


def test_number_words_and_digits_are_the_same_statement():
    assert normalize("I have two kids").text == normalize("I have 2 kids.").text
    assert normalize("Has 1,000 books").sig == normalize("has 1000 books").sig


@given(st.text(alphabet="aZ09 '`.,_-!?\t\n/:;\"()@#$%^&*+=|\\~é’", max_size=40))
def test_the_ascii_fast_path_splits_words_as_the_unicode_rule_does(text):
    by_rule = normalization._TOKEN.findall(text.translate(normalization._APOSTROPHES))
    assert normalization._tokens(text) == by_rule


def test_contradicting_an_active_belief_without_a_shared_slot_is_flagged(db):
    upsert(db, [belief("User likes tea", attribute="tea")])
    result = upsert(db, [belief("User does not like tea", message="m2", attribute="drinks")])
    assert result.flagged == 1
    statuses = live(db)
    assert statuses["User likes tea"][0] == "active"
    assert statuses["User does not like tea"][0] == "flagged_for_review"


def test_slot_supersession_chain_and_history(db, tmp_path):
    city = {"attribute": "home city"}
    upsert(db, [belief("User lives in Paris", ts="2026-01-01T00:00:00Z", message="a", **city)])
    upsert(db, [belief("User lives in Berlin", ts="2026-02-01T00:00:00Z", message="b", **city)], run="r2")
    result = upsert(db, [belief("User lives in Lisbon", ts="2026-03-01T00:00:00Z", message="c",
                                attribute="Home_City")], run="r3")
    assert result.superseded == 1
    rows = table(db, "SELECT statement, status, valid_to IS NOT NULL, superseded_by IS NOT NULL FROM beliefs "
                     "ORDER BY first_seen")
    assert rows == [("User lives in Paris", "archived", True, True), ("User lives in Berlin", "archived", True, True),
                    ("User lives in Lisbon", "active", False, False)]
    settings = Settings(state_dir=tmp_path / "state")
    lisbon = table(db, "SELECT belief_id FROM beliefs WHERE statement = 'User lives in Lisbon'")[0][0]
    hist = api.history(settings, lisbon)
    assert [b.statement for b in hist.timeline] == ["User lives in Paris", "User lives in Berlin",
                                                    "User lives in Lisbon"]
    assert {e.event for e in hist.events} == {"superseded", "supersedes"}


def test_a_late_arrival_becomes_history_and_a_repeat_revives(db):
    slot = {"attribute": "editor"}
    upsert(db, [belief("User uses vim", ts="2026-02-01T00:00:00Z", message="new", **slot)])
    late = upsert(db, [belief("User uses emacs", ts="2026-01-01T00:00:00Z", message="old", **slot)])
    assert late.inserted == 1
    assert live(db)["User uses emacs"][0] == "archived" and live(db)["User uses vim"][0] == "active"
    back = upsert(db, [belief("User uses emacs", ts="2026-03-01T00:00:00Z", message="newer", **slot)])
    assert back.superseded == 1
    assert live(db)["User uses emacs"][0] == "active" and live(db)["User uses vim"][0] == "archived"


def test_a_weak_newer_claim_does_not_overturn_a_strong_active_belief(db):
    slot = {"attribute": "diet"}
    upsert(db, [belief("User is vegetarian", confidence=0.95, **slot)])
    result = upsert(db, [belief("User eats fish", message="m2", ts="2026-03-02T00:00:00Z", confidence=0.6,
                                evidence_type="implied", **slot)])
    assert result.flagged == 1
    assert live(db)["User is vegetarian"][0] == "active"


def test_a_batch_larger_than_one_pass_decides_as_one(db, tmp_path, monkeypatch):
    batch = [
        belief("User prefers dark mode in the editor", message="m1", ts="2026-03-01T10:00:00Z"),
        belief("User drinks tea", message="m2", attribute="drink", ts="2026-03-01T11:00:00Z"),
        belief("User owns a cat", message="m3", ts="2026-03-01T12:00:00Z"),
        belief("The user prefers dark mode in editors, always", message="m4", ts="2026-03-02T10:00:00Z"),
        belief("User drinks coffee", message="m5", attribute="drink", ts="2026-03-02T11:00:00Z"),
        belief("user owns a cat.", message="m6", session="s2", ts="2026-03-02T12:00:00Z"),
    ]
    whole = upsert(tmp_path / "whole.duckdb", batch)
    monkeypatch.setattr(store, "PASS_SIZE", 2)
    assert upsert(db, batch) == whole
    assert (whole.inserted, whole.merged, whole.superseded, whole.reinforced) == (3, 1, 1, 1)
    assert live(db) == live(tmp_path / "whole.duckdb")


def test_replaying_a_batch_never_double_counts(db):
    batch = [belief("User runs 5 km", message="m1"), belief("User runs 5 km", message="m2", session="s2"),
             belief("User's team ships on Fridays", message="m3", subject="user's team", category="fact")]
    upsert(db, batch)
    before = table(db, "SELECT * EXCLUDE (updated_at) FROM beliefs ORDER BY belief_id")
    replay = upsert(db, batch, run="r2")
    assert replay.replayed == 3 and replay.inserted == replay.reinforced == 0
    assert table(db, "SELECT * EXCLUDE (updated_at) FROM beliefs ORDER BY belief_id") == before
    assert table(db, "SELECT count(*) FROM evidence")[0][0] == 3


def test_secrets_are_refused_by_the_last_guard(db):
    key = "sk-ant-api03-" + "Ab1" * 30
    result = upsert(db, [belief(f"User's key is {key}"), belief("User likes jazz", quote=f"jazz {key}"),
                         belief("User likes blues", message="m2")])
    assert (result.refused_secret, result.inserted) == (2, 1)
    assert key not in orjson.dumps(table(db, "SELECT * FROM evidence")).decode()


def test_forgotten_beliefs_never_come_back_on_reprocess(db):
    upsert(db, [belief("User likes tea", attribute="tea")])
    with connect(db) as con, transaction(con):
        ids = [r[0] for r in con.execute("SELECT belief_id FROM beliefs").fetchall()]
        forget_beliefs(con, ids, "forget-id", NOW)
    assert live(db) == {}
    again = upsert(db, [belief("User likes tea", attribute="tea"),
                        belief("The user really enjoys tea", attribute="tea")])  # reworded, same message
    assert again.refused_tombstoned == 2 and live(db) == {}
    assert "tea" not in orjson.dumps(table(db, "SELECT * FROM tombstones")).decode()
    newer = [belief("User likes tea", attribute="tea", message="later", ts="2026-04-01T00:00:00Z")]
    assert upsert(db, newer, now=NOW + timedelta(days=30)).refused_tombstoned == 1
    allowed = store.StoreSettings(allow_newer_evidence=True)
    assert upsert(db, newer, settings=allowed, now=NOW + timedelta(days=30)).inserted == 1


def test_forget_by_source_removes_its_evidence_and_wording(db):
    upsert(db, [
        belief("User likes green tea in the morning", session="gone", message="g1"),
        belief("User likes green tea", session="kept", message="k1"),
        belief("User owns a cat", session="gone", message="g2"),
    ])
    with connect(db) as con, transaction(con):
        result = forget_source(con, "gone", store.StoreSettings(), NOW)
    assert len(result.beliefs) == 1 and result.evidence == 2
    assert list(live(db)) == ["User likes green tea"]
    assert table(db, "SELECT words FROM beliefs") == [("like green tea",)]  # "morning" went with its wording
    assert table(db, "SELECT count(*) FROM evidence WHERE session_id = 'gone'")[0][0] == 0
    replay = upsert(db, [belief("User owns a cat", session="gone", message="g2"),
                         belief("User likes green tea in the morning", session="gone", message="g1")])
    assert replay.refused_tombstoned == 2
    assert list(live(db)) == ["User likes green tea"]


def test_forget_by_file_uses_the_path(db, tmp_path):
    path = str(tmp_path / "a.jsonl")
    upsert(db, [belief("User owns a cat", session="s1", file=path)])
    with connect(db) as con, transaction(con):
        assert len(forget_source(con, path, store.StoreSettings(), NOW).beliefs) == 1


def test_activation_orders_and_fades(db, tmp_path):
    upsert(db, [
        belief("User plays chess", message="c1", ts="2026-03-09T00:00:00Z"),
        belief("User plays chess", message="c2", session="s2", ts="2026-03-08T00:00:00Z"),
        belief("User plays go", message="g1", ts="2026-03-09T00:00:00Z"),
        belief("User plays poker", message="p1", ts="2025-12-01T00:00:00Z"),
        belief("User is in a sprint", message="x1", ts="2025-12-01T00:00:00Z", decay="high"),
    ])
    settings = Settings(state_dir=tmp_path / "state")
    rows = api.list_beliefs(settings, api.Filters(status="all", sort="activation"))
    assert [b.statement for b in rows][:3] == ["User plays chess", "User plays go", "User plays poker"]
    assert live(db)["User is in a sprint"][0] == "archived"  # high decay, three months old: faded on arrival
    with connect(db) as con, transaction(con):
        assert lifecycle.fade(con, now=NOW + timedelta(days=3650)) >= 2
    assert live(db)["User plays poker"][0] == "archived"


def test_scope_rules(db):
    rules = store.StoreSettings(scope_rules=(store.ScopeRule("global", category="identity"),))
    upsert(db, [belief("User is called Ana", category="identity"), belief("User likes tea", message="m2")],
           settings=rules)
    assert sorted(table(db, "SELECT scope FROM beliefs")) == [("agent:main",), ("global",)]


def test_a_parquet_export_holds_what_the_jsonl_export_holds_in_stable_types_privately(tmp_path):
    settings = Settings(state_dir=tmp_path / "state")
    upsert(settings.db_path, [belief("User lives in Paris", attribute="city", ts="2026-01-01T00:00:00Z", message="p"),
                              belief("User lives in Berlin", attribute="city", ts="2026-02-01T00:00:00Z", message="b"),
                              belief("User likes tea", message="t1")])
    out = tmp_path / "b.parquet"
    out.write_text("an older export, readable by all")
    out.chmod(0o644)
    exported, _ = api.export(settings, "parquet", out)
    lines = [orjson.loads(line) for line in api.export(settings, "jsonl", None)[1].splitlines()]
    assert exported.beliefs == 3 and out.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.parquet", "state"]  # no temporary file left
    with duckdb.connect() as con:
        rel = con.sql(f"SELECT * FROM '{out}'")
        got = [dict(zip(rel.columns, row, strict=True)) for row in rel.fetchall()]
        types = dict(con.execute(f"SELECT name, type FROM parquet_schema('{out}')").fetchall())
    for row in got:
        row["keys"] = list(row["keys"])
    assert got == lines  # same beliefs, same order, same values
    # model and valid_to are null in every row here and still typed as text, not as an unknown type
    assert types["model"] == types["valid_to"] == "BYTE_ARRAY" and types["confidence"] == "DOUBLE"
    live, _ = api.export(settings, "parquet", out, statuses=("active", "provisional"))
    assert live.beliefs == 2


def test_export_import_round_trip(tmp_path):
    source = Settings(state_dir=tmp_path / "a")
    upsert(source.db_path, [
        belief("User lives in Paris", attribute="city", ts="2026-01-01T00:00:00Z", message="p"),
        belief("User lives in Berlin", attribute="city", ts="2026-02-01T00:00:00Z", message="b"),
        belief("User prefers dark mode in the editor", message="d1"),
        belief("The user prefers dark mode in editors, always", message="d2", session="s2"),
        belief("User likes tea", message="t1", attribute="tea"),
        belief("User does not like tea", message="t2", attribute="drink"),
    ])
    _, data = api.export(source, "jsonl", None)
    dump = tmp_path / "beliefs.jsonl"
    dump.write_bytes(data)
    target = Settings(state_dir=tmp_path / "b")
    first = api.import_file(target, dump).beliefs
    assert first.inserted + first.superseded + first.flagged == 5
    # The target's clock comes from the evidence (this source store, written without messages, has none)
    unclocked = [line for line in api.export(target, "jsonl", None)[1].splitlines() if not line.startswith(b'{"clock"')]
    assert unclocked == data.splitlines()
    assert api.import_file(target, dump).beliefs.replayed == 5
    line = orjson.loads(data.splitlines()[0])
    for key in ("id", "statement", "category", "confidence", "status", "scope", "subject", "attribute", "valid_from"):
        assert key in line
    assert set(line["evidence"][0]) >= {"message_id", "session", "agent", "file", "byte_start", "byte_end", "ts",
                                        "quote"}


def _raw_db(path, upto: int) -> None:
    with duckdb.connect(str(path)) as raw:
        raw.execute("CREATE TABLE schema_migrations (name VARCHAR PRIMARY KEY, applied_at TIMESTAMPTZ)")
        for name, fn in migrations.MIGRATIONS[:upto]:
            fn(raw)
            raw.execute("INSERT INTO schema_migrations VALUES (?, now())", [name])


@pytest.mark.parametrize("upto", range(len(migrations.MIGRATIONS)))
def test_migrates_from_every_earlier_version(tmp_path, upto):
    path = tmp_path / "d.duckdb"
    _raw_db(path, upto)
    assert upsert(path, [belief("User likes tea")]).inserted == 1
    assert table(path, "SELECT count(*) FROM schema_migrations")[0][0] == len(migrations.MIGRATIONS)


def test_beliefs_stored_before_the_sql_word_index_still_find_their_near_duplicates(tmp_path):
    path = tmp_path / "d.duckdb"
    before = [name for name, _ in migrations.MIGRATIONS].index("m011_word_index_keys_in_sql")
    _raw_db(path, before)
    with duckdb.connect(str(path)) as raw:  # as the earlier version left it: word keys hashed in Python
        raw.execute(
            """INSERT INTO beliefs VALUES ('b1:old', 'User prefers dark mode in the editor', 'prefer dark mode editor',
               '||', 'preference', 'agent:main', 'user', '', 0.9, 'explicit', 5, 'medium', 'active', NULL, NULL, NULL,
               NULL, NULL, 1, 1, now(), now(), now(), now(), 'r0', 'rules', NULL, 'p1')"""
        )
        raw.execute("INSERT INTO belief_words VALUES (12345, 'b1:old')")
    result = upsert(path, [belief("The user prefers dark mode in editors, always", message="m2", session="s2")])
    assert (result.merged, result.inserted) == (1, 0)


def test_the_near_duplicate_index_of_an_earlier_version_is_dropped_with_its_fingerprint(tmp_path):
    path = tmp_path / "d.duckdb"
    _raw_db(path, [name for name, _ in migrations.MIGRATIONS].index("m020_near_duplicates_without_an_index"))
    with duckdb.connect(str(path)) as raw:
        raw.execute("INSERT INTO belief_words VALUES (12345, 'b1:old')")
        raw.execute("INSERT INTO store_meta VALUES ('word_index_hash', '42'), ('clock:global', '2026-01-01')")
    upsert(path, [belief("User likes tea")])
    assert table(path, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'belief_words'") == [(0,)]
    assert table(path, "SELECT name FROM store_meta WHERE name NOT LIKE 'clock:agent%'") == [("clock:global",)]


def test_a_reader_sees_the_committed_state_only(db):
    upsert(db, [belief("User likes tea")])
    with connect(db) as writer:
        reader = duckdb.connect(str(db), config=CONFIG)
        try:
            writer.execute("BEGIN TRANSACTION")
            store.upsert(writer, [belief("User likes coffee", message="m2")], "r2", now=NOW)
            seen: list[int] = []
            thread = threading.Thread(target=lambda: seen.append(
                reader.execute("SELECT count(*) FROM beliefs").fetchone()[0]))
            thread.start()
            thread.join()
            writer.execute("COMMIT")
            assert seen == [1]
            assert reader.execute("SELECT count(*) FROM beliefs").fetchone()[0] == 2
        finally:
            reader.close()


def test_decay_runs_on_the_transcripts_clock_per_scope(db):
    old = "2023-01-01T10:00:00Z"
    with connect(db) as con, transaction(con):
        clock.advance(con, {"agent:main": datetime(2023, 1, 2, tzinfo=UTC),
                            "agent:work": datetime(2026, 3, 1, tzinfo=UTC)})
    upsert(db, [belief("User is in a sprint", message="x1", ts=old, decay="high"),
                belief("User is on a trip", message="w1", ts=old, decay="high", scope="agent:work")])
    # Three years before the wall clock, a day before the main agent's clock: learned, not faded on arrival.
    assert live(db)["User is in a sprint"][0] == "active"
    assert live(db)["User is on a trip"][0] == "archived"  # the work agent's clock is three years on
    with connect(db) as con, transaction(con):
        clock.advance(con, {"agent:main": datetime(2023, 1, 1, tzinfo=UTC)})  # never back
        assert lifecycle.fade(con, now=NOW) == 0
        clock.advance(con, {"agent:main": datetime(2023, 6, 1, tzinfo=UTC)})
        assert lifecycle.fade(con, now=NOW) == 1
    assert live(db)["User is in a sprint"][0] == "archived"


def test_a_message_from_the_future_cannot_run_the_clock_ahead():
    wall = datetime(2026, 3, 1, tzinfo=UTC)
    messages = [Message("openclaw", "main", "s", "m1", None, "2099-01-01T00:00:00Z", "user", "x", "f", 0, 1),
                Message("openclaw", "work", "s", "m2", None, "2026-02-01T00:00:00+01:00", "user", "x", "f", 0, 1),
                Message("openclaw", "work", "s", "m3", None, "not a time", "user", "x", "f", 0, 1)]
    newest = clock.newest_by_scope(messages, wall)
    assert newest["agent:main"] == newest["global"] == wall + clock.SKEW
    assert newest["agent:work"] == datetime(2026, 1, 31, 23, tzinfo=UTC)


def test_new_evidence_revives_the_archived_belief_it_nearly_matches(db):
    upsert(db, [belief("User prefers dark mode in the editor", message="d1", ts="2025-01-01T00:00:00Z",
                       decay="high")])
    assert live(db)["User prefers dark mode in the editor"][0] == "archived"  # faded long before NOW
    result = upsert(db, [belief("The user prefers dark mode in editors, always", message="d2", session="s2",
                                ts="2026-03-09T00:00:00Z", decay="high")])
    assert result.merged == 1
    [(statement, (status, evidence, sessions, _))] = live(db).items()
    assert (statement, status, evidence, sessions) == ("The user prefers dark mode in editors, always", "active", 2, 2)
    assert ("revived",) in table(db, "SELECT event FROM belief_history")


@pytest.mark.parametrize(
    "statement",
    [
        "The user's key starts with sk-ant-api03-XXXXXX",
        "The user's key is sk_live_abcdefgh",
        "The user's API key is [REDACTED:anthropic-key]",
        "The user's bank PIN is 4321.",
        "The user's VPN password is hunter2",
        "The user's credit card number is 4111 1111 1111 1111.",
        "The user's card ends in 4242 4242 4242 4242",
        "The user's IBAN is DE89 3704 0044 0532 0130 00",
        "The user's account number is 12345678",
    ],
)
def test_the_last_guard_refuses_partial_keys_markers_and_credentials_in_plain_words(db, statement):
    assert upsert(db, [belief(statement)]).refused_secret == 1
    assert upsert(db, [belief("User likes jazz", quote=statement)]).refused_secret == 1
    assert live(db) == {}


@pytest.mark.parametrize(
    "statement",
    ["The user uses a password manager.", "The user reset their PIN last week.", "The user has 2 cats.",
     "The user's order number is 1700000000000.", "The user works at sk-group on skateboards."],
)
def test_the_last_guard_keeps_beliefs_that_only_talk_about_credentials(db, statement):
    assert upsert(db, [belief(statement)]).refused_secret == 0


@pytest.mark.slow  # hundreds of generated examples; CI runs it with the other slow tests
@hypothesis_settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(texts_with_secrets(), prose()), min_size=1, max_size=6))
def test_the_guards_one_scan_of_the_batch_equals_a_scan_of_each_belief(texts):
    assert store._refusals(texts) == ["secret" if refusal(text) else "unsafe" if unsafe(text) else None
                                      for text in texts]


def test_the_store_refuses_control_characters_and_markup_that_bypassed_verification(db):
    """Verification strips and rejects them; an import of a tampered export does not pass through it."""
    result = upsert(db, [belief("User likes jazz\x1b[2J"), belief("User likes <system>blues</system>"),
                         belief("User likes folk")])
    assert (result.refused_unsafe, result.inserted) == (2, 1)
