"""Codex CLI rollouts (sources/codex): discovery, each turn read once in older and current builds, scaffolding
left out, rollbacks honoured, Codex's own memory sessions skipped, stable ids."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import duckdb
import pytest
from agent_lines import cx, cx_message, cx_meta, cx_scaffolding, cx_session, cx_turn, dumps
from conftest import append

from distiller.pipeline import run as pipeline
from distiller.sources import sniff
from distiller.sources.codex import discover, parse

SESSION = "019dd8e4-15dd-7143-95e8-219014341717"


def rollout(home: Path, data: bytes, name: str = f"rollout-2026-04-29T10-58-39-{SESSION}.jsonl") -> Path:
    day = home / "sessions" / "2026" / "04" / "29"
    day.mkdir(parents=True, exist_ok=True)
    path = day / name
    path.write_bytes(data)
    return path


def run(settings, *roots: Path):
    seen = []
    tally = pipeline.run_once(settings, list(roots), show=seen.append).tally
    return tally, seen


def test_discovery_takes_the_home_its_sessions_a_day_or_a_file(tmp_path, monkeypatch):
    home = tmp_path / "codex"
    path = rollout(home, cx_session(SESSION, [("hi", "hello")]))
    (path.parent / "rollout-2026-04-29T11-00-00-x.jsonl.zst").write_bytes(b"(\xb5/\xfd")
    for root in (home, home / "sessions", path.parent):
        assert [c.path for c in discover.discover([root], frozenset()).live] == [
            str(path), str(path.parent / "rollout-2026-04-29T11-00-00-x.jsonl.zst")]
    assert [c.path for c in discover.discover([path], frozenset()).live] == [str(path)]
    monkeypatch.setenv("CODEX_HOME", str(home))
    assert discover.default_source() == home / "sessions"
    assert sniff.sniff(path) == parse.FORMAT


@pytest.mark.parametrize("newer", [False, True], ids=["user_message", "item_completed"])
def test_each_turn_is_read_once_and_scaffolding_is_left_out(settings, tmp_path, newer):
    home = tmp_path / "codex"
    rollout(home, cx_session(SESSION, [("I moved to Lisbon in 2021 with my wife.", "Lisbon is lovely."),
                                       ("My favourite drink is green tea.", "Noted.")], newer=newer))

    tally, seen = run(settings, home)

    assert tally.messages == 4
    assert [(d.message.role, d.text) for d in seen] == [
        ("user", "I moved to Lisbon in 2021 with my wife."), ("assistant", "Lisbon is lovely."),
        ("user", "My favourite drink is green tea."), ("assistant", "Noted.")]
    assert tally.skipped["duplicate_turn"] == 4  # the second copy of each turn
    assert tally.skipped["developer"] == 1 and tally.skipped["scaffolding"] == 1
    assert tally.skipped["reasoning"] == 2 and tally.skipped["tool_call"] == 4
    assert "unknown_type" not in tally.skipped
    assert {d.message.message_id for d in seen} == {f"{SESSION}@{d.message.byte_start}" for d in seen}
    again, _ = run(settings, home)
    assert (again.files, again.messages) == (0, 0)


def test_metadata_names_the_parts_kinds(settings, tmp_path):
    labelled = cx_message("user", "<environment_context>x</environment_context>", "I teach chemistry in Porto.")
    labelled["metadata"] = {"content_kinds": ["environment_context", "user.text"]}
    rollout(tmp_path / "codex", dumps(cx_meta(SESSION), labelled))
    _, seen = run(settings, tmp_path / "codex")
    assert [d.text for d in seen] == ["I teach chemistry in Porto."]


def test_commentary_and_unknown_lines(settings, tmp_path):
    lines = [cx_meta(SESSION), cx_message("user", "Fix the build."),
             cx_message("assistant", "I'll look at the Makefile.", phase="commentary"),
             cx_message("assistant", "Fixed.", phase="final_answer"), cx("brand_new_kind", {"x": 1})]
    rollout(tmp_path / "codex", dumps(*lines))
    tally, seen = run(settings, tmp_path / "codex")
    assert [d.message.text for d in seen] == ["Fix the build.", "Fixed."]
    assert tally.skipped["commentary"] == 1 and tally.skipped["unknown_type"] == 1


def test_rolled_back_turns_are_not_evidence(settings, tmp_path):
    lines = [cx_meta(SESSION), *cx_turn("I live in Oslo.", "ok"), *cx_turn("I live in Bergen.", "ok"),
             cx("event_msg", {"type": "thread_rolled_back", "num_turns": 1}), *cx_turn("I live in Lisbon.", "ok")]
    rollout(tmp_path / "codex", dumps(*lines))
    tally, seen = run(settings, tmp_path / "codex")
    assert [d.message.text for d in seen if d.message.role == "user"] == ["I live in Oslo.", "I live in Lisbon."]
    assert tally.skipped["rolled_back"] == 2  # Bergen and its reply


def test_a_rollback_after_the_turn_was_read_is_counted(settings, tmp_path):
    path = rollout(tmp_path / "codex", dumps(cx_meta(SESSION), *cx_turn("I live in Bergen.", "ok")))
    run(settings, tmp_path / "codex")
    append(path, dumps(cx("event_msg", {"type": "thread_rolled_back", "num_turns": 1})))
    tally, _ = run(settings, tmp_path / "codex")
    assert tally.skipped["rolled_back_after_read"] == 2


@pytest.mark.parametrize("source", ["memory_consolidation", {"subagent": "memory_consolidation"}])
def test_codexs_own_memory_sessions_are_skipped_whole(settings, tmp_path, source):
    """The self-ingestion guard: a memory-consolidation session is skipped whole, though its source is a
    subagent's too, and whatever `read_subagents` says."""
    for read_subagents in (True, False):
        rollout(tmp_path / "codex", dumps(cx_meta(SESSION, source=source), *cx_turn("I live in Oslo.", "ok")))
        _, seen = run(replace(settings, read_subagents=read_subagents,
                              state_dir=settings.state_dir / str(read_subagents)), tmp_path / "codex")
        assert seen and {(d.decision, d.reason) for d in seen} == {("drop", "memory-consolidation-session")}


