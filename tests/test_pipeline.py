"""The spine's guarantees on real files and a real DuckDB: nothing lost, nothing read twice."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import orjson
import pytest
from conftest import append, distill, header, ingested, ingested_ids, message_line, new_session

from distiller import pipeline
from distiller.config import Settings


def run(settings, agents, **kw):
    return pipeline.run_once(settings, [agents], **kw).tally


def test_new_file_is_read_from_byte_zero_and_rerun_reads_nothing(settings, agents):
    path = new_session(agents, n_messages=3)
    first = run(settings, agents)
    assert (first.files, first.messages, first.lines) == (1, 3, 4)
    assert first.bytes_read == path.stat().st_size
    second = run(settings, agents)
    assert (second.files, second.messages, second.bytes_read) == (0, 0, 0)
    assert second.file_events["unchanged"] == 1
    assert len(ingested(settings)) == 3


def test_partial_last_line_waits_for_its_newline(settings, agents):
    path = new_session(agents)
    line = message_line("I live in Lisbon", message_id="aaaaaaaa")
    append(path, line[:20])
    assert run(settings, agents).messages == 0
    append(path, line[20:-1])
    assert run(settings, agents).messages == 0
    append(path, b"\n")
    tally = run(settings, agents)
    assert tally.messages == 1
    assert ingested_ids(settings) == ["aaaaaaaa"]


def test_several_runs_over_a_growing_file_emit_each_message_once(settings, agents):
    path = new_session(agents)
    expected = []
    for round_ in range(5):
        for i in range(round_ + 1):
            message_id = f"{round_:04x}{i:04x}"
            expected.append(message_id)
            append(path, message_line(f"round {round_} item {i}", message_id=message_id))
        run(settings, agents)
    assert ingested_ids(settings) == sorted(expected)


def test_truncated_file_is_reread_without_counting_twice(settings, agents):
    path = new_session(agents)
    append(path, message_line("one", message_id="00000001"))
    kept = path.read_bytes()
    append(path, message_line("two", message_id="00000002"))
    run(settings, agents)
    path.write_bytes(kept)
    tally = run(settings, agents)
    assert tally.file_events["truncated"] == 1
    assert (tally.messages, tally.skipped["already_ingested"]) == (0, 1)
    append(path, message_line("three", message_id="00000003"))
    assert run(settings, agents).messages == 1
    assert ingested_ids(settings) == ["00000001", "00000002", "00000003"]


def test_truncated_and_regrown_past_the_cursor_is_detected(settings, agents):
    path = new_session(agents)
    append(path, message_line("one", message_id="00000001"))
    kept = path.read_bytes()
    append(path, message_line("two", message_id="00000002"))
    run(settings, agents)
    path.write_bytes(kept + message_line("three, longer than two", message_id="00000003"))
    tally = run(settings, agents)
    assert tally.file_events["rewritten"] == 1
    assert (tally.messages, tally.skipped["already_ingested"]) == (1, 1)
    assert ingested_ids(settings) == ["00000001", "00000002", "00000003"]


def test_replace_by_write_temp_and_rename_rereads_and_skips_known_ids(settings, agents):
    path = new_session(agents)
    append(path, message_line("one", message_id="00000001"))
    run(settings, agents)
    tmp = path.with_suffix(".repair-1-2.tmp")
    tmp.write_bytes(path.read_bytes() + message_line("two", message_id="00000002"))
    os.replace(tmp, path)
    tally = run(settings, agents)
    assert tally.file_events["replaced"] == 1
    assert (tally.messages, tally.skipped["already_ingested"]) == (1, 1)
    assert ingested_ids(settings) == ["00000001", "00000002"]


def test_same_size_rewrite_in_place_is_detected(settings, agents):
    path = new_session(agents)
    append(path, message_line("one", message_id="00000001"))
    run(settings, agents)
    data = path.read_bytes()
    # Same header, same length, different content: the consumed bytes no longer end where the cursor says.
    body = message_line("on", message_id="00000009")
    rewritten = data[: len(header("x" * 36))] + body + b" " * (len(data) - len(header("x" * 36)) - len(body))
    path.write_bytes(rewritten[:-1] + b"\n")
    append(path, message_line("two", message_id="00000002"))
    tally = run(settings, agents)
    assert tally.file_events["rewritten"] == 1
    assert ingested_ids(settings) == ["00000001", "00000002", "00000009"]


def test_reset_rename_with_unread_tail_is_followed(settings, agents):
    path = new_session(agents)
    append(path, message_line("before", message_id="00000001"))
    run(settings, agents)
    append(path, message_line("written just before /new", message_id="00000002"))
    archive = path.with_name(path.name + ".reset.2026-03-04T09-12-33.120Z")
    os.rename(path, archive)
    successor = new_session(agents)
    append(successor, message_line("fresh session", message_id="00000003"))
    tally = run(settings, agents)
    assert tally.file_events["renamed"] == 1
    assert tally.file_events["new"] == 1
    assert ingested_ids(settings) == ["00000001", "00000002", "00000003"]
    again = run(settings, agents)
    assert (again.messages, again.bytes_read) == (0, 0)


def test_a_copy_of_a_tracked_header_does_not_take_the_place_of_its_reset_archive(settings, agents):
    """Found by the file-history state machine: the tracked file was appended to, a new file got a copy of its
    first line, and then the tracked file was renamed to its archive. The copy (another inode) took over the
    cursor, so the archive's unread tail was never read."""
    path = new_session(agents)
    run(settings, agents)
    append(path, message_line("written just before /new", message_id="00000001"))
    copy = path.with_name("copy.jsonl")
    copy.write_bytes(path.read_bytes().split(b"\n")[0] + b"\n")
    os.rename(path, path.with_name(path.name + ".reset.2026-03-04T09-12-33.120Z"))
    tally = run(settings, agents)
    assert ingested_ids(settings) == ["00000001"]
    assert (tally.file_events["renamed"], tally.file_events["new"]) == (1, 1)


