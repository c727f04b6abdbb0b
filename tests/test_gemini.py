"""Gemini CLI chat recordings (sources/gemini): discovery, records rewritten under one id read once, notices and
metadata skipped, `$rewindTo` honoured, the older single-.json sessions named and skipped."""

from __future__ import annotations

from pathlib import Path

from agent_lines import dumps, gm_header, gm_message, gm_session
from conftest import append

from distiller.pipeline import run as pipeline
from distiller.sources import sniff
from distiller.sources.gemini import discover, parse

SESSION = "a1b2c3d4-e5f6-7890-abcd-ef1234567890"


def chat(home: Path, data: bytes, name: str = "session-2026-10-02T10-00-a1b2c3d4.jsonl") -> Path:
    chats = home / "tmp" / ("9f2c" * 16) / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    path = chats / name
    path.write_bytes(data)
    return path


def run(settings, *roots: Path):
    seen = []
    tally = pipeline.run_once(settings, list(roots), show=seen.append).tally
    return tally, seen


def test_discovery_and_the_legacy_json_sessions(tmp_path, monkeypatch):
    home = tmp_path / ".gemini"
    path = chat(home, gm_session(SESSION, [("hi", "hello")]))
    (path.parent / "session-2025-07-01T10-00-deadbeef.json").write_text('{"sessionId": "x", "messages": []}')
    (path.parent / SESSION).mkdir()
    (path.parent / SESSION / "sub-1.jsonl").write_bytes(dumps(gm_header("sub-1")))
    for root in (home, home / "tmp", path.parent.parent, path.parent, path):
        assert [c.path for c in discover.discover([root], frozenset()).live] == [str(path)], root
    found = discover.discover([home], frozenset())
    assert found.skipped["legacy_json_session"] == 1 and found.skipped["subagent"] == 1
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path))
    assert discover.default_source() == home / "tmp"
    assert sniff.sniff(path) == parse.FORMAT


def test_each_message_once_whatever_its_rewrites(settings, tmp_path):
    chat(tmp_path / ".gemini", gm_session(SESSION, [("I moved to Lisbon in 2021 with my wife.", "Lovely."),
                                                    ("My favourite drink is green tea.", "Noted.")]))
    tally, seen = run(settings, tmp_path / ".gemini")
    assert [(d.message.role, d.message.text) for d in seen] == [
        ("user", "I moved to Lisbon in 2021 with my wife."), ("assistant", "Lovely."),
        ("user", "My favourite drink is green tea."), ("assistant", "Noted.")]
    assert tally.skipped["metadata"] == 3  # the header and two $set patches
    again, _ = run(settings, tmp_path / ".gemini")
    assert (again.files, again.messages) == (0, 0)


def test_notices_and_what_the_user_typed(settings, tmp_path):
    lines = [gm_header(SESSION), gm_message("info", "Logged in with Google."),
             gm_message("user", [{"text": "Summarise @notes.md"}, {"text": "--- notes.md ---\nI live in Oslo."}],
                        displayContent=[{"text": "Summarise @notes.md"}]),
             gm_message("gemini", "", toolCalls=[{"id": "t1", "name": "read_file"}]),
             {"$set": {"messages": [gm_message("user", "I live in Oslo.")]}}]
    chat(tmp_path / ".gemini", dumps(*lines))
    tally, seen = run(settings, tmp_path / ".gemini")
    assert [d.message.text for d in seen] == ["Summarise @notes.md"]
    assert tally.skipped["notice"] == 1 and tally.skipped["no_text"] == 1


def test_rewound_messages_are_not_evidence(settings, tmp_path):
    a, b, c = "m-a", "m-b", "m-c"
    lines = [gm_header(SESSION), gm_message("user", "I live in Oslo.", a), gm_message("gemini", "ok", b),
             gm_message("user", "I live in Bergen.", c), gm_message("gemini", "ok", "m-d"), {"$rewindTo": c},
             gm_message("user", "I live in Lisbon.", "m-e")]
    chat(tmp_path / ".gemini", dumps(*lines))
    tally, seen = run(settings, tmp_path / ".gemini")
    assert [d.message.text for d in seen if d.message.role == "user"] == ["I live in Oslo.", "I live in Lisbon."]
    assert tally.skipped["rolled_back"] == 2


def test_a_rewind_after_the_messages_were_read_is_counted(settings, tmp_path):
    path = chat(tmp_path / ".gemini", dumps(gm_header(SESSION), gm_message("user", "I live in Bergen.", "m-c")))
    run(settings, tmp_path / ".gemini")
    append(path, dumps({"$rewindTo": "m-c"}))
    tally, _ = run(settings, tmp_path / ".gemini")
    assert tally.skipped["rolled_back_after_read"] == 1


GOLDEN = Path(__file__).parent / "fixtures" / "gemini"


def test_a_recording_written_by_the_real_cli_is_read_as_typed(settings, tmp_path):
    """Written by Gemini CLI 0.61.0 itself (`gemini -p`, then `--resume latest`, against a fake Gemini API:
    tests/golden/record_gemini.py): the turns as typed; the session context in `$set.messages` and the header
    written again on resume are not turns."""
    (golden,) = sorted(GOLDEN.glob("session-*.jsonl"))
    assert sniff.sniff(golden) == parse.FORMAT
    chat(tmp_path / ".gemini", golden.read_bytes(), golden.name)

    tally, seen = run(settings, tmp_path / ".gemini")

    assert [(d.message.role, d.text) for d in seen] == [
        ("user", "I moved to Lisbon in 2021 with my wife, and I teach chemistry at a high school."),
        ("assistant", "Lisbon is lovely."), ("user", "My favourite drink is green tea."),
        ("assistant", "Noted: green tea.")]
    assert set(tally.skipped) == {"metadata"} and tally.lines == len(golden.read_bytes().splitlines())


def test_the_shortcut_agrees_with_parsing():
    """skip_line names a line only where to_message gives the same reason (the golden file's lines included)."""
    import orjson
    lines = [orjson.dumps(entry) for entry in (gm_header(SESSION), gm_message("user", "hi"), {"$set": {"x": 1}},
                                               {"$set": {"messages": [gm_message("user", "hi")]}},
                                               {"$rewindTo": "a"})]
    lines += min(GOLDEN.glob("session-*.jsonl")).read_bytes().splitlines()
    for data in lines:
        quick = parse.skip_line(data)
        if quick is not None:
            assert parse.to_message(orjson.loads(data), agent="a", session_id="s", file="f", byte_start=0,
                                    byte_end=1) == quick, data[:80]
    assert sum(parse.skip_line(data) is not None for data in lines) >= 5
