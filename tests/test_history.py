"""History read in pieces or long after it was written: the store does not depend on when or how it arrives."""

from __future__ import annotations

import duckdb
import orjson
from conftest import append, header

from distiller import pipeline
from distiller.batches import files as batches
from distiller.config import Settings


def said(text: str, message_id: str, ts: str) -> bytes:
    return orjson.dumps({"type": "message", "id": message_id, "parentId": None, "timestamp": ts,
                         "message": {"role": "user", "content": [{"type": "text", "text": text}]}}) + b"\n"


def rows(settings: Settings, sql: str) -> list[tuple]:
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_a_run_that_starts_mid_file_screens_as_one_from_the_top(agents, tmp_path):
    path = agents / "main" / "sessions" / "s.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(header() + said("I'm on call every weekend.", "m1", "2026-03-01T10:00:00Z"))
    settings = Settings(state_dir=tmp_path / "state", extractor="rules")
    pipeline.run_once(settings, [agents])
    append(path, said("I'm on call every weekend.", "m2", "2026-03-01T10:00:05Z"))  # the same turn sent again
    pipeline.run_once(settings, [agents])
    assert rows(settings, "SELECT message_id, reason FROM ingested ORDER BY 1") == [("m1", "personal"),
                                                                                   ("m2", "echo")]


def test_an_old_history_distilled_today_keeps_what_it_learned(agents, tmp_path):
    """Two-year-old transcripts: decay runs on their own clock, so their facts are not faded on arrival."""
    path = agents / "main" / "sessions" / "s.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(header() + said("I have two cats at home.", "m1", "2024-03-01T10:00:00Z")
                     + said("I'm on call every weekend.", "m2", "2024-03-02T10:00:00Z"))
    settings = Settings(state_dir=tmp_path / "state", extractor="rules")
    pipeline.run_once(settings, [agents])
    assert sorted(rows(settings, "SELECT status FROM beliefs")) == [("provisional",), ("provisional",)]
    # Two months of the transcripts' time later, the high-decay facts fade, as an hourly run would have seen.
    append(path, said("ok thanks", "m3", "2024-05-02T10:00:00Z"))
    pipeline.run_once(settings, [agents])
    assert sorted(rows(settings, "SELECT status FROM beliefs")) == [("archived",), ("archived",)]


def test_an_offline_batch_is_never_written_to_disk(agents, tmp_path, monkeypatch):
    """Batch files and journals are for paid answers (a first run once wrote 590 MB for 6 MB): an offline answer
    costs nothing to redo, so its batch stays in memory until its commit."""
    path = agents / "main" / "sessions" / "s.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(header() + b"".join(said(f"I like hiking trail number {i} in the hills.", f"m{i}",
                                              "2026-03-01T10:00:00Z") for i in range(200)))
    writes = []
    real = batches.write
    monkeypatch.setattr(batches, "write", lambda state_dir, batch: writes.append(batch.status) or real(state_dir,
                                                                                                      batch))
    settings = Settings(state_dir=tmp_path / "state", extractor="rules", request_budget_tokens=200)
    summary = pipeline.run_once(settings, [agents])
    assert summary.tally.requests > 10 and writes == []
    assert rows(settings, "SELECT count(*) FROM beliefs")[0][0] > 0


def test_a_belief_from_two_sessions_is_as_confident_whether_they_arrive_in_one_run_or_two(agents, tmp_path):
    """Sessions are combined once, by the store over all evidence: not again by verification or the extractor."""
    sessions = agents / "main" / "sessions"
    sessions.mkdir(parents=True)
    paths = [sessions / f"s{n}.jsonl" for n in range(2)]
    together = Settings(state_dir=tmp_path / "together", extractor="rules")
    apart = Settings(state_dir=tmp_path / "apart", extractor="rules")
    paths[0].write_bytes(header() + said("My name is Ann Lee.", "m0", "2026-03-01T10:00:00Z"))
    pipeline.run_once(apart, [agents])
    paths[1].write_bytes(header() + said("My name is Ann Lee.", "m1", "2026-03-02T10:00:00Z"))
    pipeline.run_once(apart, [agents])
    pipeline.run_once(together, [agents])
    query = "SELECT statement, confidence, status FROM beliefs"
    assert rows(together, query) == rows(apart, query) == [("The user's name is Ann Lee.", 0.72, "active")]