def test_reset_archive_is_not_a_new_source(settings, agents):
    path = new_session(agents, n_messages=2)
    os.rename(path, path.with_name(path.name + ".reset.2026-03-04T09-12-33.120Z"))
    tally = run(settings, agents)
    assert tally.messages == 0
    assert ingested(settings) == []


def test_filename_reused_with_a_new_header_is_a_new_file_and_the_old_tail_is_kept(settings, agents):
    path = new_session(agents, name="reused")
    append(path, message_line("old", message_id="00000001"))
    run(settings, agents)
    append(path, message_line("old tail", message_id="00000002"))
    os.rename(path, path.with_name(path.name + ".reset.2026-03-05T00-00-00.000Z"))
    path.write_bytes(header() + message_line("new", message_id="00000003"))
    tally = run(settings, agents)
    assert (tally.file_events["new"], tally.file_events["renamed"]) == (1, 1)
    assert ingested_ids(settings) == ["00000001", "00000002", "00000003"]


def test_deleted_file_is_marked_gone_and_its_messages_stay(settings, agents):
    path = new_session(agents, n_messages=2)
    run(settings, agents)
    path.unlink()
    tally = run(settings, agents)
    assert tally.file_events["gone"] == 1
    report = pipeline.status(settings, [agents])
    assert (report.files_tracked, report.files_gone, report.messages_ingested) == (0, 1, 2)


def test_malformed_invalid_utf8_and_blank_lines_are_counted_and_passed(settings, agents):
    path = new_session(agents)
    append(path, b"{not json\n" + b"\n" + b"   \n" + b'{"type":"message","id":"\xff\xfe"}\n')
    append(path, b'{"type":"brand_new_kind","id":"1"}\n' + b"[1,2]\n")
    append(path, message_line("after the junk", message_id="00000001"))
    tally = run(settings, agents)
    assert tally.skipped["malformed_json"] == 1
    assert tally.skipped["invalid_utf8"] == 1
    assert tally.skipped["blank"] == 2
    assert tally.skipped["unknown_type"] == 1
    assert tally.skipped["not_an_object"] == 1
    assert tally.malformed == 2
    assert ingested_ids(settings) == ["00000001"]
    assert run(settings, agents).lines == 0


def test_zero_byte_and_header_only_files(settings, agents):
    empty = new_session(agents)
    empty.write_bytes(b"")
    only_header = new_session(agents)
    tally = run(settings, agents)
    assert tally.files_skipped["empty"] == 1
    assert tally.files == 1 and tally.messages == 0
    empty.write_bytes(header() + message_line("now it has content", message_id="00000001"))
    append(only_header, message_line("and this one too", message_id="00000002"))
    assert run(settings, agents).messages == 2


