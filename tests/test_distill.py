"""`distill run` as the product: the real CLI and the real anthropic SDK against the fake Messages API."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import orjson
import pytest
from conftest import append, distill, ingested, message_line, new_session
from fakeapi import candidate

from distiller import batch as batches
from distiller.config import Settings

FACT = "I'm allergic to peanuts and I live in Lisbon"


@pytest.fixture
def api(fake_anthropic):
    return {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake_anthropic.base_url}


@pytest.fixture
def transcript(agents):
    path = new_session(agents)
    append(path, message_line("Where do you live these days?", role="assistant", message_id="a0000001"))
    append(path, message_line(FACT, message_id="u0000001"))
    append(path, message_line("thanks!", message_id="u0000002"))
    return path


def run_json(api, *args, check=True):
    result = distill("--json", "run", *args, env=api)
    if check:
        assert result.returncode == 0, result.stderr
        return orjson.loads(result.stdout)
    return result


def beliefs(settings: Settings) -> list[tuple]:
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        return con.execute("SELECT statement, status FROM beliefs ORDER BY statement").fetchall()


def test_success_caches_the_static_prompt_and_commits_verified_beliefs(api, fake_anthropic, transcript, settings):
    fake_anthropic.enqueue_candidates([candidate("m2", "allergic to peanuts", "The user is allergic to peanuts.")])
    summary = run_json(api)
    assert (summary["extractor"], summary["model"]) == ("anthropic", "claude-haiku-5-5")
    assert summary["beliefs"] == {"inserted": 1} and summary["tokens"] > 0 and summary["cost_usd"] > 0
    (body,) = fake_anthropic.message_requests()
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["output_config"]["format"]["type"] == "json_schema"
    assert "tool_choice" not in body and "temperature" not in body
    content = body["messages"][-1]["content"]
    user_text = content if isinstance(content, str) else content[-1]["text"]
    assert 'cite="no"' in user_text and FACT in user_text and "thanks!" not in user_text
    assert [s for s, _ in beliefs(settings)] == ["The user is allergic to peanuts."]
    assert batches.load_all(settings.state_dir) == []


def test_hallucinated_ids_fabricated_quotes_and_secrets_are_refused(api, fake_anthropic, transcript, settings):
    fake_anthropic.enqueue_candidates([
        candidate("m9", "allergic to peanuts"),
        candidate("m1", "Where do you live"),
        candidate("m2", "allergic to shellfish"),
        candidate("m2", "I live in Lisbon", "The user's API key is sk-ant-api03-" + "x1Y2z3W4" * 6, attribute="key"),
        candidate("m2", "live in Lisbon", "The user lives in Lisbon.", attribute="home-city"),
    ])
    summary = run_json(api)
    # a key the messages never showed is a statement they do not support; a key they did show was redacted
    assert summary["rejected"] == {"context-cited": 1, "quote-not-found": 1, "unknown-item": 1,
                                   "unsupported-statement": 1}
    assert [s for s, _ in beliefs(settings)] == ["The user lives in Lisbon."]


def test_overloaded_then_success_is_retried_by_the_sdk(api, fake_anthropic, transcript, settings):
    fake_anthropic.enqueue_error(529, "overloaded_error")
    fake_anthropic.enqueue_candidates([candidate("m2", "live in Lisbon", "The user lives in Lisbon.")])
    assert run_json(api)["beliefs"] == {"inserted": 1}
    assert len(fake_anthropic.message_requests()) == 2


def test_rate_limited_run_stops_with_75_and_the_next_run_resumes(api, fake_anthropic, transcript, settings):
    for _ in range(3):  # the first call and the SDK's two retries
        fake_anthropic.enqueue_error(429, "rate_limit_error")
    result = run_json(api, check=False)
    assert result.returncode == 75, result.stderr
    (pending,) = batches.load_all(settings.state_dir)
    assert pending.status == batches.PENDING
    assert ingested(settings) == []
    status = orjson.loads(distill("--json", "status", check=True).stdout)
    assert status["bytes_behind"] > 0 and status["last_run"]["status"] == "unavailable"
    fake_anthropic.enqueue_candidates([candidate("m2", "live in Lisbon", "The user lives in Lisbon.")])
    summary = run_json(api)
    assert summary["resumed_batches"] == 1 and summary["beliefs"] == {"inserted": 1}
    assert len(ingested(settings)) == 3 and batches.load_all(settings.state_dir) == []
    assert run_json(api)["messages"] == 0


@pytest.mark.parametrize("failure", ["400", "refusal", "truncated"])
def test_refused_requests_are_split_then_quarantined_and_can_be_retried(api, fake_anthropic, agents, settings,
                                                                         failure):
    path = new_session(agents)
    append(path, message_line("I'm allergic to peanuts", message_id="u0000001"))
    append(path, message_line("I live in Lisbon", message_id="u0000002"))
    for _ in range(6 if failure == "truncated" else 3):  # the request, then its halves; truncated: twice each
        if failure == "400":
            fake_anthropic.enqueue_error(400, "invalid_request_error", "prompt is too long")
        elif failure == "refusal":
            fake_anthropic.enqueue_stop_reason("refusal")
        else:
            fake_anthropic.enqueue_text('{"candidates": [{"statement": "The user', stop_reason="max_tokens")
    summary = run_json(api)
    assert summary["quarantined_requests"] == 2 and summary["messages"] == 2
    listed = orjson.loads(distill("--json", "batches", "list", check=True).stdout)["batches"]
    (quarantined,) = [b for b in listed if b["status"] == "quarantined"]
    status = orjson.loads(distill("--json", "status", check=True).stdout)
    assert status["batches"] == {"quarantined": 1} and status["quarantined"][0]["batch_id"] == quarantined["batch_id"]
    assert run_json(api)["messages"] == 0  # the cursors moved on: nothing is read twice
    fake_anthropic.enqueue_candidates([candidate("m1", "allergic to peanuts", "The user is allergic to peanuts.")])
    fake_anthropic.enqueue_candidates([candidate("m2", "I live in Lisbon", "The user lives in Lisbon.")])
    retried = orjson.loads(distill("--json", "batches", "retry", quarantined["batch_id"], env=api, check=True).stdout)
    assert retried["beliefs"] == {"inserted": 2}
    assert [b for b in orjson.loads(distill("--json", "batches", "list", check=True).stdout)["batches"]] == []


def test_bad_key_exits_1_with_a_clear_message(api, fake_anthropic, transcript):
    fake_anthropic.enqueue_error(401, "authentication_error", "invalid x-api-key")
    result = run_json(api, check=False)
    assert result.returncode == 1 and "ANTHROPIC_API_KEY" in result.stderr and "Traceback" not in result.stderr


def test_missing_key_with_the_anthropic_extractor_is_a_clear_error(transcript):
    result = distill("run", "--extractor", "anthropic")
    assert result.returncode == 1 and "ANTHROPIC_API_KEY" in result.stderr


def test_opus_needs_the_expensive_flag(api, transcript):
    result = distill("run", "--model", "claude-opus-5-5", env=api)
    assert result.returncode == 1 and "--allow-expensive-model" in result.stderr


def test_budget_stops_the_run_before_the_batch_and_keeps_the_cursor(api, fake_anthropic, transcript, settings):
    summary = run_json(api, "--budget-usd", "0.0000001")
    assert summary["budget_stop"] and summary["messages"] == 0
    assert fake_anthropic.message_requests() == [] and ingested(settings) == []
    assert orjson.loads(distill("--json", "status", check=True).stdout)["last_run"]["status"] == "budget"


def test_dry_run_estimates_tokens_and_cost_without_calling(api, fake_anthropic, transcript, settings):
    summary = run_json(api, "--dry-run")
    assert summary["requests"] == 1 and summary["estimated_tokens"] > 0 and summary["estimated_cost_usd"] > 0
    assert fake_anthropic.message_requests() == [] and not settings.db_path.exists()


def test_sigkill_after_results_are_saved_never_pays_twice(api, fake_anthropic, transcript, settings):
    fake_anthropic.enqueue_candidates([candidate("m2", "live in Lisbon", "The user lives in Lisbon.")])
    fake_anthropic.delay_seconds = 2.0
    run = subprocess.Popen([sys.executable, "-m", "distiller", "run"], env={**os.environ, **api,
                           "DISTILL_DB_WAIT_SECONDS": "30"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    holder = None
    try:
        wait_for(lambda: fake_anthropic.message_requests(), "the model call")
        # While the model answers, take the database so the run must wait in its commit, after saving results.
        holder = subprocess.Popen(
            [sys.executable, "-c", "import duckdb,sys,time; c=duckdb.connect(sys.argv[1]); print(1, flush=True); "
             "time.sleep(60)", str(settings.db_path)], stdout=subprocess.PIPE, text=True)
        assert holder.stdout.readline().strip() == "1"
        wait_for(lambda: [b for b in batches.load_all(settings.state_dir) if b.status == batches.DISTILLED],
                 "the saved results")
        run.send_signal(signal.SIGKILL)
        run.wait()
    finally:
        run.kill()
        if holder is not None:
            holder.kill()
            holder.wait()
    fake_anthropic.delay_seconds = 0
    summary = run_json(api)
    assert summary["resumed_batches"] == 1 and summary["beliefs"] == {"inserted": 1}
    assert len(fake_anthropic.message_requests()) == 1
    assert len(ingested(settings)) == 3


def wait_for(condition, what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    pytest.fail(f"timed out waiting for {what}")


def test_external_agent_flow_stages_then_commits(fake_anthropic, transcript, settings, tmp_path):
    staged = run_json({}, "--no-llm")
    (path,) = staged["staged"]
    batch = batches.load(Path(path))
    item = next(b.item for b in batch.items if b.item.evidence)
    assert run_json({}, check=False).returncode == 75  # the staged batch must be committed first
    answer = tmp_path / "beliefs.jsonl"
    answer.write_bytes(orjson.dumps(candidate(item.item_id, "live in Lisbon", "The user lives in Lisbon.")) + b"\n"
                       + orjson.dumps(candidate(item.item_id, "lives on Mars", "The user lives on Mars.")) + b"\n")
    result = orjson.loads(distill("--json", "commit", batch.batch_id, "--beliefs", str(answer), check=True).stdout)
    assert result["beliefs"] == {"inserted": 1} and result["rejected"] == {"quote-not-found": 1}
    assert run_json({})["messages"] == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    failed = distill("commit", batch.batch_id, "--beliefs", str(bad))
    assert failed.returncode == 1 and "not valid JSON" in failed.stderr


def test_offline_rules_are_the_default_without_a_key(transcript, settings):
    summary = run_json({})
    assert summary["extractor"] == "rules" and summary["beliefs"]["inserted"] == 2
    statements = [s for s, _ in beliefs(settings)]
    assert "The user is allergic to peanuts." in statements


def test_batches_api_submits_then_a_later_run_collects(api, fake_anthropic, transcript, settings):
    summary = run_json(api, "--batch-api")
    (submitted,) = summary["submitted"]
    assert summary["messages"] == 3 and ingested(settings) == []
    (saved,) = batches.load_all(settings.state_dir)
    assert saved.status == batches.SUBMITTED and saved.remote_id
    waiting = run_json(api, check=False)
    assert waiting.returncode == 75 and "still being processed" in waiting.stderr
    fake_anthropic.enqueue_candidates([candidate("m2", "live in Lisbon", "The user lives in Lisbon.")])
    fake_anthropic.end_batches()
    collected = run_json(api)
    assert collected["resumed_batches"] == 1 and collected["beliefs"] == {"inserted": 1}
    assert 0 < collected["cost_usd"] and len(ingested(settings)) == 3
    assert batches.load_all(settings.state_dir) == [] and submitted == saved.batch_id


def test_discarding_a_staged_batch_reads_its_messages_again(fake_anthropic, transcript, settings):
    staged = run_json({}, "--no-llm")
    batch_id = batches.load(Path(staged["staged"][0])).batch_id
    result = orjson.loads(distill("--json", "batches", "discard", batch_id, check=True).stdout)
    assert result == {"discarded": [batch_id]} and batches.load_all(settings.state_dir) == []
    again = run_json({})
    assert again["messages"] == 3 and again["extractor"] == "rules"
    missing = distill("batches", "discard", batch_id)
    assert missing.returncode == 1 and "no staged or quarantined batch" in missing.stderr


def test_a_quarantined_batch_can_be_given_up(api, fake_anthropic, transcript, settings):
    for _ in range(3):
        fake_anthropic.enqueue_error(400, "invalid_request_error", "prompt is too long")
    assert run_json(api)["quarantined_requests"] >= 1
    (quarantined,) = orjson.loads(distill("--json", "batches", "list", check=True).stdout)["batches"]
    distill("batches", "discard", quarantined["batch_id"], check=True)
    assert orjson.loads(distill("--json", "batches", "list", check=True).stdout)["batches"] == []
    assert len(ingested(settings)) == 3  # the messages stay recorded; only their extraction is given up
