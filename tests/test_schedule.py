"""`distill schedule`: the in-process scheduler as a real process (signals, exit codes, the run lock) and its
triggers; `schedule install` units checked by the scheduler's own tools where they exist."""

from __future__ import annotations

import fcntl
import os
import plistlib
import shutil
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC
from pathlib import Path

import duckdb
import orjson
import pytest
from click.testing import CliRunner
from conftest import append, distill, message_line, new_session

from distiller import install
from distiller import schedule as scheduling
from distiller.cli import cli
from distiller.errors import DistillError


def start(*args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "distiller", "--json", "schedule", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **(env or {})})


def next_line(proc: subprocess.Popen, seconds: float = 60) -> dict:
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(seconds)
    assert got and got[0], "no summary line in time"
    return orjson.loads(got[0])


def stop(proc: subprocess.Popen, signum: int = signal.SIGTERM) -> tuple[int, str, str]:
    """Signal, wait, and return the exit code, stderr and what stdout still had."""
    proc.send_signal(signum)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    return proc.returncode, err.decode(), out.decode()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_runs_now_then_stops_on_a_signal_with_exit_0(agents, signum):
    new_session(agents, n_messages=2)
    proc = start("--every", "1h", "--run-now", "--source", str(agents))
    line = next_line(proc)
    assert line["status"] == "ok" and line["messages"] == 2 and line["at"].endswith("Z")
    code, err, _ = stop(proc, signum)
    assert code == 0, err
    assert "Traceback" not in err and "stopping" in err


