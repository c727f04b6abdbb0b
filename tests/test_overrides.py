"""Per-file format overrides (sources/overrides.py): the `format_overrides` setting and `--format`, checked against
the registry, honoured by discovery and by a file given as --source, never misreading a file another format wrote."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from agent_lines import TRANSCRIPTS, cc_assistant_blocks, cc_user, cx, cx_session, dumps
from click.testing import CliRunner

from distiller import sources
from distiller.cli import cli
from distiller.sources.overrides import BadOverride, compile_pattern, forced, make

SESSION = "5e55a0b1-0000-4000-8000-0000000000aa"
NAMES = ["openclaw", "claude-code", "codex", "gemini"]


@pytest.mark.parametrize("pattern, matches, misses", [
    ("/a/b", ["/a/b", "/a/b/c.jsonl", "/a/b/d/e.jsonl"], ["/a/bc", "/a"]),
    ("/a/b/", ["/a/b/c.jsonl"], ["/a/bc"]),
    ("/a/*.jsonl", ["/a/x.jsonl", "/a/.jsonl"], ["/a/d/x.jsonl", "/a/x.json"]),
    ("/a/**/rollout-*.jsonl", ["/a/rollout-1.jsonl", "/a/2026/04/rollout-1.jsonl"], ["/a/x/r.jsonl"]),
    ("/a/**", ["/a/x", "/a/x/y"], ["/b/x"]),
    ("/a/s?.jsonl", ["/a/s1.jsonl"], ["/a/s12.jsonl", "/a/s/.jsonl"]),
    ("/a/[!x]*", ["/a/y"], ["/a/x", "/a/xy"]),
    ("/a/[]x]", ["/a/]", "/a/x"], ["/a/y"]),
    ("/a/[*]", ["/a/*"], ["/a/b"]),
])
def test_a_pattern_matches_what_it_says(pattern, matches, misses):
    regex = compile_pattern(pattern)
    assert [p for p in matches if not regex.fullmatch(p)] == []
    assert [p for p in misses if regex.fullmatch(p)] == []


def test_home_is_expanded_and_the_first_matching_override_decides(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    table = [make("~/x/special.jsonl", "gemini", NAMES), make("~/x", "codex", NAMES)]
    assert forced(str(tmp_path / "x" / "special.jsonl"), table) == "gemini"
    assert forced(str(tmp_path / "x" / "other.jsonl"), table) == "codex"
    assert forced(str(tmp_path / "y.jsonl"), table) is None


@pytest.mark.parametrize("pattern, fmt, why", [
    ("logs/*.jsonl", "codex", "is relative"), ("", "codex", "empty"), ("/a/[b", "codex", "without its ']'"),
    ("/a/b\n", "codex", "control character"), ("/a", "claude", "no such format"),
])
def test_a_bad_override_says_why(pattern, fmt, why):
    with pytest.raises(BadOverride, match=why.replace("[", r"\[")):
        make(pattern, fmt, NAMES)


def invoke(tmp_path: Path, *args: str, config: str | None = None, env: dict | None = None):
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    if config is not None:
        (state / "distill.toml").write_text(config)
    return CliRunner().invoke(cli, ["--state-dir", str(state), *args], env=env)


@pytest.mark.parametrize("config, said", [
    ('[format_overrides]\n"/x/**" = "claude"\n', "no such format (known: openclaw, claude-code, codex, gemini)"),
    ('[format_overrides]\n"x/**" = "codex"\n', "is relative"),
    ('[format_overrides]\n"/x/[ab" = "codex"\n', "without its ']'"),
    ('format_overrides = "codex"\n', "allowed: a table of absolute path patterns"),
    ('skip_formats = ["claude_code"]\n', "allowed: a list of format names (openclaw, claude-code, codex, gemini)"),
])
def test_a_bad_setting_is_a_clear_error_naming_the_setting(tmp_path, config, said):
    result = invoke(tmp_path, "run", "--dry-run", config=config)
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert "setting 'format_overrides'" in result.stderr or "setting 'skip_formats'" in result.stderr
    assert said in result.stderr


def test_the_setting_from_the_environment_and_as_config_shows_it(tmp_path):
    result = invoke(tmp_path, "--json", "config", "show",
                    env={"DISTILL_FORMAT_OVERRIDES": "/x/**=codex, /y/*.jsonl=gemini"})
    assert result.exit_code == 0, result.stderr
    shown = {s["name"]: s for s in orjson.loads(result.stdout)["settings"]}["format_overrides"]
    assert shown["value"] == {"/x/**": "codex", "/y/*.jsonl": "gemini"}
    assert shown["origin"] == "env DISTILL_FORMAT_OVERRIDES"
    bad = invoke(tmp_path, "status", env={"DISTILL_FORMAT_OVERRIDES": "/x/**"})
    assert bad.exit_code == 1 and "from env DISTILL_FORMAT_OVERRIDES" in bad.stderr


@pytest.mark.parametrize("args, said", [
    (["--format", "claude"], "--format 'claude': no such format (known: openclaw, claude-code, codex, gemini)"),
    (["--format", "codex"], "--format needs --source"),
])
@pytest.mark.parametrize("command", ["run", "reprocess"])
def test_a_bad_format_flag_is_a_usage_error(tmp_path, args, said, command):
    result = invoke(tmp_path, command, "--dry-run", *args)
    assert result.exit_code == 2 and said in result.stderr and "Traceback" not in result.stderr


def unknown_first_line_claude_code(path: Path) -> Path:
    """A Claude Code transcript whose first line is of a type a newer build writes and no format knows yet."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(dumps({"type": "session-banner", "sessionId": SESSION, "version": "9.0.0"},
                           cc_user(SESSION, "I moved to Lisbon in 2021 with my wife."),
                           *cc_assistant_blocks(SESSION, {"type": "text", "text": "Lisbon is lovely."})))
    return path