def test_incomplete_header_waits(settings, agents):
    path = new_session(agents)
    path.write_bytes(header()[:30])
    tally = run(settings, agents)
    assert tally.files_skipped["header_incomplete"] == 1
    append(path, header()[30:] + message_line("hello there", message_id="00000001"))
    assert run(settings, agents).messages == 1


def test_a_50_mb_single_line_is_streamed_past_and_counted(settings, agents):
    settings = Settings(state_dir=settings.state_dir, max_line_bytes=8 * 1024 * 1024)
    path = new_session(agents)
    with open(path, "ab") as f:
        f.write(b'{"type":"message","id":"big","message":{"role":"user","content":"')
        block = b"A" * (1024 * 1024)
        f.writelines(block for _ in range(50))
        f.write(b'"}}\n')
    append(path, message_line("after the giant", message_id="00000001"))
    tally = run(settings, agents)
    assert tally.skipped["oversized_line"] == 1
    assert ingested_ids(settings) == ["00000001"]


@pytest.mark.slow  # a real process as an unprivileged user; CI runs it with the other slow tests
@pytest.mark.skipif(os.geteuid() == 0 and shutil.which("setpriv") is None, reason="needs non-root or setpriv")
def test_permission_denied_is_reported_and_skipped(tmp_path):
    world = Path(tempfile.mkdtemp(prefix="distill-perm-"))
    world.chmod(0o777)
    agents = world / "agents"
    new_session(agents, n_messages=1)
    secret = new_session(agents, n_messages=1)
    for p in [world, *world.rglob("*")]:
        p.chmod(0o777 if p.is_dir() else 0o644)
    secret.chmod(0o000)
    state = world / "state"
    # Root reads anything, so as root the CLI runs as `nobody` (setpriv) to meet a real EACCES.
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
    try:
        if prefix and subprocess.run([*prefix, sys.executable, "-c", "import distiller.cli"]).returncode != 0:
            pytest.skip("the interpreter is not reachable as an unprivileged user here")
        result = subprocess.run(
            [*prefix, sys.executable, "-m", "distiller", "--json", "--state-dir", str(state), "run", "--source",
             str(agents)],
            capture_output=True, text=True, env={**os.environ, "HOME": str(world)},
        )
    finally:
        shutil.rmtree(world, ignore_errors=True)
    assert result.returncode == 0, result.stderr
    summary = orjson.loads(result.stdout)
    assert summary["files_skipped"]["unreadable"] == 1
    assert summary["messages"] == 1
    assert str(secret) in result.stderr and "Permission denied" in result.stderr


def test_dry_run_reads_but_records_nothing(settings, agents):
    new_session(agents, n_messages=3)
    tally = run(settings, agents, dry_run=True)
    assert tally.messages == 3
    assert not settings.db_path.exists()
    run(settings, agents)
    before = ingested(settings)
    new_session(agents, n_messages=1)
    dry = run(settings, agents, dry_run=True)
    assert dry.messages == 1
    assert ingested(settings) == before


def test_init_from_now_marks_present_content_read(settings, agents):
    path = new_session(agents, n_messages=3)
    append(path, message_line("partial", message_id="0000000a")[:15])
    summary = pipeline.init(settings, [agents], mode="from-now")
    assert summary.files_marked == 1
    append(path, message_line("partial", message_id="0000000a")[15:] + message_line("new", message_id="0000000b"))
    run(settings, agents)
    assert ingested_ids(settings) == ["0000000a", "0000000b"]


def test_init_from_start_rereads_without_duplicates(settings, agents):
    path = new_session(agents, n_messages=2)
    pipeline.init(settings, [agents], mode="from-now")
    pipeline.init(settings, [agents], mode="from-start")
    append(path, message_line("new", message_id="0000000b"))
    tally = run(settings, agents)
    assert tally.messages == 3
    assert run(settings, agents).messages == 0
    assert len(ingested(settings)) == 3


