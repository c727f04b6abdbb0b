"""The Claude Code hook in real processes: its output, its silence on any failure, a store held by a run, and the
settings it installs and uninstalls without touching anything else."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

import duckdb
import orjson
import pytest
from click.testing import CliRunner

from distiller.cli import cli
from distiller.records import Belief, EvidenceItem
from distiller.store import writes as store
from distiller.store.db import connect, transaction

NOW = datetime(2026, 3, 10, tzinfo=UTC)


def _belief(statement: str, message: str, category: str = "fact", day: int = 1) -> Belief:
    evidence = EvidenceItem(message, "s1", "main", "/agents/main/sessions/s1.jsonl", 0, 10,
                            f"2026-03-{day:02d}T10:00:00Z", statement[:10])
    return Belief(statement, category, "user", "", 0.9, "explicit", 5, "medium", None, "agent:main", (evidence,),
                  "rules", None, "p1")


@pytest.fixture
def state(tmp_path):
    state = tmp_path / "state"
    with connect(state / "distill.duckdb") as con, transaction(con):
        store.upsert(con, [_belief("The user lives in Lisbon", "m1"), _belief("The user owns a sailing boat", "m2"),
                           _belief("The user is a nurse", "m3", "identity"),
                           *(_belief(f"The user visited city number {n}", f"c{n}", day=5) for n in range(6))],
                     "r1", now=NOW)
    return state


def hook(state, event: bytes, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "distiller", "hook", "claude-code", "--state-dir", str(state), *args],
                          input=event, capture_output=True, timeout=60)


def test_the_hook_adds_the_recall_block_as_context(state):
    done = hook(state, orjson.dumps({"session_id": "x", "cwd": "/tmp", "hook_event_name": "UserPromptSubmit",
                                     "prompt": "should I take the boat out?"}), "--limit-core", "ignored")
    assert done.returncode == 0 and done.stderr == b""
    out = orjson.loads(done.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "UserPromptSubmit"
    assert out["additionalContext"].startswith("<bee-recall>\n") and "sailing boat" in out["additionalContext"]
    # the CLI's own path answers the same
    via_click = CliRunner().invoke(cli, ["--state-dir", str(state), "hook", "claude-code"],
                                   input=orjson.dumps({"prompt": "should I take the boat out?"}))
    assert via_click.exit_code == 0 and orjson.loads(via_click.output) == orjson.loads(done.stdout)


@pytest.mark.parametrize("event", [b"", b"not json", b"[1, 2]", b'{"prompt": 7}', b"\xff\xfe"])
def test_bad_input_never_fails_the_prompt(state, event):
    done = hook(state, event)
    assert done.returncode == 0 and done.stderr == b""
    if done.stdout:  # a prompt that is not text: recall without it
        assert "hookSpecificOutput" in orjson.loads(done.stdout)
    else:
        assert "no context" in (state / "hook.log").read_text()


def test_a_missing_or_damaged_store_gives_no_context_and_one_log_line(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    assert hook(state, b'{"prompt": "hi"}').stdout == b""
    (state / "distill.duckdb").write_bytes(b"this is not a database" * 100)
    done = hook(state, b'{"prompt": "hi"}')
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert len((state / "hook.log").read_text().splitlines()) == 2
    assert not (tmp_path / "elsewhere").exists()
    assert hook(tmp_path / "elsewhere", b'{"prompt": "hi"}').returncode == 0  # not even a state dir


def test_answers_come_from_the_snapshot_while_it_matches_and_from_the_store_after_a_write(state):
    first = hook(state, b'{"prompt": "boat"}').stdout
    assert (state / "recall-snapshot.json").exists() and b"sailing boat" in first
    assert hook(state, b'{"prompt": "boat"}').stdout == first
    with connect(state / "distill.duckdb") as con, transaction(con):
        store.upsert(con, [_belief("The user sold the sailing boat in March", "m9", day=9)], "r2", now=NOW)
    assert b"sold the sailing boat" in hook(state, b'{"prompt": "boat"}').stdout


def test_while_a_run_holds_the_store_the_last_snapshot_answers(state):
    first = hook(state, b'{"prompt": "boat"}').stdout
    writer = duckdb.connect(str(state / "distill.duckdb"))  # a run's connection: no reader gets in beside it
    try:
        writer.execute("CREATE TABLE scratch AS SELECT 1")  # the files change: the snapshot is not current
        done = hook(state, b'{"prompt": "boat"}')
    finally:
        writer.close()
    assert done.returncode == 0 and done.stdout == first
    assert "store busy, the last snapshot given" in (state / "hook.log").read_text()


def settings_file(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    return tmp_path / "claude" / "settings.json"


def invoke(state, *args):
    return CliRunner().invoke(cli, ["--state-dir", str(state), *args])


def test_install_keeps_every_other_hook_and_setting_and_uninstall_removes_only_ours(tmp_path, monkeypatch, state):
    path = settings_file(tmp_path, monkeypatch)
    path.parent.mkdir()
    theirs = {"model": "opus", "hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "~/bin/branch-context.sh"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}]}}
    path.write_bytes(orjson.dumps(theirs))
    path.chmod(0o640)
    done = invoke(state, "hook", "install", "claude-code", "--agent", "main", "--json")
    assert done.exit_code == 0, done.output
    assert invoke(state, "hook", "install", "claude-code", "--agent", "main").exit_code == 0  # twice = once
    installed = orjson.loads(path.read_bytes())
    groups = installed["hooks"]["UserPromptSubmit"]
    assert groups[0] == theirs["hooks"]["UserPromptSubmit"][0] and len(groups) == 2
    (ours,) = groups[1]["hooks"]
    assert "hook claude-code --state-dir" in ours["command"] and "--agent main" in ours["command"]
    assert installed["model"] == "opus" and installed["hooks"]["PreToolUse"] == theirs["hooks"]["PreToolUse"]
    assert path.stat().st_mode & 0o777 == 0o640
    assert invoke(state, "hook", "uninstall", "claude-code").exit_code == 0
    assert orjson.loads(path.read_bytes()) == theirs
    assert "not installed" in invoke(state, "hook", "uninstall", "claude-code").output


def test_the_installed_command_runs(tmp_path, monkeypatch, state):
    path = settings_file(tmp_path, monkeypatch)
    assert invoke(state, "hook", "install", "claude-code").exit_code == 0
    command = orjson.loads(path.read_bytes())["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    done = subprocess.run(command, shell=True, input=b'{"prompt": "boat"}', capture_output=True, timeout=60)
    assert done.returncode == 0 and b"sailing boat" in done.stdout


def test_install_refuses_a_settings_file_it_cannot_read_as_an_object(tmp_path, monkeypatch, state):
    path = settings_file(tmp_path, monkeypatch)
    path.parent.mkdir()
    for text in (b"{not json", b"[]"):
        path.write_bytes(text)
        done = invoke(state, "hook", "install", "claude-code")
        assert done.exit_code == 1 and "nothing was changed" in done.output and path.read_bytes() == text


def test_forgetting_deletes_the_recall_caches(state):
    assert b"sailing boat" in hook(state, b'{"prompt": "boat"}').stdout
    assert invoke(state, "profile").exit_code == 0
    assert (state / "recall-snapshot.json").exists() and (state / "profile.json").exists()
    done = invoke(state, "beliefs", "forget", "--match", "sailing boat", "--yes")
    assert done.exit_code == 0, done.output
    assert not (state / "recall-snapshot.json").exists() and not (state / "profile.json").exists()
    assert b"sailing" not in hook(state, b'{"prompt": "boat"}').stdout


def test_a_run_refreshes_the_snapshot_the_hook_uses(state, tmp_path):
    from conftest import append, message_line, new_session

    hook(state, b'{"prompt": "boat"}')
    agents = tmp_path / "agents"
    append(new_session(agents), message_line("I live in Porto and I work as a nurse at the city hospital."))
    done = CliRunner().invoke(cli, ["--state-dir", str(state), "run", "--source", str(agents)])
    assert done.exit_code == 0, done.output
    from distiller.recall import snapshot

    assert snapshot.load(state, state / "distill.duckdb") is not None  # current: the next prompt needs no DuckDB
    assert b"Porto" in hook(state, b'{"prompt": "where do I live? porto"}').stdout
