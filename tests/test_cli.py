"""The CLI as users and schedulers meet it: exit codes, JSON on stdout, no tracebacks; real processes where the
process matters (locks, `python -m` and the console script, usage errors, shell completion, the time zone)."""

from __future__ import annotations

import fcntl
import re
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from conftest import distill, distill_process, invoke, new_session

from distiller import sources
from distiller.cli import cli

README = Path(__file__).resolve().parent.parent / "README.md"


def test_run_json_summary_and_status(tmp_path, agents):
    new_session(agents, n_messages=2)
    result = distill("--json", "run", "--source", str(agents), check=True)
    summary = orjson.loads(result.stdout)
    for key in ["files", "bytes_read", "lines", "messages", "malformed", "skipped"]:
        assert key in summary
    assert summary["messages"] == 2
    status = orjson.loads(distill("--json", "status", check=True).stdout)
    assert (status["files_tracked"], status["bytes_behind"], status["messages_ingested"]) == (1, 0, 2)
    assert status["last_run"]["status"] == "ok"


def test_default_source_is_openclaw_state_dir(agents):
    new_session(agents, n_messages=1)
    assert orjson.loads(distill("--json", "run", check=True).stdout)["messages"] == 1


def test_python_dash_m_and_console_script_agree(agents):
    script = Path(sys.executable).parent / "distill"
    if not script.exists():
        pytest.skip("console script not installed in this environment")
    via_module = distill_process("--help").stdout
    via_script = subprocess.run([str(script), "--help"], capture_output=True, text=True).stdout
    assert via_module == via_script