def test_excluded_agent_and_side_files_are_skipped_with_reasons(settings, agents):
    new_session(agents, agent="memory-distiller", n_messages=2)
    live = new_session(agents, n_messages=1)
    for suffix in [".lock", ".bak.2026-03-01T00-00-00.000Z"]:
        shutil.copy(live, str(live) + suffix)
    shutil.copy(live, live.with_name("abc.checkpoint.1234.jsonl"))
    shutil.copy(live, live.with_name("abc.trajectory.jsonl"))
    tally = run(settings, agents)
    assert tally.messages == 1
    for reason in ["excluded_agent", "lock", "backup", "checkpoint", "trajectory"]:
        assert tally.files_skipped[reason] == 1, reason


def test_adapter_skips_tool_results_and_transcript_only_rows(settings, agents):
    path = new_session(agents)
    append(path, message_line("hi", role="assistant", provider="openclaw", model="delivery-mirror"))
    append(path, message_line("tool output", role="toolResult"))
    append(path, message_line("forwarded", provenance={"kind": "inter_session"}, message_id="0000000f"))
    tally = run(settings, agents)
    assert tally.skipped["transcript_only"] == 1 and tally.skipped["tool_result"] == 1
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        assert con.execute("SELECT message_id, inter_session FROM ingested").fetchall() == [("0000000f", True)]


@pytest.mark.slow  # sixty commits of one file; CI runs it with the other slow tests
def test_chunked_commits_cover_a_file_exactly(settings, agents):
    settings = Settings(state_dir=settings.state_dir, commit_every_bytes=200)
    path = new_session(agents)
    ids = [f"{i:08x}" for i in range(60)]
    append(path, b"".join(message_line(f"a message long enough to count {i}", message_id=m) for i, m in enumerate(ids)))
    run(settings, agents)
    assert ingested_ids(settings) == ids
    append(path, message_line("tail", message_id="ffffffff"))
    assert run(settings, agents).messages == 1


def test_an_echo_is_recognised_across_chunks_but_not_across_files(settings, agents):
    settings = Settings(state_dir=settings.state_dir, commit_every_bytes=1)  # a chunk per message
    first = new_session(agents)
    append(first, message_line("I moved to Rome in 2021.", message_id="00000001"))
    append(first, message_line("I moved to Rome in 2021.", role="assistant", message_id="00000002"))
    append(first, message_line("My sister lives in Oslo.", message_id="00000003"))
    second = new_session(agents)
    append(second, message_line("My sister lives in Oslo.", role="assistant", message_id="00000004"))
    tally = run(settings, agents)
    assert tally.messages == 4 and tally.dropped == {"echo": 1}


def test_session_id_comes_from_the_header_not_the_file_name(settings, agents):
    new_session(agents, name="not-the-session-id", n_messages=1)
    run(settings, agents)
    (session,) = {s for s, _ in ingested(settings)}
    assert session != "not-the-session-id" and len(session) == 36


def test_database_file_is_private(settings, agents):
    new_session(agents, n_messages=1)
    run(settings, agents)
    assert settings.db_path.stat().st_mode & 0o777 == 0o600


def test_decisions_are_recorded_in_the_ledger_and_counted_per_run(settings, agents):
    path = new_session(agents)
    append(path, message_line("I'm allergic to peanuts", message_id="00000001"))
    append(path, message_line("thanks!", message_id="00000002"))
    append(path, message_line("I will leave peanuts out of every recipe.", role="assistant", message_id="00000003"))
    tally = run(settings, agents)
    assert tally.decisions == {"keep": 1, "drop": 1, "context": 1}
    assert tally.dropped == {"ack-filler": 1}
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        rows = con.execute("SELECT message_id, decision, reason FROM ingested ORDER BY 1").fetchall()
    assert [(m, d) for m, d, _ in rows] == [("00000001", "keep"), ("00000002", "drop"), ("00000003", "context")]
    last = pipeline.status(settings, [agents]).last_run
    assert last.counters["dropped"] == {"ack-filler": 1}


def test_cron_run_sessions_from_the_index_are_skipped_whole(settings, agents):
    path = new_session(agents, n_messages=0)
    append(path, message_line("I live in Lisbon", message_id="00000001"))
    session_id = orjson.loads(path.read_bytes().splitlines()[0])["id"]
    (path.parent / "sessions.json").write_bytes(
        orjson.dumps({"agent:main:cron:daily:run:42": {"sessionId": session_id, "updatedAt": 1}})
    )
    tally = run(settings, agents)
    assert tally.dropped == {"cron-session": 1}


