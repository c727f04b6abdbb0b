"""`distill reprocess --batch-api`: submitted at half price, collected and committed by later invocations (or
`--collect`), with what was submitted, ended and committed; the real CLI and SDK against the fake API."""

from __future__ import annotations

import orjson
from conftest import distill
from test_reprocess import history, rows  # noqa: F401  (the fixture)


def reprocess(env, source, *args):
    result = distill("--json", "reprocess", "--source", str(source), "--yes", *args, env=env)
    assert result.returncode == 0, result.stderr
    return orjson.loads(result.stdout)


def test_submitted_then_collected_in_a_later_invocation(history, settings, fake_anthropic):  # noqa: F811
    env = {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake_anthropic.base_url}
    first = reprocess(env, history, "--batch-api")
    assert first["status"] == "submitted" and first["batch_api"] == {"submitted": 1, "ended": 0, "committed": 0,
                                                                     "waiting": 1}
    assert fake_anthropic.message_requests() == []  # nothing at full price
    assert rows(settings, "SELECT count(*) FROM evidence") == [(0,)]
    waiting = reprocess(env, history, "--collect")
    assert waiting["status"] == "submitted" and waiting["batch_api"]["waiting"] == 1 and waiting["requests"] == 0
    fake_anthropic.auto = True
    fake_anthropic.end_batches()
    collected = reprocess(env, history, "--collect")
    assert collected["status"] == "done" and collected["batch_api"] == {"submitted": 0, "ended": 1, "committed": 1,
                                                                        "waiting": 0}
    assert collected["beliefs"] and collected["cost_usd"] > 0
    assert rows(settings, "SELECT count(*) FROM evidence")[0][0] == 3
    creates = [r for r in fake_anthropic.requests if r.method == "POST" and r.path == "/v1/messages/batches"]
    assert len(creates) == 1 and fake_anthropic.message_requests() == []
    assert reprocess(env, history)["status"] == "already-done"  # nothing submitted or paid twice


def test_collect_without_a_job_or_batch_api_without_a_key_is_a_clear_error(history, fake_anthropic):  # noqa: F811
    env = {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake_anthropic.base_url}
    result = distill("reprocess", "--source", str(history), "--collect", env=env)
    assert result.returncode != 0 and "no reprocess job" in result.stderr
    result = distill("reprocess", "--source", str(history), "--yes", "--batch-api", "--extractor", "rules")
    assert result.returncode != 0 and "needs the Anthropic extractor" in result.stderr
