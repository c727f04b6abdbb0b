"""Discovery and classification of the files found under a source."""

from __future__ import annotations

import os

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


# --- symlinks: followed to regular files, never into the state dir, every one passed over counted


def test_a_symlinked_session_file_is_read_with_the_identity_of_its_target(agents, tmp_path, settings):
    import os

    import orjson
    from conftest import append, distill, ingested_ids, message_line

    elsewhere = new_session(agents, agent="elsewhere")
    append(elsewhere, message_line("I live in Lisbon", message_id="l1"))
    target = tmp_path / "kept" / "x.jsonl"
    target.parent.mkdir()
    elsewhere.rename(target)
    sessions = agents / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "x.jsonl").symlink_to(target)
    result = distill("--json", "run", "--extractor", "rules")
    assert result.returncode == 0, result.stderr
    summary = orjson.loads(result.stdout)
    assert summary["messages"] == 1 and summary["files_skipped"] == {}
    assert ingested_ids(settings) == ["l1"]
    import duckdb
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        (inode,) = con.execute("SELECT inode FROM files").fetchone()
    assert inode == os.stat(target).st_ino


def test_links_that_lead_nowhere_readable_or_into_the_state_dir_are_passed_over_and_counted(agents, tmp_path):
    from distiller.sources import discover as discover_all

    sessions = agents / "main" / "sessions"
    sessions.mkdir(parents=True)
    state = tmp_path / "state"
    (state / "batches").mkdir(parents=True)
    (state / "distill.duckdb.wal").write_bytes(b'{"type":"session","id":"wal"}\n')
    (state / "batches" / "b.json").write_bytes(b'{"type":"session","id":"batch"}\n')
    (sessions / "wal.jsonl").symlink_to(state / "distill.duckdb.wal")
    (sessions / "batch.jsonl").symlink_to(state / "batches" / "b.json")
    (sessions / "gone.jsonl").symlink_to(tmp_path / "missing.jsonl")
    (sessions / "dir.jsonl").symlink_to(tmp_path)
    (sessions / "loop.jsonl").symlink_to(sessions / "loop.jsonl")
    (agents / "sneaky").symlink_to(state)  # an agent dir that is the state dir
    (state / "sessions").mkdir()
    (state / "sessions" / "s.jsonl").write_bytes(b'{"type":"session","id":"inner"}\n')
    found = discover_all([agents], [], state_dir=state)
    assert found.live == []
    assert dict(found.skipped) == {"inside_state_dir": 3, "symlink_dangling": 1, "symlink_not_file": 1,
                                   "symlink_loop": 1}
    assert len(discover_all([agents], []).live) == 3  # without the state dir named, the links to files are sources


def test_every_format_follows_a_link_to_a_transcript_and_counts_a_dangling_one(tmp_path):
    from distiller import sources

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    codex_day = tmp_path / "codex" / "sessions" / "2026" / "03" / "01"
    gemini_chats = tmp_path / "gemini" / "tmp" / "proj" / "chats"
    for directory, name in ((codex_day, "rollout-2026-03-01T10-00-00-x.jsonl"), (gemini_chats, "session-1.jsonl")):
        directory.mkdir(parents=True)
        target = elsewhere / name
        target.write_text("{}\n")
        (directory / name).symlink_to(target)
        (directory / f"{name[:-6]}-gone.jsonl").symlink_to(elsewhere / "missing.jsonl")
    found = sources.discover([tmp_path / "codex", tmp_path / "gemini"], ())
    assert sorted(os.path.basename(f.path) for f in found.live) == ["rollout-2026-03-01T10-00-00-x.jsonl",
                                                                     "session-1.jsonl"]
    assert found.skipped["symlink_dangling"] == 2