SUBAGENT_HEADERS = [{"source": {"subagent": {"thread_spawn": {"parent_thread_id": "p", "depth": 1}}}},
                    {"source": {"subagent": "review"}}, {"source": "exec", "thread_source": "subagent"},
                    {"source": "cli", "parent_thread_id": "019dd8e4-0000-7000-8000-000000000000"}]


@pytest.mark.parametrize("header", SUBAGENT_HEADERS, ids=["thread_spawn", "review", "thread_source", "legacy"])
def test_a_subagents_rollout_is_read_as_the_same_agent_its_turns_context_only(settings, tmp_path, header):
    rollout(tmp_path / "codex", dumps(cx_meta(SESSION, **header), *cx_turn("I live in Oslo and I teach.", "ok")))
    _, seen = run(settings, tmp_path / "codex")
    assert [(d.message.role, d.message.agent, d.message.inter_session, d.decision, d.reason) for d in seen] == [
        ("user", "codex", True, "context", "inter-session"), ("assistant", "codex", True, "context", "inter-session")]


def test_read_subagents_off_skips_a_subagents_rollout_whole(settings, tmp_path):
    rollout(tmp_path / "codex", dumps(cx_meta(SESSION, **SUBAGENT_HEADERS[0]), *cx_turn("I live in Oslo.", "ok")))
    _, seen = run(replace(settings, read_subagents=False), tmp_path / "codex")
    assert seen and {(d.decision, d.reason) for d in seen} == {("drop", "subagent-session")}


def test_a_run_resuming_inside_a_subagents_rollout_still_marks_it(settings, tmp_path):
    """The mark comes from the first line, which a run that resumes mid-file does not read as a line."""
    path = rollout(tmp_path / "codex", dumps(cx_meta(SESSION, **SUBAGENT_HEADERS[0]), *cx_turn("Look at x.", "ok")))
    run(settings, tmp_path / "codex")
    append(path, dumps(*cx_turn("I live in Oslo and I teach chemistry.", "noted")))
    _, seen = run(settings, tmp_path / "codex")
    assert [(d.message.inter_session, d.decision) for d in seen] == [(True, "context"), (True, "context")]
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM ingested WHERE NOT inter_session").fetchone() == (0,)


def test_the_shortcut_agrees_with_parsing(tmp_path):
    """skip_line names a line only where to_message gives the same reason."""
    import orjson
    for line in [*cx_turn("a", "b"), *cx_turn("c", "d", newer=True), *cx_scaffolding(), cx_meta(SESSION)]:
        data = orjson.dumps(line)
        quick = parse.skip_line(data)
        parsed = parse.to_message(orjson.loads(data), agent="a", session_id="s", file="f", byte_start=0,
                                  byte_end=1)
        if quick is not None:
            assert parsed == quick, line


def _zst(data: bytes, content_size: bool = True) -> bytes:
    import zstandard
    return zstandard.ZstdCompressor(write_content_size=content_size).compress(data)


