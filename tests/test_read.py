"""The reader on damaged bytes and other encodings: nothing a transcript says is lost as line-by-line garbage."""

from __future__ import annotations

import os

import orjson
from conftest import append, distill, header, ingested, ingested_ids, message_line, new_session

from distiller.pipeline.read import loads


def run_json(*args: str) -> dict:
    result = distill("--json", "run", "--extractor", "rules", *args)
    assert result.returncode == 0, result.stderr
    return orjson.loads(result.stdout)


def status_json() -> dict:
    result = distill("--json", "status")
    assert result.returncode == 0, result.stderr
    return orjson.loads(result.stdout)


def sessions_dir(agents):
    path = agents / "main" / "sessions"
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_a_utf16_or_utf32_transcript_is_skipped_whole_by_name_never_read_as_garbage(agents):
    text = (header("s-wide").decode() + "\n" + message_line("I live in Lisbon", message_id="w1").decode())
    folder = sessions_dir(agents)
    (folder / "a.jsonl").write_bytes(text.encode("utf-16"))  # with a byte order mark
    (folder / "b.jsonl").write_bytes(text.encode("utf-16-le"))  # without
    (folder / "c.jsonl").write_bytes(text.encode("utf-32-be"))
    summary = run_json()
    assert summary["files_skipped"] == {"encoding_utf16": 2, "encoding_utf32": 1}
    assert summary["malformed"] == 0 and summary["lines"] == 0


def test_a_utf8_byte_order_mark_keeps_the_header_and_its_session_id(agents, settings):
    path = sessions_dir(agents) / "named-by-file.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + header("s-from-header") + b"\n"
                     + message_line("I live in Lisbon", message_id="b1"))
    summary = run_json()
    assert summary["malformed"] == 0 and summary["messages"] == 1
    assert ingested(settings) == [("s-from-header", "b1")]


def test_an_unpaired_surrogate_escape_keeps_the_message_with_the_surrogate_replaced(agents, settings):
    path = new_session(agents)
    line = message_line("I live in Lisbon PLACEHOLDER", message_id="sur1").replace(b"PLACEHOLDER", b"\\ud800")
    append(path, line)
    summary = run_json()
    assert summary["malformed"] == 0 and summary["messages"] == 1
    assert "sur1" in ingested_ids(settings)
    assert loads(b'{"a": "x\\udc00y", "b": ["\\ud83d\\ude00"]}') == {"a": "x\ufffdy", "b": ["\U0001F600"]}


def test_a_nul_filled_tail_is_passed_and_the_line_appended_after_it_is_read(agents, settings):
    path = new_session(agents)
    append(path, message_line("I live in Lisbon", message_id="n1"))
    append(path, b"\x00" * 5000)  # a crashed writer's preallocated tail
    first = run_json()
    assert first["messages"] == 1 and first["skipped"].get("nul_run") == 1
    assert status_json()["bytes_behind"] == 0
    append(path, message_line("I play the cello", message_id="n2"))
    second = run_json()
    assert second["messages"] == 1 and second["malformed"] == 0
    assert ingested_ids(settings) == ["n1", "n2"]


def test_nuls_before_a_line_in_one_read_are_stripped_not_fatal(agents, settings):
    path = new_session(agents)
    append(path, b"\x00" * 3000 + message_line("I live in Lisbon", message_id="n3"))
    summary = run_json()
    assert summary["messages"] == 1 and summary["malformed"] == 0
    assert ingested_ids(settings) == ["n3"]


def test_a_sparse_hole_larger_than_the_line_cap_does_not_lose_the_line_after_it(agents, settings):
    path = new_session(agents)
    append(path, message_line("I live in Lisbon", message_id="h1"))
    with open(path, "r+b") as f:
        f.seek(0, os.SEEK_END)
        f.seek(64 * 1024 * 1024, os.SEEK_CUR)  # a 64 MiB hole, over a 1 MiB line cap
        f.write(message_line("I play the cello", message_id="h2"))
    config = settings.state_dir.parent / "distill.toml"
    config.write_text("max_line_bytes = 1048576\n")
    result = distill("--json", "--config", str(config), "run", "--extractor", "rules")
    assert result.returncode == 0, result.stderr
    summary = orjson.loads(result.stdout)
    assert summary["skipped"].get("oversized_line") is None and summary["messages"] == 2
    assert ingested_ids(settings) == ["h1", "h2"]


def test_an_all_nul_file_is_consumed_and_leaves_nothing_behind(agents):
    (sessions_dir(agents) / "zeros.jsonl").write_bytes(b"\x00" * 200_000)
    summary = run_json()
    assert summary["skipped"] == {"nul_run": 1} and summary["malformed"] == 0
    assert status_json()["bytes_behind"] == 0
    assert distill("doctor").returncode == 0