@pytest.mark.slow  # a real scheduler process and a full run; CI runs it with the other slow tests
def test_a_run_in_progress_reaches_a_safe_point_before_the_exit(agents, fake_anthropic, settings):
    for agent in ("main", "work"):  # one request per agent: the stop comes between them
        path = new_session(agents, agent=agent)
        append(path, message_line("I live in Lisbon and I work as a nurse.", message_id=f"u-{agent}"))
    fake_anthropic.delay_seconds = 2
    proc = start("--every", "1h", "--run-now", "--source", str(agents),
                 env={"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake_anthropic.base_url})
    deadline = time.monotonic() + 60
    while not fake_anthropic.message_requests() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fake_anthropic.message_requests(), "the run never reached the model"
    code, err, rest = stop(proc)
    assert code == 0, err
    (line,) = [orjson.loads(text) for text in rest.splitlines()]
    assert line["status"] == "interrupted" and "stopped at a safe point" in line["error"]
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        statuses = [r[0] for r in con.execute("SELECT status FROM runs").fetchall()]
    assert statuses == ["interrupted"]
    # nothing lost: the next run finishes the batch the stopped one saved, without asking again what was answered
    fake_anthropic.delay_seconds = 0
    again = distill("--json", "run", "--source", str(agents),
                    env={"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake_anthropic.base_url})
    assert again.returncode == 0, again.stderr
    assert len(fake_anthropic.message_requests()) == 2
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM ingested").fetchone()[0] == 2


def test_the_run_lock_still_applies(agents, tmp_path):
    new_session(agents, n_messages=1)
    state = tmp_path / "state"
    state.mkdir()
    with open(state / "lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        proc = start("--every", "1h", "--run-now", "--source", str(agents))
        line = next_line(proc)
        code, err, _ = stop(proc)
    assert line["status"] == "skipped" and "another distill run is in progress" in line["error"]
    assert code == 0, err


def test_human_summary_is_one_line_per_run(agents):
    new_session(agents, n_messages=1)
    proc = subprocess.Popen([sys.executable, "-m", "distiller", "schedule", "--run-now", "--source", str(agents)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline().decode()
    code, _, rest = stop(proc)
    assert code == 0 and " ok: 1 file(s), 1 message(s)" in first
    assert rest == ""


def test_scheduler_never_runs_two_at_once_and_coalesces(settings):
    when = scheduling.timing(None, "15m", 30)
    scheduler = scheduling.make_scheduler(settings, None, when, run_now=False, report=print,
                                          stopping=threading.Event())
    job = scheduler.get_job(scheduling.JOB_ID)
    assert (job.max_instances, job.coalesce) == (1, True) and 60 <= job.misfire_grace_time <= 450
    assert when.trigger.jitter == 30


@pytest.mark.parametrize("field, names", [
    ("0", "sun"), ("7", "sun"), ("1-5", "mon,tue,wed,thu,fri"), ("0,6", "sun,sat"), ("*/3", "sun,wed,sat"),
    ("mon-fri", "mon-fri"), ("*", "*"),
])
def test_cron_weekdays_mean_what_cron_means(field, names):
    assert scheduling._weekdays(field) == names


def test_cron_sunday_fires_on_sunday():
    from datetime import datetime

    trigger = scheduling.cron_trigger("0 9 * * 0", None)
    fire = trigger.get_next_fire_time(None, datetime(2026, 12, 1, tzinfo=UTC))  # a Tuesday
    assert fire.strftime("%a") == "Sun"


@pytest.mark.parametrize("args", [["--cron", "* * *"], ["--cron", "61 * * * *"], ["--every", "10x"],
                                  ["--every", "30s"], ["--every", "0"], ["--cron", "0 * * * *", "--every", "1h"]])
def test_bad_timing_is_a_usage_error(args):
    result = CliRunner().invoke(cli, ["schedule", *args])
    assert result.exit_code == 2 and result.stderr.startswith("Error: ")


def test_install_systemd_units_name_this_distill_and_verify(tmp_path):
    units = tmp_path / "units"
    (tmp_path / "agents dir").mkdir()
    result = CliRunner().invoke(cli, ["--json", "schedule", "install", "systemd", "--dir", str(units),
                                      "--every", "15m", "--source", str(tmp_path / "agents dir")])
    assert result.exit_code == 0, result.stderr
    done = orjson.loads(result.stdout)
    assert sorted(Path(p).name for p in done["written"]) == ["distill.service", "distill.timer"]
    assert any("enable --now distill.timer" in step for step in done["next_steps"])
    service = (units / "distill.service").read_text()
    assert f"ExecStart={sys.executable} -m distiller --state-dir {tmp_path / 'state'} run" in service
    assert f'"{tmp_path / "agents dir"}"' in service and "OnCalendar=*-*-* *:00/15:00" in (
        units / "distill.timer").read_text()
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    verify = subprocess.run(["systemd-analyze", "verify", str(units / "distill.service"),
                             str(units / "distill.timer")], capture_output=True, text=True)
    assert verify.returncode == 0, verify.stderr
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "distill.service").write_text(service.replace(sys.executable, "/nonexistent/distill"))
    assert subprocess.run(["systemd-analyze", "verify", str(broken / "distill.service")],
                          capture_output=True).returncode != 0  # the check can fail


def test_install_uses_the_console_script_when_that_runs(tmp_path, agents):
    script = Path(sys.executable).parent / "distill"
    if not script.exists():
        pytest.skip("console script not installed in this environment")
    subprocess.run([str(script), "schedule", "install", "systemd", "--dir", str(tmp_path)], check=True,
                   capture_output=True)
    assert f"ExecStart={script.resolve()} --state-dir " in (tmp_path / "distill.service").read_text()


def test_install_cron_and_launchd_then_uninstall(tmp_path, agents):
    state = tmp_path / "state 100%"
    runner = CliRunner()
    cron = runner.invoke(cli, ["--state-dir", str(state), "schedule", "install", "cron", "--dir", str(tmp_path)])
    assert cron.exit_code == 0, cron.stderr
    text = (tmp_path / "distill.cron").read_text()
    job = next(line for line in text.splitlines() if line.endswith(install.CRON_TAG))
    assert job.startswith("17 * * * * ") and "100\\%" in job and sys.executable in job
    shell = job[len("17 * * * * "):].replace("\\%", "%")
    assert subprocess.run(["sh", "-n", "-c", shell]).returncode == 0
    launchd = runner.invoke(cli, ["--state-dir", str(state), "schedule", "install", "launchd", "--dir",
                                  str(tmp_path), "--every", "30m"])
    assert launchd.exit_code == 0, launchd.stderr
    plist = plistlib.loads((tmp_path / f"{install.LABEL}.plist").read_bytes())
    assert plist["ProgramArguments"][:5] == [sys.executable, "-m", "distiller", "--state-dir", str(state)]
    assert plist["StartInterval"] == 1800 and plist["EnvironmentVariables"]["DISTILL_STATE_DIR"] == str(state)
    for kind in ("cron", "launchd"):
        gone = runner.invoke(cli, ["--json", "schedule", "uninstall", kind, "--dir", str(tmp_path)])
        assert gone.exit_code == 0 and len(orjson.loads(gone.stdout)["removed"]) == 1
    assert list(tmp_path.glob("distill.cron")) == [] and list(tmp_path.glob("*.plist")) == []


def test_launchd_plist_parses_back_to_what_was_asked_for_whatever_the_paths_hold(tmp_path, agents):
    """Markup, quotes, ampersands, a newline and non-ASCII in the state dir and a run option: the written plist is
    well-formed and parses back to exactly those strings (an f-string plist broke on the first `<`)."""
    state = tmp_path / "st<ate> & \"q\" 'a' ]]> é\nline"
    units = tmp_path / "units"
    done = CliRunner().invoke(cli, ["--state-dir", str(state), "schedule", "install", "launchd", "--dir", str(units),
                                    "--every", "2h", "--budget-usd", "0.5"])
    assert done.exit_code == 0, done.stderr
    written = (units / f"{install.LABEL}.plist").read_bytes()
    assert b"Written by `distill schedule install launchd`" in written
    agent = plistlib.loads(written)
    assert agent["Label"] == install.LABEL and agent["StartInterval"] == 7200 and agent["RunAtLoad"] is True
    assert agent["Nice"] == 10 and agent["LowPriorityIO"] is True and agent["ProcessType"] == "Background"
    assert agent["EnvironmentVariables"] == {"DISTILL_STATE_DIR": str(state)}
    arguments = agent["ProgramArguments"]
    assert arguments[arguments.index("--state-dir") + 1] == str(state)
    assert arguments[arguments.index("--budget-usd"):][:2] == ["--budget-usd", "0.5"]
    assert install.installed_state_dir(written.decode()) == str(state)


def test_a_path_no_plist_can_carry_is_a_clear_error_not_a_broken_file(tmp_path, agents):
    units = tmp_path / "units"
    refused = CliRunner().invoke(cli, ["--state-dir", str(tmp_path / "bell\x07"), "schedule", "install", "launchd",
                                       "--dir", str(units)])
    assert refused.exit_code == 1 and "cannot write a launchd plist" in refused.stderr
    assert not list(units.glob("*.plist"))


def test_every_and_intervals():
    assert install.every_seconds("1h") == 3600 and install.every_seconds("90") == 90
    with pytest.raises(DistillError):
        install.plan("systemd", Path("/s"), [], install.every_seconds("7m"), Path("/tmp"))


def test_install_carries_the_settings_file_and_run_options(tmp_path, agents):
    config = tmp_path / "my.toml"
    config.write_text("db_wait_seconds = 2\n")
    result = CliRunner().invoke(cli, ["--config", str(config), "schedule", "install", "systemd", "--dir",
                                      str(tmp_path), "--budget-usd", "0.5", "--extractor", "rules"])
    assert result.exit_code == 0, result.stderr
    service = (tmp_path / "distill.service").read_text()
    assert f"--config {config} run --source " in service and "--extractor rules --budget-usd 0.5" in service
    bad = CliRunner().invoke(cli, ["schedule", "install", "cron", "--dir", str(tmp_path), "--model", "a\nb"])
    assert bad.exit_code == 2 and "'model' from flag --model" in bad.stderr


def test_install_refuses_what_every_scheduled_run_would_fail_on(tmp_path, agents, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    units = ["--dir", str(tmp_path / "units")]

    def install_with(*args: str):
        return CliRunner().invoke(cli, ["schedule", "install", "systemd", *units, *args])

    no_key = install_with("--model", "claude-sonnet-4-5")
    assert no_key.exit_code == 1 and "--model claude-sonnet-4-5 needs an Anthropic key" in no_key.stderr
    anthropic = install_with("--extractor", "anthropic")
    assert anthropic.exit_code == 1 and f"ANTHROPIC_API_KEY=… in {tmp_path / 'config' / 'distiller' / 'env'}" in (
        anthropic.stderr)
    missing = install_with("--source", str(tmp_path / "nowhere"))
    assert missing.exit_code == 1 and "source not found" in missing.stderr
    assert not (tmp_path / "units").exists()  # nothing written by a refusal
    env = tmp_path / "config" / "distiller" / "env"
    env.parent.mkdir(parents=True)
    env.write_text("ANTHROPIC_API_KEY=sk-ant-test\n")  # the key the unit will read
    opus = install_with("--model", "claude-opus-4-5")
    assert opus.exit_code == 1 and "--allow-expensive-model" in opus.stderr
    assert install_with("--model", "claude-sonnet-4-5").exit_code == 0
    launchd = CliRunner().invoke(cli, ["schedule", "install", "launchd", *units, "--model", "claude-sonnet-4-5"])
    assert launchd.exit_code == 1 and "do not read the env file" in launchd.stderr  # launchd gets only its plist
    in_process = CliRunner().invoke(cli, ["schedule", "--model", "claude-opus-4-5"])
    assert in_process.exit_code == 1 and "--allow-expensive-model" in in_process.stderr  # refused before serving
    gone = CliRunner().invoke(cli, ["schedule", "--source", str(tmp_path / "nowhere")])
    assert gone.exit_code == 1 and "source not found" in gone.stderr


@pytest.mark.parametrize("kind", install.KINDS)
def test_a_second_install_for_another_state_dir_is_refused(tmp_path, agents, kind):
    units = ["--dir", str(tmp_path / "units")]
    first, second = tmp_path / "state one %$", tmp_path / "state two"
    done = CliRunner().invoke(cli, ["--state-dir", str(first), "--json", "schedule", "install", kind, *units])
    assert done.exit_code == 0, done.stderr
    written = {path: Path(path).read_text() for path in orjson.loads(done.stdout)["written"]}
    told = [install.installed_state_dir(text) for text in written.values()]
    assert str(first) in told and set(told) <= {str(first), None}  # a systemd timer names no state dir
    other = CliRunner().invoke(cli, ["--state-dir", str(second), "schedule", "install", kind, *units])
    assert other.exit_code == 1 and f"already runs distill on state dir {first}" in other.stderr
    assert {path: Path(path).read_text() for path in written} == written  # the first is untouched
    again = CliRunner().invoke(cli, ["--state-dir", str(first), "schedule", "install", kind, *units, "--every", "6h"])
    assert again.exit_code == 0, again.stderr  # the same state dir: replaced


def test_install_reads_the_trees_distill_run_would_skip_formats_and_all(tmp_path, agents):
    """Without --source a unit runs on the default trees `distill run` picks, `skip_formats` applied: a skipped
    format's tree present on this machine is not written into the unit."""
    claude = tmp_path / "claude" / "projects"
    claude.mkdir(parents=True)
    state = tmp_path / "state"
    state.mkdir()
    runner = CliRunner()
    both = runner.invoke(cli, ["--state-dir", str(state), "schedule", "install", "systemd", "--dir",
                               str(tmp_path / "both")])
    assert both.exit_code == 0, both.stderr
    service = (tmp_path / "both" / "distill.service").read_text()
    assert f'--source {agents} --source {claude}' in service.replace('"', "")
    (state / "distill.toml").write_text('skip_formats = ["claude-code"]\n')
    skipped = runner.invoke(cli, ["--state-dir", str(state), "schedule", "install", "cron", "--dir",
                                  str(tmp_path / "one")])
    assert skipped.exit_code == 0, skipped.stderr
    job = (tmp_path / "one" / "distill.cron").read_text()
    assert f"--source {agents}" in job and str(claude) not in job
    dry = runner.invoke(cli, ["--state-dir", str(state), "--json", "run", "--dry-run"])
    assert dry.exit_code == 0, dry.stderr
    assert orjson.loads(dry.stdout)["sources"] == [str(agents)]  # the same trees as the unit


def test_run_schedule_and_install_take_the_same_extraction_options():
    """One set of run options, declared once: what `run` takes, a schedule passes on and a unit carries."""
    from distiller.cli.extractor_options import RunOptions

    def flags(*path: str) -> set[str]:
        command = cli
        for name in path:
            command = command.commands[name]
        return {opt for param in command.params for opt in param.opts}

    wanted = {"--" + name.replace("_", "-") for name in RunOptions.__dataclass_fields__}
    assert "--base-url" in wanted and "--concurrency" in wanted
    for path in (("run",), ("schedule",), ("schedule", "install")):
        assert wanted <= flags(*path), path


def test_install_writes_the_base_url_and_every_run_option_into_the_unit(tmp_path, agents):
    given = ["--extractor", "openai-compatible", "--model", "qwen2.5:7b", "--base-url", "http://gpu-box:8000/v1",
             "--budget-usd", "0.5", "--budget-tokens", "200000", "--concurrency", "2"]
    result = CliRunner().invoke(cli, ["schedule", "install", "systemd", "--dir", str(tmp_path),
                                      "--source", str(agents), *given])
    assert result.exit_code == 0, result.stderr
    service = (tmp_path / "distill.service").read_text()
    assert f"run --source {agents} {' '.join(given)}" in service
    missing = CliRunner().invoke(cli, ["schedule", "install", "cron", "--dir", str(tmp_path / "cron"),
                                       "--source", str(agents), *given[:4]])
    assert missing.exit_code == 1 and "--base-url" in missing.stderr and not (tmp_path / "cron").exists()


def test_the_foreground_schedule_takes_base_url_and_refuses_a_server_without_one(agents):
    base = ["schedule", "--every", "1h", "--source", str(agents), "--extractor", "openai-compatible", "--model", "m"]
    refused = CliRunner().invoke(cli, base)
    assert refused.exit_code == 1 and "--base-url" in refused.stderr
    bad = CliRunner().invoke(cli, [*base, "--base-url", "not a url"])
    assert bad.exit_code == 2 and "base_url" in bad.stderr  # validated as a flag, before any fire
