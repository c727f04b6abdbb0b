"""`distill doctor`: each problem one line with its fix, exit 1 when something is wrong; secrets never printed."""

from __future__ import annotations

from collections import Counter

import orjson
from conftest import append, invoke, message_line, new_session

from distiller.doctor import agent_summary

KEY = "sk-ant-api03-" + "Q" * 40 + "_x-" + "7" * 40


def doctor(*args: str, env: dict | None = None):
    result = invoke("--json", "doctor", *args, env=env)
    return result, orjson.loads(result.stdout) if result.stdout else None


def by_name(report: dict) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for check in report["checks"]:
        found.setdefault(check["name"], []).append(check)
    return found


def test_a_healthy_setup_passes_and_names_its_state_dir(tmp_path, agents):
    new_session(agents, n_messages=2)
    assert invoke("run", "--source", str(agents)).exit_code == 0
    result, report = doctor("--source", str(agents), env={"ANTHROPIC_API_KEY": KEY})
    assert result.exit_code == 0, result.stdout
    assert report["healthy"] and report["state_dir"] == str(tmp_path / "state")
    assert report["state_dir_origin"] == "env DISTILL_STATE_DIR"
    checks = by_name(report)
    assert "schema" in checks["database"][0]["detail"] and checks["lock"][0]["detail"] == "free"
    assert "main 1" in checks["sources"][0]["detail"] and "OpenClaw" in checks["sources"][0]["detail"]
    assert checks["api_key"][0]["level"] == "ok"
    human = invoke("doctor", "--source", str(agents), env={"ANTHROPIC_API_KEY": KEY})
    assert f"state dir: {tmp_path / 'state'}" in human.stdout
    assert KEY not in result.stdout + human.stdout and "QQQQ" not in human.stdout


def test_problems_exit_1_each_with_a_fix(tmp_path, agents):
    path = new_session(agents)
    append(path, message_line("I live in Lisbon and I work as a nurse.", message_id="u1"))
    assert invoke("run", "--no-llm", "--source", str(agents)).exit_code == 0
    (tmp_path / "state").chmod(0o755)
    result, report = doctor("--source", str(agents), "--source", str(tmp_path / "nope"),
                            env={"ANTHROPIC_API_KEY": "sk-ant-oops "})
    assert result.exit_code == 1 and not report["healthy"]
    problems = {c["name"]: c for c in report["checks"] if c["level"] == "problem"}
    assert set(problems) == {"batches", "sources", "api_key"}
    assert all(c["fix"] for c in problems.values())
    assert "distill commit" in problems["batches"]["fix"] and "nope" in problems["sources"]["detail"]
    assert "sk-ant-oops" not in result.stdout
    assert by_name(report)["state_dir"][0]["level"] == "warning"
    assert "chmod 700" in by_name(report)["state_dir"][0]["fix"]


def test_a_corrupt_database_is_a_problem_and_doctor_creates_nothing(tmp_path, agents):
    doctor("--source", str(agents))
    assert not (tmp_path / "state").exists()  # doctor only looks
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "distill.duckdb").write_bytes(b"\0garbage" * 4096)
    result, report = doctor("--source", str(agents))
    assert result.exit_code == 1
    assert by_name(report)["database"][0]["level"] == "problem"
    assert "Traceback" not in result.stderr


def test_key_shape_behind_a_gateway_is_only_a_warning(agents):
    new_session(agents, n_messages=1)
    _, report = doctor("--source", str(agents), env={"ANTHROPIC_API_KEY": "gateway-key",
                                                     "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"})
    assert by_name(report)["api_key"][0]["level"] == "warning"
    _, report = doctor("--source", str(agents), env={"ANTHROPIC_API_KEY": KEY + "\n"})
    assert by_name(report)["api_key"][0]["level"] == "problem"


def test_a_long_agent_list_is_summarised_on_one_short_line(agents):
    for n in range(12):
        for _ in range(1 + (n == 3) * 4):
            new_session(agents, agent=f"agent-{n:02d}", n_messages=1)
    result = invoke("doctor")
    line = next(line for line in result.stdout.splitlines() if " sources: " in line)
    assert "16 transcript(s)" in line and "12 agents, busiest: agent-03 5, agent-00 1" in line
    assert "and 7 more with 7 transcript(s)" in line and "agent-11" not in line and len(line.replace(str(agents), "")) < 200
    few = agent_summary(Counter({"main": 3, "work": 2}))
    assert few == "by agent: main 3, work 2"


def test_doctor_says_when_an_installed_schedule_will_not_see_the_key(tmp_path, agents, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-" + "x" * 95)
    assert invoke("schedule", "install", "systemd").exit_code == 0
    unit = tmp_path / "config" / "systemd" / "user" / "distill.service"
    blind = next(line for line in invoke("doctor").stdout.splitlines() if " schedule: " in line)
    assert blind.startswith("warning") and f"{unit} will not see the ANTHROPIC_API_KEY" in blind
    env = tmp_path / "config" / "distiller" / "env"
    env.parent.mkdir(parents=True, exist_ok=True)
    env.write_text("ANTHROPIC_API_KEY=sk-ant-api03-abc\n")
    seen = next(line for line in invoke("doctor").stdout.splitlines() if " schedule: " in line)
    assert seen.startswith("ok") and f"reads the key from {env}" in seen
    other = invoke("--state-dir", str(tmp_path / "elsewhere"), "doctor").stdout
    assert f"runs on state dir {tmp_path / 'state'}, not this one" in other


def test_doctor_lists_each_default_tree_and_warns_when_runs_are_further_apart_than_claude_codes_retention(
        tmp_path, monkeypatch):
    import duckdb
    from agent_lines import cc_session

    config = tmp_path / "claude"
    project = config / "projects" / "-w"
    project.mkdir(parents=True)
    (project / "s1.jsonl").write_bytes(cc_session("s1", [("I live in Lisbon.", "ok")]))
    (config / "settings.json").write_text('{"cleanupPeriodDays": 7}')
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no other assistant's tree
    assert invoke("run").exit_code == 0
    _, report = doctor()
    checks = by_name(report)
    assert any(c["detail"].startswith("Claude Code: ") and "1 transcript file(s)" in c["detail"]
               for c in checks["sources"])
    assert checks["claude_code_retention"][0]["level"] == "ok"
    with duckdb.connect(str(tmp_path / "state" / "distill.duckdb")) as con:
        con.execute("UPDATE runs SET started_at = started_at - INTERVAL 9 DAY")
    _, report = doctor()
    retention = by_name(report)["claude_code_retention"][0]
    assert retention["level"] == "warning" and "7 day(s)" in retention["detail"]