def run_json(tmp_path: Path, *args: str, config: str | None = None) -> dict:
    result = invoke(tmp_path, "--json", "run", "--dry-run", *args, config=config)
    assert result.exit_code == 0, result.stderr
    return orjson.loads(result.stdout)


def test_a_file_no_format_recognises_is_read_as_the_override_names(tmp_path):
    project = tmp_path / "claude" / "projects" / "-Users-alice-app"
    path = unknown_first_line_claude_code(project / f"{SESSION}.jsonl")

    plain = run_json(tmp_path, "--source", str(project))
    assert plain["messages"] == 0 and plain["files_skipped"] == {"unsupported_format": 1}

    by_setting = run_json(tmp_path, "--source", str(project),
                          config=f'[format_overrides]\n"{project}/*.jsonl" = "claude-code"\n')
    by_flag = run_json(tmp_path, "--source", str(path), "--format", "claude-code")
    for summary in (by_setting, by_flag):
        assert summary["messages"] == 2 and summary["files_skipped"] == {}
        assert summary["skipped"].get("unknown_type") == 1  # the banner line, counted by its reason


def test_a_file_another_format_wrote_is_not_misread_but_counted(tmp_path):
    day = tmp_path / "codex" / "sessions" / "2026" / "04" / "29"
    day.mkdir(parents=True)
    (day / f"rollout-2026-04-29T10-58-39-{SESSION}.jsonl").write_bytes(
        cx_session(SESSION, [("I live in Oslo.", "ok")]))
    for args, config in [(["--format", "gemini"], None),
                         ([], f'[format_overrides]\n"{tmp_path}/codex/**" = "openclaw"\n')]:
        summary = run_json(tmp_path, "--source", str(tmp_path / "codex"), *args, config=config)
        assert summary["messages"] == 0 and summary["files_skipped"] == {"format_override_mismatch": 1}


def test_discovery_finds_a_file_in_another_layout_as_the_forced_format_s(tmp_path):
    """Codex rollouts copied into a flat dir of other names, opening with a line of a kind a newer build writes
    first: Claude Code's layout finds them (a project of *.jsonl), no format's first line settles them; the
    override makes them Codex's, with Codex's agent."""
    flat = tmp_path / "exports"
    flat.mkdir()
    banner = dumps(cx("world_state", {"full": True}))
    (flat / "one.jsonl").write_bytes(banner + cx_session(SESSION, [("I live in Oslo.", "ok")]))
    found = sources.discover([flat], (), overrides=[(f"{flat}/**", "codex")])
    assert [(c.format, c.agent, c.forced) for c in found.live] == [("codex", "codex", True)]
    assert run_json(tmp_path, "--source", str(flat))["files_skipped"] == {"unsupported_format": 1}
    summary = run_json(tmp_path, "--source", str(flat), "--format", "codex")
    assert summary["messages"] == 2 and summary["files_skipped"] == {}


def test_an_override_a_format_does_not_take_is_counted(tmp_path):
    """Gemini's discovery takes only `.jsonl` files: a forced file of another name is counted, not dropped
    silently, and neither read as the format that found it."""
    day = tmp_path / "codex" / "sessions" / "2026" / "04" / "29"
    day.mkdir(parents=True)
    (day / "rollout-x.jsonl.zst").write_bytes(b"(\xb5/\xfd")
    found = sources.discover([tmp_path / "codex"], (), overrides=[(f"{tmp_path}/codex", "gemini")])
    assert found.live == [] and found.skipped["format_override_not_taken"] == 1


@pytest.mark.parametrize("name", sorted(TRANSCRIPTS))
def test_an_override_naming_a_files_own_format_changes_nothing(tmp_path, name):
    """The override path reads exactly what the plain path does for a file it settles the same way."""
    below, filename, data = TRANSCRIPTS[name](5)
    home = {"claude-code": tmp_path / "claude" / "projects", "codex": tmp_path / "codex",
            "gemini": tmp_path / "gemini-home" / ".gemini" / "tmp"}[name]
    path = home / below / filename
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    plain = run_json(tmp_path, "--source", str(home))
    other = tmp_path / "again"
    other.mkdir()
    overridden = run_json(other, "--source", str(home), "--format", name)
    assert plain["messages"] > 0
    assert {k: plain[k] for k in ("messages", "skipped", "files_skipped", "cleaned")} == {
        k: overridden[k] for k in ("messages", "skipped", "files_skipped", "cleaned")}
    assert os.path.exists(path)


def test_doctor_says_how_many_files_an_override_reads(tmp_path):
    flat = tmp_path / "exports"
    flat.mkdir()
    (flat / "one.jsonl").write_bytes(dumps(cx("world_state", {"full": True})) + cx_session(SESSION, [("hi", "ok")]))
    result = invoke(tmp_path, "--json", "doctor", "--source", str(flat),
                    config=f'[format_overrides]\n"{flat}" = "codex"\n')
    checks = [c for c in orjson.loads(result.stdout)["checks"] if c["name"] == "sources"]
    assert any("(Codex 1; 1 of them as format_overrides names)" in c["detail"] for c in checks), checks