@pytest.mark.parametrize("content_size", [True, False])
def test_a_compressed_rollout_is_read_whole_once(settings, tmp_path, content_size):
    plain = cx_session(SESSION, [("I moved to Lisbon in 2021 with my wife.", "ok"), ("I teach chemistry.", "ok")])
    path = rollout(tmp_path / "codex", _zst(plain, content_size), f"rollout-2026-04-29T10-58-39-{SESSION}.jsonl.zst")
    assert sniff.sniff(path) == parse.FORMAT
    tally, seen = run(settings, tmp_path / "codex")
    assert tally.files == 1 and tally.messages == 4 and tally.bytes_read == len(plain)
    again, _ = run(settings, tmp_path / "codex")
    assert (again.files, again.messages, again.bytes_read) == (0, 0, 0)
    given, _ = run(settings, path)  # the file itself as the source: still the one cursor
    assert given.messages == 0
    assert {d.message.message_id for d in seen} == {f"{SESSION}@{d.message.byte_start}" for d in seen}


def test_a_rollout_compressed_after_it_was_read_is_not_counted_twice(settings, tmp_path):
    plain = cx_session(SESSION, [("I moved to Lisbon in 2021 with my wife.", "ok")])
    path = rollout(tmp_path / "codex", plain)
    first, _ = run(settings, tmp_path / "codex")
    assert first.messages == 2
    squeezed = path.with_name(path.name + ".zst")
    squeezed.write_bytes(_zst(plain))
    path.unlink()
    later, _ = run(settings, tmp_path / "codex")
    assert later.messages == 0  # the same ids: the ledger has them
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM ingested").fetchone()[0] == 2


def test_the_plain_file_wins_and_a_corrupt_one_is_counted(settings, tmp_path):
    plain = cx_session(SESSION, [("I teach chemistry.", "ok")])
    path = rollout(tmp_path / "codex", plain)
    path.with_name(path.name + ".zst").write_bytes(_zst(plain))
    rollout(tmp_path / "codex", b"(\xb5/\xfd garbage", "rollout-2026-04-29T11-00-00-bad.jsonl.zst")
    tally, _ = run(settings, tmp_path / "codex")
    assert tally.messages == 2 and tally.files_skipped["corrupt_compressed"] == 1


GOLDEN = Path(__file__).parent / "fixtures" / "codex"


def test_a_rollout_written_by_the_real_cli_is_read_as_typed(settings, tmp_path):
    """Written by codex-cli 0.171.0 itself (`codex exec`, then `codex exec resume --last`, against a fake
    Responses API: tests/golden/record_codex.py): each turn once, the scaffolding left out."""
    (golden,) = sorted(GOLDEN.glob("rollout-*.jsonl"))
    assert sniff.sniff(golden) == parse.FORMAT
    rollout(tmp_path / "codex", golden.read_bytes(), golden.name)

    tally, seen = run(settings, tmp_path / "codex")

    assert [(d.message.role, d.text) for d in seen] == [
        ("user", "I moved to Lisbon in 2021 with my wife, and I teach chemistry at a high school."),
        ("assistant", "Lisbon is lovely."), ("user", "My favourite drink is green tea."),
        ("assistant", "Noted: green tea.")]
    assert tally.skipped["developer"] == 1 and tally.skipped["scaffolding"] == 1
    assert tally.skipped["duplicate_turn"] == 4 and "unknown_type" not in tally.skipped
    assert tally.lines == len(golden.read_bytes().splitlines())


def test_a_subagents_rollout_shaped_like_the_real_cli_s(settings, tmp_path):
    """Hand-written (the CLI cannot be made to spawn a subagent here): the golden rollout with a subagent's
    header, as codex-cli writes a spawned thread's (`source: {"subagent": {"thread_spawn": …}}`, `thread_source:
    "subagent"`). Read beside its parent: the same agent, the parent's turns evidence, the subagent's context."""
    (golden,) = sorted(GOLDEN.glob("rollout-*.jsonl"))
    (spawned,) = sorted((GOLDEN.parent / "codex-subagent").glob("rollout-*.jsonl"))
    assert sniff.sniff(spawned) == parse.FORMAT
    rollout(tmp_path / "codex", golden.read_bytes(), golden.name)
    rollout(tmp_path / "codex", spawned.read_bytes(), spawned.name)

    _, seen = run(settings, tmp_path / "codex")

    by_file: dict[str, set] = {}
    for d in seen:
        by_file.setdefault(Path(d.message.file).name, set()).add((d.message.agent, d.message.inter_session))
    assert by_file == {golden.name: {("codex", False)}, spawned.name: {("codex", True)}}
    assert {d.reason for d in seen if d.message.inter_session} == {"inter-session"}
    assert len([d for d in seen if Path(d.message.file).name == spawned.name]) == 4
