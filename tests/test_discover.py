"""Discovery and classification of the files found under a source."""

from __future__ import annotations

from conftest import new_session

from distiller.sources.openclaw.discover import classify, discover


def test_classify_openclaw_side_files():
    assert classify("a.jsonl") == "live"
    assert classify("a-topic-42.jsonl") == "live"
    assert classify("a.jsonl.reset.2026-02-16T18-02-58.032Z") == "archive"
    assert classify("a.jsonl.deleted.2026-02-16T18-02-58.032Z") == "archive"
    assert classify("a.jsonl.deleted.2026-02-16T18-02-58.032Z.zst") == "compressed_archive"
    assert classify("a.jsonl.lock") == "lock"
    assert classify("a.jsonl.bak.2026-02-16T18-02-58.032Z") == "backup"
    assert classify("a.jsonl.bak-123-456") == "backup"
    assert classify("a.jsonl.repair-1-2.tmp") == "tmp"
    assert classify("p.checkpoint.0b6c.jsonl") == "checkpoint"
    assert classify("a.trajectory.jsonl") == "trajectory"
    assert classify("sessions.json") == "index"


def test_sources_may_be_an_agents_dir_a_state_dir_a_sessions_dir_or_a_file(agents):
    one = new_session(agents, agent="main")
    new_session(agents, agent="work")
    assert len(discover([agents], []).live) == 2
    assert len(discover([agents.parent], []).live) == 2
    by_sessions_dir = discover([one.parent], [])
    assert [(c.path, c.agent) for c in by_sessions_dir.live] == [(str(one), "main")]
    assert [c.agent for c in discover([one], []).live] == ["main"]
    assert discover([agents / "nope"], []).missing == [str(agents / "nope")]


def test_excluded_agents_are_skipped_even_when_named_directly(agents):
    own = new_session(agents, agent="memory-distiller")
    assert discover([agents], ["memory-distiller"]).live == []
    assert discover([own], ["memory-distiller"]).skipped["excluded_agent"] == 1