def test_a_dreaming_session_stays_skipped_across_runs(settings, agents):
    path = new_session(agents)
    append(path, orjson.dumps({"type": "custom", "customType": "openclaw:bootstrap-context:full", "id": "c1",
                               "data": {"runId": "dreaming-narrative-7", "sessionId": "x"}}) + b"\n")
    append(path, message_line("I live in Lisbon", message_id="00000001"))
    assert run(settings, agents).dropped == {"dreaming-session": 1}
    append(path, message_line("I live in Porto now", message_id="00000002"))
    assert run(settings, agents).dropped == {"dreaming-session": 1}


def test_dry_run_show_prints_every_decision(settings, agents):
    from conftest import distill

    path = new_session(agents)
    append(path, message_line("I'm vegetarian", message_id="00000001"))
    append(path, message_line("ok", message_id="00000002"))
    result = distill("--json", "run", "--dry-run", "--show", "dropped", "--source", str(agents), check=True)
    rows = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert rows == [{"message_id": "00000002", "agent": "main", "session": rows[0]["session"], "role": "user",
                     "ts": "2026-03-01T10:00:01.000Z", "decision": "drop", "reason": "ack-filler", "text": "ok",
                     "why_no_text": None}]
    assert "dropped: ack-filler 1" in result.stderr
    kept = distill("run", "--dry-run", "--show", "kept", "--source", str(agents), check=True).stdout
    assert kept.splitlines()[0].split()[:2] == ["keep", "personal"]
    assert not settings.db_path.exists()


def test_hostile_ids_are_bounded_and_count_toward_the_commit_size(settings, agents):
    """100 KB ids used to reach the commit whole (and past DuckDB's memory limit, run after run)."""
    settings = Settings(state_dir=settings.state_dir, commit_every_bytes=64 * 1024)
    path = new_session(agents)
    ids = [f"{i:04d}" + "x" * 100_000 for i in range(20)]
    append(path, b"".join(message_line(f"I prefer tea number {i}", message_id=m) for i, m in enumerate(ids)))
    first = run(settings, agents)
    assert first.messages == 20
    stored = ingested_ids(settings)
    assert len(stored) == 20 and max(len(i) for i in stored) <= 128
    pipeline.init(settings, [agents], mode="from-start")  # reread from byte 0: the digests find every message known
    again = run(settings, agents)
    assert again.messages == 0 and again.skipped["already_ingested"] == 20 and len(ingested_ids(settings)) == 20


def test_ids_and_paths_count_toward_commit_every_bytes(settings):
    from distiller.pipeline.chunk import MESSAGE_OVERHEAD_BYTES, Chunk
    from distiller.pipeline.read import FileRead
    from distiller.records import Message
    from distiller.screen import echo

    chunk = Chunk(settings, echo.EMPTY)
    message = Message("openclaw", "main", "s" * 100, "m" * 128, "p" * 128, None, "user", "hi", "/f" * 50, 0, 10)
    chunk.add(message, None, "file", FileRead())
    assert chunk.pending_bytes >= MESSAGE_OVERHEAD_BYTES + 100 + 128 + 128 + 2 + 100


@pytest.mark.slow
def test_a_resumed_batch_too_big_to_commit_is_set_aside_and_its_messages_read_again(settings, agents):
    """A pending batch left by a version that did not bound ids failed its commit on every run, for good."""
    from distiller.batches import files as batches
    from distiller.batches import model as batch_model
    from distiller.extract.rules import RulesExtractor
    from distiller.records import Message
    from distiller.screen import screen

    path = new_session(agents)
    append(path, message_line("I prefer tea over coffee", message_id="00000001"))
    pad = "x" * 100_000
    screened = [(screen(Message("openclaw", "main", "s1", f"{i:05d}{pad}", f"{i - 1:05d}{pad}", None, "user",
                                "ok", str(path), 0, 1)), "file-x") for i in range(1000)]
    huge = batch_model.build("0123456789ab-0001", "run-old", RulesExtractor(), screened, [],
                         request_budget_tokens=6000, prompt_tokens=100)
    batches.write(settings.state_dir, huge)
    tally = run(settings, agents)
    assert tally.set_aside == ["0123456789ab-0001.json"]
    assert ingested_ids(settings) == ["00000001"]