def test_second_concurrent_run_exits_75_and_touches_nothing(tmp_path, agents):
    new_session(agents, n_messages=1)
    state = tmp_path / "state"
    state.mkdir()
    with open(state / "lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("4242\n")
        held.flush()
        result = distill_process("run", "--source", str(agents))
    assert result.returncode == 75
    assert "another distill run is in progress" in result.stderr
    assert not (state / "distill.duckdb").exists()


def test_two_runs_started_together_one_waits_out(tmp_path, agents):
    for _ in range(20):
        new_session(agents, n_messages=200)
    procs = [
        subprocess.Popen([sys.executable, "-m", "distiller", "--json", "run", "--source", str(agents)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outcomes = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in procs]
    codes = sorted(code for code, _, _ in outcomes)
    assert codes in ([0, 0], [0, 75]), outcomes
    total = sum(orjson.loads(out)["messages"] for code, out, _ in outcomes if code == 0)
    assert total == 4000


def test_read_only_command_waits_for_the_database_then_fails_clearly(tmp_path, agents):
    new_session(agents, n_messages=1)
    distill("run", "--source", str(agents), check=True)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import duckdb,sys,time; c=duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(30)",
         str(tmp_path / "state" / "distill.duckdb")],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        result = distill("status", env={"DISTILL_DB_WAIT_SECONDS": "1"})
        waited = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == 75
    assert "busy" in result.stderr and "PID" in result.stderr
    assert "Traceback" not in result.stderr
    assert waited >= 1.0


def test_usage_errors_exit_2():
    assert distill_process("run", "--no-such-flag").returncode == 2
    assert distill_process("no-such-command").returncode == 2


@pytest.mark.parametrize("args", [["beliefs", "forget"], ["beliefs", "forget", "b1", "--match", "x"],
                                  ["schedule", "--every", "30s"], ["schedule", "--every", "0"],
                                  ["schedule", "install", "cron", "--every", "7m"], ["run", "--model", "gpt-4o"],
                                  ["reprocess", "--model", "gpt-4o", "--yes"], ["run", "--concurrency", "99"],
                                  ["run", "--budget-usd", "-1"]])
def test_every_usage_error_exits_2_before_anything_happens(tmp_path, args):
    result = invoke(*args)
    assert result.exit_code == 2, (args, result.exit_code, result.stderr)
    assert "Traceback" not in result.stderr and result.stderr.startswith(("Error", "Usage"))
    assert not (tmp_path / "state" / "distill.duckdb").exists()


@pytest.mark.parametrize(
    "config, message",
    [("max_line_bytes = 'lots'\n", "invalid value"), ("nonsense = 1\n", "unknown setting"), ("[[[", "invalid config")],
)
def test_bad_config_is_a_clear_error(tmp_path, config, message):
    state = tmp_path / "state"
    state.mkdir()
    (state / "distill.toml").write_text(config)
    result = distill("status")
    assert result.returncode == 1
    assert message in result.stderr and "Traceback" not in result.stderr


def test_config_file_setting_is_used(tmp_path, agents):
    state = tmp_path / "state"
    state.mkdir()
    (state / "distill.toml").write_text('excluded_agents = ["main"]\n')
    new_session(agents, n_messages=1)
    summary = orjson.loads(distill("--json", "run", check=True).stdout)
    assert summary["messages"] == 0 and summary["files_skipped"]["excluded_agent"] == 1


def test_missing_source_is_reported_and_exits_1(tmp_path, agents):
    new_session(agents, n_messages=1)
    result = distill("--json", "run", "--source", str(tmp_path / "nowhere"), "--source", str(agents))
    assert result.returncode == 1
    summary = orjson.loads(result.stdout)
    assert summary["files_skipped"]["missing_source"] == 1 and summary["messages"] == 1  # the rest is read
    assert "source not found" in result.stderr and "Traceback" not in result.stderr


def test_init_modes(tmp_path, agents):
    new_session(agents, n_messages=2)
    created = orjson.loads(distill("--json", "init", check=True).stdout)
    assert created["mode"] == "create" and Path(created["db"]).exists()
    now = orjson.loads(distill("--json", "init", "--from-now", check=True).stdout)
    assert now["files_marked"] == 1
    assert orjson.loads(distill("--json", "run", check=True).stdout)["messages"] == 0
    assert orjson.loads(distill("--json", "init", "--from-start", check=True).stdout)["files_reset"] == 1
    assert orjson.loads(distill("--json", "run", check=True).stdout)["messages"] == 2


def test_init_from_now_refuses_a_missing_source_and_creates_nothing(tmp_path, agents):
    gone = invoke("init", "--from-now", "--source", str(tmp_path / "nonexistent"))
    assert gone.exit_code == 1 and f"source not found: {tmp_path / 'nonexistent'}" in gone.stderr
    agents.rmdir()  # the default source ($OPENCLAW_STATE_DIR/agents) does not exist either
    default = invoke("init", "--from-now")
    assert default.exit_code == 1 and "source not found" in default.stderr and "the default" in default.stderr
    assert not (tmp_path / "state" / "distill.duckdb").exists()


def test_the_human_summary_says_how_many_recall_blocks_and_secrets_were_stripped(tmp_path, agents):
    import distiller
    sample = Path(distiller.__file__).parent / "sample" / "agents"
    summary = invoke("--state-dir", str(tmp_path / "sample-state"), "run", "--source", str(sample))
    assert summary.exit_code == 0, summary.stderr
    assert "stripped: recall blocks 1, envelope parts 33" in summary.stdout
    assert "secrets redacted: 1 (anthropic-key 1)" in summary.stdout
    assert "secrets redacted: 1" in invoke("--state-dir", str(tmp_path / "sample-state"), "status").stdout
    new_session(agents, n_messages=1)
    plain = invoke("run").stdout
    assert "stripped: recall blocks 0\n" in plain and "secrets redacted: 0\n" in plain


def test_human_output_goes_to_stdout_and_diagnostics_to_stderr(agents):
    new_session(agents, n_messages=1)
    result = distill("-v", "run", check=True)
    assert result.stdout.startswith("read 1 file(s)")
    assert "new:" in result.stderr


def _commands(group, prefix=()):
    for name, command in group.commands.items():
        yield (*prefix, name), command
        if hasattr(command, "commands"):
            yield from _commands(command, (*prefix, name))


def test_every_command_has_help_and_is_in_the_readme():
    readme = README.read_text(encoding="utf-8")
    for path, command in _commands(cli):
        assert command.help, f"{' '.join(path)} has no help text"
        shown = CliRunner().invoke(cli, [*path, "--help"]).stdout
        examples = shown.partition("  Examples:\n")[2].partition("\n\n")[0]
        assert re.search(rf"^ +distill (.* )?{' '.join(path)}\b", examples, re.MULTILINE), f"{' '.join(path)}: no example"
        assert re.search(rf"distill\b[^\n`]*\b{' '.join(path)}\b", readme), f"{' '.join(path)} not in README"


CLAUDE_CODE_LINE = orjson.dumps({"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/w",
                                 "sessionId": "2ff46cd5", "version": "2.1.63", "type": "user",
                                 "message": {"role": "user", "content": "I live in Lisbon."}, "uuid": "4d21",
                                 "timestamp": "2026-03-01T22:38:47.557Z"}) + b"\n"


def test_a_claude_code_file_is_read_as_claude_code_and_an_unknown_jsonl_is_named(tmp_path):
    path = tmp_path / "projects" / "-w" / "2ff46cd5.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(CLAUDE_CODE_LINE)
    result = invoke("--json", "run", "--source", str(path))
    assert result.exit_code == 0, result.stderr
    summary = orjson.loads(result.stdout)
    assert summary["files"] == 1 and summary["messages"] == 1 and "unknown_type" not in summary["skipped"]
    other = tmp_path / "other" / "log.jsonl"
    other.parent.mkdir()
    other.write_bytes(b'{"level": "info", "msg": "started"}\n' * 3)
    result = invoke("--json", "run", "--source", str(other))
    assert result.exit_code == 0, result.stderr
    summary = orjson.loads(result.stdout)
    assert summary["files_skipped"] == {"unsupported_format": 1} and summary["lines"] == 0
    assert "is a unrecognised JSONL transcript" in result.stderr or "unrecognised JSONL" in result.stderr
    tree = invoke("--json", "run", "--source", str(tmp_path / "other"))
    assert tree.exit_code == 0, tree.stderr
    assert "unrecognised JSONL" in tree.stderr and orjson.loads(tree.stdout)["lines"] == 0


def test_an_empty_source_dir_says_so(tmp_path):
    (tmp_path / "empty").mkdir()
    result = invoke("run", "--source", str(tmp_path / "empty"))
    assert result.exit_code == 0
    labels = " or ".join(fmt.label for fmt in sources.formats())
    assert f"no {labels} transcripts under {tmp_path / 'empty'}" in result.stderr


def test_global_options_after_the_command(agents):
    new_session(agents, n_messages=1)
    assert invoke("run", "--source", str(agents)).exit_code == 0
    listed = invoke("beliefs", "list", "--json")
    assert listed.exit_code == 0, listed.stderr
    assert "beliefs" in orjson.loads(listed.stdout)
    verbose = invoke("status", "-v", "--state-dir", str(agents.parent.parent / "state"))
    assert verbose.exit_code == 0 and "state dir:" in verbose.stderr
    assert invoke("beliefs", "search", "--", "-v").exit_code == 0  # after --, an argument like any other


def test_quiet_prints_no_summary(agents):
    new_session(agents, n_messages=1)
    quiet = invoke("run", "-q", "--source", str(agents))
    assert quiet.exit_code == 0 and quiet.stdout == ""
    assert orjson.loads(invoke("-q", "--json", "status").stdout)["files_tracked"] == 1


@pytest.mark.slow  # real processes, one per time zone; CI runs it with the other slow tests
def test_timestamps_are_rfc3339_utc_whatever_the_zone(agents):
    new_session(agents, n_messages=1)
    env = {"TZ": "America/New_York"}  # read once per process: real processes
    distill_process("run", env=env, check=True)
    last = orjson.loads(distill_process("--json", "status", env=env, check=True).stdout)["last_run"]
    (run,) = orjson.loads(distill_process("--json", "runs", env=env, check=True).stdout)["runs"]
    for stamp in (last["started_at"], last["finished_at"], run["started_at"]):
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", stamp), stamp
        parsed = datetime.fromisoformat(stamp)
        assert abs((datetime.now(UTC) - parsed).total_seconds()) < 600


def test_init_refuses_both_directions():
    result = invoke("init", "--from-now", "--from-start")
    assert result.exit_code == 2 and "opposites" in result.stderr


def test_options_the_rules_extractor_cannot_honour_are_errors(agents):
    new_session(agents, n_messages=1)
    model = invoke("run", "--model", "claude-sonnet-5-5", "--source", str(agents))
    assert model.exit_code == 1 and "--model claude-sonnet-5-5 would be ignored" in model.stderr
    assert "ANTHROPIC_API_KEY" in model.stderr
    batch_api = invoke("run", "--batch-api", "--source", str(agents))
    assert batch_api.exit_code == 1 and "set ANTHROPIC_API_KEY" in batch_api.stderr
    assert invoke("--json", "run", "--source", str(agents)).exit_code == 0  # nothing was read by the refusals


def test_lock_message_names_the_real_holder_not_a_stale_pid(tmp_path, agents):
    state = tmp_path / "state"
    state.mkdir()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (state / "lock").write_text(f"{gone.pid}\n")  # left by an earlier run
    holder = subprocess.Popen(
        [sys.executable, "-c", ("import fcntl,sys,time; f=open(sys.argv[1],'a'); fcntl.flock(f, fcntl.LOCK_EX); "
                                "print(1, flush=True); time.sleep(60)"), str(state / "lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "1"
        result = distill_process("run", "--source", str(agents))
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == 75
    assert f"pid {gone.pid}" not in result.stderr
    if Path("/proc/locks").exists():
        assert f"(pid {holder.pid})" in result.stderr


def test_status_says_which_state_dir_it_used(tmp_path):
    human = invoke("status")
    assert human.exit_code == 0 and f"state dir: {tmp_path / 'state'} (env DISTILL_STATE_DIR)" in human.stdout
    assert orjson.loads(invoke("status", "--json").stdout)["state_dir"] == str(tmp_path / "state")


def test_shell_completion_as_the_readme_documents_it():
    env = {"_DISTILL_COMPLETE": "bash_complete", "COMP_WORDS": "distill sch", "COMP_CWORD": "1"}
    result = distill_process(env=env)
    assert result.returncode == 0 and "schedule" in result.stdout
    assert "_DISTILL_COMPLETE=bash_source" in README.read_text(encoding="utf-8")


def test_readme_try_it_and_ci_run_the_same_command_on_an_explicit_state_dir():
    readme = README.read_text(encoding="utf-8")
    block = readme.split("## Try it", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    try_it = "distill " + block.split("&& distill ", 1)[1].strip()
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    ci_line = next(line for line in ci.splitlines() if line.startswith("distill "))
    assert try_it.startswith("distill --state-dir state ")  # the repository's state/, named explicitly
    assert ci_line.replace('"$(mktemp -d)"', "state") == try_it


def test_status_on_an_empty_state_dir_says_there_is_no_database_yet(tmp_path):
    result = invoke("status")
    assert result.exit_code == 0 and f"database: none yet at {tmp_path / 'state' / 'distill.duckdb'}" in result.stdout
    assert orjson.loads(invoke("--json", "status").stdout)["db_exists"] is False
    assert not (tmp_path / "state" / "distill.duckdb").exists()


def test_verbose_names_every_skipped_file_and_show_says_why_a_text_is_empty(tmp_path):
    import distiller
    sample = str(Path(distiller.__file__).parent / "sample" / "agents")
    verbose = invoke("-v", "--json", "run", "--source", sample)
    named = [line for line in verbose.stderr.splitlines() if line.startswith("distill: skipped ")]
    counted = orjson.loads(verbose.stdout)["files_skipped"]
    assert len(named) == sum(counted.values()) == 5
    assert {line.rsplit("(", 1)[1].rstrip(")") for line in named} == set(counted)
    shown = invoke("--state-dir", str(tmp_path / "other"), "run", "--dry-run", "--show", "dropped", "--source", sample)
    rows = [line for line in shown.stdout.splitlines() if line.startswith("drop ")]
    assert rows and all(line.split(None, 4)[4].strip() for line in rows)  # a text, or why there is none
    assert any("(not screened: the whole session is a cron run)" in line for line in rows)
    assert any("(the whole message is a platform-written prompt" in line for line in rows)


def test_the_state_dir_readme_agrees_with_the_readme_on_where_state_lives():
    state_readme = (README.parent / "state" / "README.md").read_text(encoding="utf-8")
    readme = README.read_text(encoding="utf-8")
    for where in ("$DISTILL_STATE_DIR", "$XDG_STATE_HOME/distiller", "~/.local/state/distiller"):
        assert where in state_readme and where in readme
    assert "distill --state-dir state run --source distiller/sample/agents" in readme
    assert "It is not the default" in state_readme


def test_path_prints_every_path_one_per_line_or_one_alone(tmp_path):
    state = tmp_path / "state"
    lines = invoke("path").stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["state_dir", "database", "config", "env_file"]
    assert lines[0].split(None, 1)[1] == str(state) and lines[1].split(None, 1)[1] == str(state / "distill.duckdb")
    assert invoke("path", "database").stdout == f"{state / 'distill.duckdb'}\n"
    assert orjson.loads(invoke("--json", "path").stdout)["config"] == str(state / "distill.toml")
    mine = tmp_path / "my.toml"
    mine.write_text("")
    assert invoke("--config", str(mine), "path", "config").stdout.strip() == str(mine)
    assert invoke("path", "nothing").exit_code == 2
    assert not state.exists()  # nothing created
