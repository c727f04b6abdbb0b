"""`distill reprocess` on real files and real DuckDB: re-extraction apart from the live cursors, idempotence,
retirement of what older prompts drew, tombstones, the estimate, and resumption after a kill (a real process)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import orjson
import pytest
from click.testing import CliRunner
from conftest import append, header, wait_for

from distiller import manage as beliefs_api
from distiller import pipeline
from distiller.batches import files as batches
from distiller.cli import cli
from distiller.config import Settings
from distiller.extract.rules import RulesExtractor
from distiller.pipeline import reprocess


def said(text: str, message_id: str, ts: str = "2026-03-01T10:00:00Z") -> bytes:
    return orjson.dumps({"type": "message", "id": message_id, "parentId": None, "timestamp": ts,
                         "message": {"role": "user", "content": [{"type": "text", "text": text}]}}) + b"\n"


class NewPromptRules(RulesExtractor):
    prompt_version = "rules-2"


class NoFactsRules(RulesExtractor):
    """A newer prompt that no longer draws "I have …" facts."""

    prompt_version = "rules-no-facts"

    def extract(self, request, *, max_tokens=None, on_overload=None):
        found = super().extract(request)
        return type(found)(found.request_id, tuple(c for c in found.candidates if c.category != "fact"), found.usage)


@pytest.fixture
def history(agents) -> Path:
    for agent, session, lines in (
        ("main", "11111111-1111-1111-1111-111111111111",
         [said("I live in Lisbon.", "m1"), said("I have two cats at home.", "m2", "2026-03-01T11:00:00Z")]),
        ("work", "22222222-2222-2222-2222-222222222222",
         [said("I prefer green tea in the morning.", "w1", "2026-03-02T10:00:00Z")]),
    ):
        path = agents / agent / "sessions" / f"{session}.jsonl"
        path.parent.mkdir(parents=True)
        path.write_bytes(header(session) + b"".join(lines))
    return agents


def rows(settings: Settings, sql: str) -> list[tuple]:
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        return con.execute(sql).fetchall()


def store_state(settings: Settings) -> tuple:
    return (rows(settings, "SELECT statement, status, evidence_count FROM beliefs ORDER BY 1"),
            rows(settings, "SELECT belief_id, session_id, message_id FROM evidence ORDER BY ALL"),
            rows(settings, "SELECT count(*) FROM ingested"))


def cursors(settings: Settings) -> list[tuple]:
    return rows(settings, 'SELECT file_id, "offset", size, tail_digest FROM files ORDER BY 1')


def test_reextracts_what_was_recorded_without_moving_the_cursors_and_twice_is_once(settings, history):
    rules = Settings(state_dir=settings.state_dir, extractor="rules")
    pipeline.run_once(rules, [history])
    before, moved = store_state(rules), cursors(rules)
    first = reprocess.reprocess(rules, [history], extractor=NewPromptRules())
    assert first.status == "done" and first.tally.messages == 3
    assert first.tally.beliefs == {"replayed": 3}  # every message extracted again, each belief drawn again
    assert store_state(rules) == before and cursors(rules) == moved
    again = reprocess.reprocess(rules, [history], extractor=NewPromptRules())
    assert again.status == "already-done" and store_state(rules) == before


def test_beliefs_only_an_older_prompt_drew_are_retired_unless_kept(settings, history, tmp_path):
    rules = Settings(state_dir=settings.state_dir, extractor="rules")
    pipeline.run_once(rules, [history])
    kept = reprocess.reprocess(rules, [history], extractor=NoFactsRules(), keep_old=True)
    assert kept.retired == 0 and ("archived",) not in rows(rules, "SELECT status FROM beliefs")
    fresh = Settings(state_dir=tmp_path / "other", extractor="rules")
    pipeline.run_once(fresh, [history])
    summary = reprocess.reprocess(fresh, [history], extractor=NoFactsRules(), agents=("main",))
    assert summary.retired == 1
    assert rows(fresh, "SELECT statement, status FROM beliefs WHERE status = 'archived'") == [
        ("The user has two cats at home.", "archived")]
    assert rows(fresh, "SELECT event FROM belief_history") == [("reprocessed",)]


def test_forgotten_beliefs_stay_forgotten(settings, history):
    rules = Settings(state_dir=settings.state_dir, extractor="rules")
    pipeline.run_once(rules, [history])
    beliefs_api.forget(rules, match="Lisbon")
    summary = reprocess.reprocess(rules, [history], extractor=RulesExtractor())
    assert summary.tally.beliefs.get("refused_tombstoned") == 1
    assert not [s for (s,) in rows(rules, "SELECT statement FROM beliefs") if "Lisbon" in s]


def test_window_agent_and_messages_beyond_the_cursors(settings, history):
    rules = Settings(state_dir=settings.state_dir, extractor="rules")
    pipeline.run_once(rules, [history])
    path = next((history / "main" / "sessions").glob("*.jsonl"))
    append(path, said("I'm on call this weekend.", "m3", "2026-03-05T10:00:00Z"))
    moved = cursors(rules)
    summary = reprocess.reprocess(rules, [history], agents=("main",),
                                  since=datetime(2026, 3, 1, 10, 30, tzinfo=UTC))
    assert summary.tally.messages == 2 and summary.tally.skipped["outside_window"] == 1
    assert cursors(rules) == moved  # the live run still reads m3 itself, and finds it recorded
    assert pipeline.run_once(rules, [history]).tally.skipped["already_ingested"] == 1


def test_cli_estimates_without_a_key_and_json_needs_no_confirmation(history, tmp_path):
    runner = CliRunner()
    state = str(tmp_path / "state")
    dry = runner.invoke(cli, ["--state-dir", state, "--json", "reprocess", "--source", str(history), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    estimate = orjson.loads(dry.stdout)["estimate"]
    assert estimate["requests"] == 2 and estimate["estimated_tokens"] > 0 and estimate["estimated_cost_usd"] > 0
    assert not (tmp_path / "state" / "distill.duckdb").exists()
    run_dry = runner.invoke(cli, ["--state-dir", state, "--json", "run", "--source", str(history), "--dry-run",
                                  "--extractor", "rules"])
    planned = orjson.loads(run_dry.stdout)
    assert (planned["requests"], planned["estimated_tokens"]) == (estimate["requests"], estimate["estimated_tokens"])
    done = runner.invoke(cli, ["--state-dir", state, "reprocess", "--source", str(history), "--extractor", "rules"])
    assert done.exit_code == 0 and "done" in done.stdout, done.output



def test_reprocess_refuses_what_run_refuses_and_a_changed_model_is_a_new_job(history, tmp_path):
    runner = CliRunner()
    state = ["--state-dir", str(tmp_path / "state")]
    source = ["--source", str(history)]
    ignored = runner.invoke(cli, [*state, "reprocess", *source, "--model", "claude-sonnet-4-5", "--yes"])
    assert ignored.exit_code == 1 and "--model claude-sonnet-4-5 would be ignored" in ignored.stderr
    opus = runner.invoke(cli, [*state, "reprocess", *source, "--model", "claude-opus-4-5", "--dry-run"])
    assert opus.exit_code == 1 and "--allow-expensive-model" in opus.stderr
    assert not (tmp_path / "state" / "distill.duckdb").exists()  # refused before anything happened
    done = orjson.loads(runner.invoke(cli, [*state, "--json", "reprocess", *source, "--yes"]).stdout)
    assert done["status"] == "done" and done["extractor"] == "rules"
    again = orjson.loads(runner.invoke(cli, [*state, "--json", "reprocess", *source, "--dry-run"]).stdout)
    assert again["status"] == "already-done" and again["job_id"] == done["job_id"]
    other = runner.invoke(cli, [*state, "--json", "reprocess", *source, "--dry-run", "--model", "claude-sonnet-4-5"])
    planned = orjson.loads(other.stdout)
    assert planned["status"] == "dry-run" and planned["job_id"] != done["job_id"]  # another model: another job
    assert planned["estimate"]["model"] == "claude-sonnet-4-5" and planned["estimate"]["requests"] == 2
    allowed = runner.invoke(cli, [*state, "--json", "reprocess", *source, "--dry-run", "--model", "claude-opus-4-5",
                                  "--allow-expensive-model"])
    assert allowed.exit_code == 0 and orjson.loads(allowed.stdout)["estimate"]["model"] == "claude-opus-4-5"


def test_another_model_or_prompt_is_another_job():
    scope = reprocess.Scope(("/x",))
    from distiller.extract.select import Planned
    ids = {reprocess.job_id_of(scope, e) for e in (Planned("claude-haiku-5-5"), Planned("claude-sonnet-4-5"),
                                                   Planned("claude-haiku-5-5", prompt_version="anthropic-v9"),
                                                   RulesExtractor(), NewPromptRules(), NoFactsRules())}
    assert len(ids) == 6


def test_the_estimate_names_the_extractor_and_prices_only_what_will_be_paid(history, tmp_path):
    runner = CliRunner()
    state = ["--state-dir", str(tmp_path / "state")]
    free = runner.invoke(cli, [*state, "reprocess", "--source", str(history), "--dry-run"])
    assert "2 request(s) to the offline rules extractor: no API call, nothing to pay" in free.stdout
    assert "$" not in free.stdout
    paid = runner.invoke(cli, [*state, "reprocess", "--source", str(history), "--dry-run", "--model",
                               "claude-sonnet-4-5"])
    assert "to the Anthropic extractor, model claude-sonnet-4-5, ≈" in paid.stdout and "$" in paid.stdout
    assert runner.invoke(cli, [*state, "run", "--source", str(history)]).exit_code == 0
    done = runner.invoke(cli, [*state, "reprocess", "--source", str(history), "--yes"])
    assert "done; extractor: rules" in done.stdout  # what the run drew is drawn again: replayed, and said so
    assert "beliefs: replayed 3 (replayed: drawn again and already stored" in done.stdout


@pytest.mark.slow  # a real process on a pseudo-terminal
def test_the_confirmation_appears_at_once_and_names_the_extractor(history, tmp_path):
    import pty

    master, slave = pty.openpty()
    env = {**os.environ, "DISTILL_STATE_DIR": str(tmp_path / "state")}
    proc = subprocess.Popen([sys.executable, "-m", "distiller", "reprocess", "--source", str(history)], stdin=slave,
                            stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    seen, first = b"", None
    try:
        while b"?" not in seen.split(b"estimating", 1)[-1]:
            seen += os.read(master, 1024)
            if first is None and b"estimating" in seen:
                first = seen
        os.write(master, b"n\n")
        proc.wait(timeout=60)
    finally:
        proc.kill()
        os.close(master)
    assert b"reprocess with the offline rules extractor: estimating" in first  # before the estimate is done
    assert b"nothing to pay" in seen and b"reprocess with the offline rules extractor? [y/N]" in seen
    assert proc.returncode == 0 and b"cancelled" in proc.stdout.read()


@pytest.mark.slow
def test_a_killed_reprocess_resumes_and_pays_for_nothing_twice(history, settings, fake_anthropic):
    fake_anthropic.auto = True
    fake_anthropic.delay_seconds = 1.0
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake_anthropic.base_url,
           "DISTILL_STATE_DIR": str(settings.state_dir)}
    args = ["reprocess", "--source", str(history), "--yes"]
    distill = [sys.executable, "-m", "distiller"]
    job_dirs = settings.state_dir / "reprocess"

    def saved_one() -> bool:
        return any(b.results for d in job_dirs.glob("*") for b in batches.load_all(d))  # both may be at once

    process = subprocess.Popen([*distill, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(saved_one, "the first paid answer saved")
        process.send_signal(signal.SIGKILL)
        process.wait()
    finally:
        process.kill()
    def sent(agent: str) -> int:
        return sum(f'<transcript agent="{agent}">' in r["messages"][0]["content"]
                   for r in fake_anthropic.message_requests())

    assert sent("main") == 1  # answered and saved; the work agent's request may have been in flight
    fake_anthropic.delay_seconds = 0
    resumed = subprocess.run([*distill, "--json", *args], env=env, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    summary = orjson.loads(resumed.stdout)
    assert summary["status"] == "done" and summary["resumed"] and summary["resumed_batches"] == 1
    assert sent("main") == 1 and summary["requests"] == 2  # the saved answer was not paid for again
    paid = len(fake_anthropic.message_requests())
    again = subprocess.run([*distill, "--json", *args], env=env, capture_output=True, text=True, timeout=120)
    assert orjson.loads(again.stdout)["status"] == "already-done" and len(fake_anthropic.message_requests()) == paid
    assert rows(settings, "SELECT count(*) FROM evidence")[0][0] == 3


def test_files_whose_first_line_has_no_id_are_each_reprocessed(settings, agents):
    sessions = agents / "main" / "sessions"
    sessions.mkdir(parents=True)
    for n in range(3):
        (sessions / f"s{n}.jsonl").write_bytes(b"\n" + said(f"I live in city number {n}.", f"m{n}"))
    rules = Settings(state_dir=settings.state_dir, extractor="rules")
    assert pipeline.run_once(rules, [agents]).tally.messages == 3
    assert reprocess.reprocess(rules, [agents], extractor=NewPromptRules()).tally.messages == 3


def test_cli_refuses_a_missing_source_or_an_empty_window(history, tmp_path):
    runner = CliRunner()
    state = str(tmp_path / "state")
    missing = runner.invoke(cli, ["--state-dir", state, "reprocess", "--source", str(tmp_path / "nope"), "--yes"])
    assert missing.exit_code == 1 and "source not found" in missing.output
    empty = runner.invoke(cli, ["--state-dir", state, "reprocess", "--source", str(history), "--since", "2026-03-02",
                                "--until", "2026-03-01", "--yes"])
    assert empty.exit_code == 1 and "not before" in empty.output
    bad = runner.invoke(cli, ["--state-dir", state, "reprocess", "--source", str(history), "--since", "yesterday"])
    assert bad.exit_code == 2


def test_reprocess_counts_what_today_already_spent_against_the_day_budget(history, settings, fake_anthropic):
    from conftest import distill
    from fakeapi import candidates_reply

    fake_anthropic.responder = lambda items, _e: candidates_reply([], input_tokens=2_000_000)
    api = {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake_anthropic.base_url}
    first = orjson.loads(distill("--json", "run", env=api, check=True).stdout)
    assert first["cost_usd"] > 0
    sent = len(fake_anthropic.message_requests())
    fake_anthropic.responder = None

    out = distill("--json", "reprocess", "--source", str(history), "-y",
                  env={**api, "DISTILL_BUDGET_USD_PER_DAY": f"{first['cost_usd'] * 0.9:.6f}"})

    assert out.returncode == 0, out.stderr
    assert orjson.loads(out.stdout)["status"] == "budget"
    assert len(fake_anthropic.message_requests()) == sent  # today's budget was already spent by the run


@pytest.mark.slow
def test_a_resumed_reprocess_batch_spends_only_what_the_budget_leaves(history, settings, fake_anthropic):
    fake_anthropic.auto = True
    fake_anthropic.delay_seconds = 1.0
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake_anthropic.base_url,
           "DISTILL_STATE_DIR": str(settings.state_dir), "DISTILL_CONCURRENCY": "1"}
    args = ["reprocess", "--source", str(history), "--yes"]
    distill = [sys.executable, "-m", "distiller"]
    job_dirs = settings.state_dir / "reprocess"

    def saved_one() -> bool:
        return any(b.results for d in job_dirs.glob("*") for b in batches.load_all(d))

    process = subprocess.Popen([*distill, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(saved_one, "the first paid answer saved")
        process.send_signal(signal.SIGKILL)  # the second request in flight: its answer is never saved
        process.wait()
    finally:
        process.kill()
    fake_anthropic.delay_seconds = 0
    paid = len(fake_anthropic.message_requests())

    resumed = subprocess.run([*distill, "--json", *args], env={**env, "DISTILL_BUDGET_TOKENS": "1"},
                             capture_output=True, text=True, timeout=120)

    assert resumed.returncode == 0, resumed.stderr
    summary = orjson.loads(resumed.stdout)
    assert summary["status"] == "budget" and summary["resumed_batches"] == 1, summary
    assert len(fake_anthropic.message_requests()) == paid  # nothing the budget does not cover was sent


def test_reprocess_screens_recall_echoes_as_run_does(settings, history):
    """A recall line pasted back without its tag is an echo of a stored belief: run removes it (screen/echo.py),
    and reprocess, reading the same message again, must too, or the belief would cite its own echo."""
    rules = Settings(state_dir=settings.state_dir, extractor="rules")
    pipeline.run_once(rules, [history])
    (statement,) = [s for (s,) in rows(rules, "SELECT statement FROM beliefs WHERE statement LIKE '%Lisbon%'")]
    pasted = f"- [fact] {statement} (0.90)"
    session = history / "main" / "sessions" / "33333333-3333-3333-3333-333333333333.jsonl"
    session.write_bytes(header("33333333-3333-3333-3333-333333333333")
                        + said(f"{pasted}\nI play chess on Sundays.", "e1", "2026-03-03T10:00:00Z")
                        + said(pasted, "e2", "2026-03-03T10:01:00Z"))
    done = reprocess.reprocess(rules, [history], extractor=NewPromptRules())
    assert done.status == "done"
    assert done.tally.cleaned["recall-echo"] == 2 and done.tally.dropped["recall-echo"] == 1
    cited = rows(rules, "SELECT b.statement FROM evidence e JOIN beliefs b USING (belief_id) "
                        "WHERE e.message_id IN ('e1', 'e2')")
    assert cited and all("Lisbon" not in s for (s,) in cited)  # the chess is learned, the echo is not evidence