@pytest.mark.parametrize("first_line", [b"\n", b'{"type":"session","version":3}\n', b"not json at all\n"])
def test_files_whose_first_lines_carry_no_id_are_told_apart(settings, agents, first_line):
    sessions = agents / "main" / "sessions"
    sessions.mkdir(parents=True)
    paths = [sessions / f"s{n}.jsonl" for n in range(3)]
    for n, path in enumerate(paths):
        path.write_bytes(first_line + message_line(f"file {n} says hello", message_id=f"0000000{n}"))
    tally = run(settings, agents)
    assert tally.messages == 3 and not tally.files_skipped.get("duplicate_identity")
    append(paths[1], message_line("and more", message_id="00000009"))
    archive = paths[2].with_name(paths[2].name + ".reset.2026-03-04T09-12-33.120Z")
    append(paths[2], message_line("just before /new", message_id="0000000a"))
    os.rename(paths[2], archive)
    again = run(settings, agents)
    assert (again.messages, again.file_events["appended"], again.file_events["renamed"]) == (2, 1, 1)
    assert ingested_ids(settings) == ["00000000", "00000001", "00000002", "00000009", "0000000a"]
    assert run(settings, agents).messages == 0


def test_a_new_session_that_copies_a_tracked_header_is_read(settings, agents):
    original = new_session(agents)
    append(original, message_line("the original", message_id="00000001"))
    run(settings, agents)
    copy = original.with_name("copied.jsonl")
    copy.write_bytes(header_line(original) + message_line("new words in the copy", message_id="00000002"))
    tally = run(settings, agents)
    assert tally.messages == 1 and tally.file_events["new"] == 1 and not tally.files_skipped.get("duplicate_identity")
    append(original, message_line("the original goes on", message_id="00000003"))
    append(copy, message_line("so does the copy", message_id="00000004"))
    assert run(settings, agents).messages == 2
    assert ingested_ids(settings) == ["00000001", "00000002", "00000003", "00000004"]
    os.rename(original, original.with_name("moved.jsonl"))  # a rename is still followed, not read again
    append(original.with_name("moved.jsonl"), message_line("after the move", message_id="00000005"))
    moved = run(settings, agents)
    assert (moved.messages, moved.file_events["renamed"]) == (1, 1)


def test_a_hard_link_is_one_file(settings, agents):
    path = new_session(agents)
    append(path, message_line("once", message_id="00000001"))
    os.link(path, path.with_name("link.jsonl"))
    tally = run(settings, agents)
    assert tally.messages == 1 and tally.files_skipped["duplicate_identity"] == 1


def header_line(path) -> bytes:
    with open(path, "rb") as f:
        return f.readline()


_INVISIBLE_SAMPLES = "\u200b\u200c\u200d\u2060\u00ad\ufeff\u202a\u202e\u2066\u2069\U000e0041"


def test_nothing_invisible_is_sent_shown_or_stored_and_what_went_is_counted(settings, agents):
    """"Lis\\u200bbon" and "Lisbon" are one belief; no invisible character reaches the store or the dry run's output."""
    first = new_session(agents)
    append(first, message_line("I live in Lis\u200bbon now\u202e and I love it", message_id="u0000001"))
    second = new_session(agents)
    append(second, message_line("I live in Lisbon now and I love it", message_id="u0000002"))

    shown = distill("--json", "run", "--dry-run", "--show", "all", "--source", str(agents), check=True)
    assert not any(char in shown.stdout for char in _INVISIBLE_SAMPLES)

    tally = run(settings, agents)
    assert tally.invisible_chars == 2
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        statements = [s for (s,) in con.execute("SELECT statement FROM beliefs").fetchall()]
        quotes = [q for (q,) in con.execute("SELECT quote FROM evidence").fetchall()]
        runs = [c for (c,) in con.execute("SELECT counters FROM runs").fetchall()]
    lisbon = [s for s in statements if "Lisbon" in s]
    assert len(lisbon) == 1, statements
    assert not any(char in text for text in statements + quotes for char in _INVISIBLE_SAMPLES)
    assert any("invisible_chars" in str(counters) for counters in runs)
