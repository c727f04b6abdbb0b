"""The openai-compatible extractor: the real `openai` client against a fake OpenAI-compatible server on 127.0.0.1,
hostile replies included, then through the real pipeline and CLI."""

from __future__ import annotations

import time

import duckdb
import orjson
import pytest
from conftest import append, distill, message_line, new_session
from fakeapi import candidate
from fakeopenai import FakeOpenAI, Reply

from distiller import prices
from distiller.config import Settings, override
from distiller.errors import DistillError
from distiller.extract.base import (
    AuthenticationFailed,
    BadRequest,
    ExtractionUnavailable,
    Extractor,
    ExtractRequest,
    Item,
    ModeRefused,
    NegotiatesOutputMode,
    RetriesTruncated,
    SubmitsBatches,
    Truncated,
    Unparsed,
)
from distiller.extract.openai_compatible import (
    OpenAICompatibleExtractor,
    from_settings,
    parse_reply,
)
from distiller.extract.prompt import OUTPUT_SCHEMA, SYSTEM_PROMPT
from distiller.pipeline.distill import Allowance, extract_splitting

MODEL = "llama3.1:8b"
DANA = "I'm Dana, by the way. I moved to Porto last spring."


def make_request(request_id: str = "r1", *texts: str) -> ExtractRequest:
    items = [Item("m1", "user", "2026-03-02T09:15:00Z", DANA, True),
             Item("m2", "assistant", "2026-03-02T09:15:20Z", "Nice to meet you, Dana!", False)]
    items += [Item(f"m{i}", "user", None, text, True) for i, text in enumerate(texts, start=3)]
    return ExtractRequest(request_id, "main", tuple(items))


def extractor(fake: FakeOpenAI, **kwargs) -> OpenAICompatibleExtractor:
    kwargs.setdefault("max_retries", 0)
    return OpenAICompatibleExtractor(MODEL, base_url=fake.base_url, **kwargs)


GOOD = candidate("m1", "I'm Dana, by the way.", "The user's name is Dana.")


# --- the contract


def test_it_is_an_extractor_that_retries_truncation_and_negotiates_its_mode_but_has_no_batches(fake_openai):
    ex = extractor(fake_openai)
    assert isinstance(ex, Extractor) and isinstance(ex, RetriesTruncated) and isinstance(ex, NegotiatesOutputMode)
    assert not isinstance(ex, SubmitsBatches)
    assert (ex.offline, ex.billed, ex.rates) == (False, True, prices.FREE)


# --- success, request shape, usage


def test_the_request_is_the_prompt_with_the_schema_and_the_reply_is_parsed_with_its_usage(fake_openai):
    fake_openai.enqueue_candidates([GOOD], usage={"prompt_tokens": 5000, "completion_tokens": 40,
                                                  "total_tokens": 5040})
    result = extractor(fake_openai).extract(make_request())
    (body,) = fake_openai.completion_requests()
    assert body["model"] == MODEL and body["max_tokens"] == 4096
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert '<item id="m1"' in body["messages"][1]["content"]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == OUTPUT_SCHEMA
    assert [c.statement for c in result.candidates] == ["The user's name is Dana."]
    (usage,) = result.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cost_usd, usage.estimated) == (5000, 40, 0.0, False)


def test_a_configured_price_is_charged(fake_openai):
    fake_openai.enqueue_candidates([GOOD], usage={"prompt_tokens": 1_000_000, "completion_tokens": 1_000_000})
    ex = extractor(fake_openai, rates=prices.configured(0.5, 2.0))
    (usage,) = ex.extract(make_request()).usage
    assert usage.cost_usd == pytest.approx(2.5)


@pytest.mark.parametrize("usage", [None, {"prompt_tokens": -3, "completion_tokens": 10}, {"prompt_tokens": "many"},
                                   {"prompt_tokens": 10**12, "completion_tokens": 1}])
def test_missing_or_unbelievable_usage_is_estimated_and_marked_so(fake_openai, usage):
    fake_openai.enqueue_candidates([GOOD], usage=usage)
    (counted,) = extractor(fake_openai).extract(make_request()).usage
    assert counted.estimated and counted.input_tokens > len(SYSTEM_PROMPT) // 4


def test_the_key_is_sent_as_a_bearer_token_and_a_rejected_one_is_authentication_failed():
    with FakeOpenAI(key="sk-local") as fake:
        fake.enqueue_candidates([GOOD])
        assert extractor(fake, api_key="sk-local").extract(make_request()).candidates
        with pytest.raises(AuthenticationFailed, match="OPENAI_API_KEY"):
            extractor(fake, api_key="wrong").extract(make_request())


# --- structured output: the strictest mode the server takes, found once


def test_a_server_that_refuses_json_schema_falls_back_to_json_object_once_for_the_run():
    with FakeOpenAI(rejects={"json_schema"}, reject_status=422) as fake:
        ex = extractor(fake)
        fake.enqueue_candidates([GOOD])
        fake.enqueue_candidates([GOOD])
        with pytest.raises(ModeRefused, match="asking in json_object") as refused:
            ex.extract(make_request("r1"))
        assert [u.estimated for u in refused.value.usage] == [True]  # the refusal is counted, estimated
        assert ex.extract(make_request("r1")).candidates and ex.extract(make_request("r2")).candidates
        assert fake.modes() == ["json_schema", "json_object", "json_object"]  # detected once, not per request
        assert ex.mode == "json_object" and "not supported" in (ex.mode_note or "")


def test_a_server_with_no_structured_output_gets_plain_text_parsed_from_prose():
    with FakeOpenAI(rejects={"json_schema", "json_object"}, error_style="ollama") as fake:
        ex = extractor(fake)
        fake.enqueue_content("Sure! Here are the beliefs:\n```json\n"
                             + orjson.dumps({"candidates": [GOOD]}).decode() + "\n```\nHope this helps.")
        for _ in range(2):  # one call per extract: the pipeline holds each against the budget before asking again
            with pytest.raises(ModeRefused) as refused:
                ex.extract(make_request())
            assert len(refused.value.usage) == 1
        result = ex.extract(make_request())
        assert [c.statement for c in result.candidates] == ["The user's name is Dana."]
        assert fake.modes() == ["json_schema", "json_object", "text"] and ex.mode == "text"
        assert len(result.usage) == 1 and "json_object refused" in (ex.mode_note or "")


def test_a_request_every_mode_refuses_is_a_bad_request_and_settles_nothing(fake_openai):
    ex = extractor(fake_openai)
    for _ in range(3):
        fake_openai.enqueue_error(400, "prompt is too long for the context window")
    for _ in range(2):
        with pytest.raises(ModeRefused):
            ex.extract(make_request())
    with pytest.raises(BadRequest, match="every output mode.*context window") as raised:
        ex.extract(make_request())
    assert not isinstance(raised.value, ModeRefused)
    assert len(raised.value.usage) == 1 and all(u.estimated for u in raised.value.usage)
    assert ex.mode == "json_schema" and not ex.mode_settled
    fake_openai.enqueue_candidates([GOOD])
    ex.extract(make_request())
    assert fake_openai.modes()[-1] == "json_schema"


@pytest.mark.parametrize("allowed", [1, 2, 3])
def test_finding_the_mode_makes_no_call_the_budget_did_not_hold_first(allowed):
    """A server that takes neither json_schema nor json_object costs three calls to find plain text: with a budget
    that covers exactly `allowed` of them (each held at its worst case, each refusal charged as it returns), the
    server sees exactly `allowed` calls, and what was not sent says why."""
    request = make_request("r1", "I play the cello on Sundays", "I brew my own coffee every morning")
    with FakeOpenAI(auto=True, rejects={"json_schema", "json_object"}) as fake:
        with pytest.raises(ModeRefused) as refused:
            extractor(fake).extract(request)
        charged = refused.value.usage[0].tokens  # what one refusal costs the budget
        probe = extractor(fake)
        held = Allowance(tokens=10**9).hold(probe, request)
        assert held is not None and charged < held.tokens
        before = len(fake.completion_requests())
        allowance = Allowance(tokens=held.tokens + (allowed - 1) * charged)
        extraction, failed = extract_splitting(probe, request, allowance=allowance)
        calls = len(fake.completion_requests()) - before
    assert calls == allowed
    assert allowance.tokens is not None and allowance.tokens >= 0 and allowance.held_tokens == 0
    assert sum(u.tokens for u in extraction.usage) <= held.tokens + (allowed - 1) * charged
    if allowed < 3:
        assert failed and all("not sent" in reason for _, reason in failed) and not extraction.candidates
    else:
        assert not failed and extraction.candidates and probe.mode == "text"


def test_once_the_mode_is_settled_a_refusal_is_the_requests_alone(fake_openai):
    ex = extractor(fake_openai)
    fake_openai.enqueue_candidates([GOOD])
    ex.extract(make_request())
    fake_openai.enqueue_error(400, "bad request")
    with pytest.raises(BadRequest):
        ex.extract(make_request())
    assert fake_openai.modes() == ["json_schema", "json_schema"] and ex.mode == "json_schema"


# --- hostile replies


@pytest.mark.parametrize("content", [
    "<think>The user said {name: Dana}. I will answer.</think>\n" + orjson.dumps({"candidates": [GOOD]}).decode(),
    "Here you go: " + orjson.dumps({"candidates": [GOOD]}).decode() + " -- done {not json}",
    "```\n" + orjson.dumps({"candidates": [GOOD]}).decode() + "\n```",
])
def test_prose_fences_and_think_blocks_around_the_json_are_skipped(content):
    assert [c.statement for c in parse_reply(content)] == ["The user's name is Dana."]


def test_wrong_types_and_extra_fields_are_kept_for_verification_to_judge():
    odd = {**GOOD, "confidence": "high", "importance": 7.5, "mood": "cheerful", "evidence": GOOD["evidence"][0]}
    (parsed,) = parse_reply(orjson.dumps({"candidates": [odd, "not an object", 3], "extra": True}).decode())
    assert parsed.confidence != parsed.confidence and parsed.importance == 0  # NaN and 0: out of range downstream
    assert parsed.evidence[0].item_id == "m1"


@pytest.mark.parametrize("content", ['{"candidates": [{"statement": "The user', "no json here", "", None,
                                     '{"beliefs": []}', '["candidates"]'])
def test_a_reply_that_does_not_parse_is_unparsed_with_its_cost(fake_openai, content):
    fake_openai.enqueue_content(content)
    with pytest.raises(Unparsed, match="did not parse") as raised:
        extractor(fake_openai).extract(make_request())
    assert len(raised.value.usage) == 1 and len(fake_openai.completion_requests()) == 1
    assert "temperature" not in fake_openai.completion_requests()[0]  # asked again, it is a fresh sample


def test_a_garbled_body_is_not_a_silent_empty_answer(fake_openai):
    fake_openai.enqueue(Reply(body=b"<html>502 from the proxy</html>"))
    fake_openai.enqueue(Reply(body={"choices": []}))
    with pytest.raises(Unparsed):
        extractor(fake_openai).extract(make_request())
    with pytest.raises(Unparsed):
        extractor(fake_openai).extract(make_request())


def test_a_reply_cut_at_max_tokens_is_truncated_with_room_to_retry(fake_openai):
    fake_openai.enqueue_content('{"candidates": [{"statement": "The user', finish_reason="length")
    ex = extractor(fake_openai)
    with pytest.raises(Truncated) as raised:
        ex.extract(make_request())
    assert raised.value.max_tokens == 4096 and ex.more_room(4096) == 8192 and ex.more_room(16_000) is None
    assert len(fake_openai.completion_requests()) == 1  # no blind retry: the pipeline retries with more room
    fake_openai.enqueue_candidates([GOOD])
    ex.extract(make_request(), max_tokens=8192)
    assert fake_openai.completion_requests()[-1]["max_tokens"] == 8192


# --- push-back and failures


def test_429_and_503_are_retried_with_backoff_and_told_to_the_listener(fake_openai):
    fake_openai.enqueue_error(429, "slow down", headers={"retry-after-ms": "2"})
    fake_openai.enqueue_error(503, "overloaded")
    fake_openai.enqueue_candidates([GOOD])
    heard: list[tuple[int, float | None]] = []
    started = time.monotonic()
    result = extractor(fake_openai, max_retries=2).extract(make_request(), on_overload=lambda s, w: heard.append((s, w)))
    assert len(result.candidates) == 1 and result.usage[0].retries == 2
    assert heard == [(429, pytest.approx(0.002)), (503, pytest.approx(0.001))]
    assert time.monotonic() - started < 2.0


@pytest.mark.parametrize("status", [429, 500, 502, 503])
def test_push_back_after_all_retries_is_unavailable(fake_openai, status):
    for _ in range(3):
        fake_openai.enqueue_error(status)
    with pytest.raises(ExtractionUnavailable):
        extractor(fake_openai, max_retries=2).extract(make_request())


def test_an_unreachable_server_is_unavailable():
    ex = OpenAICompatibleExtractor(MODEL, base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=2)
    with pytest.raises(ExtractionUnavailable, match="unreachable"):
        ex.extract(make_request())


def test_a_model_the_server_does_not_have_names_the_fix():
    with FakeOpenAI(models=("qwen2.5:7b",), error_style="ollama") as fake, \
            pytest.raises(DistillError, match="ollama pull llama3.1:8b"):
        extractor(fake).extract(make_request())


# --- settings


def test_settings_name_the_server_and_the_model_or_refuse(settings, monkeypatch):
    chosen = override(settings, extractor="openai-compatible")
    with pytest.raises(DistillError, match="--base-url"):
        from_settings(chosen)
    with pytest.raises(DistillError, match="--model"):
        from_settings(override(chosen, base_url="http://localhost:11434/v1"))
    monkeypatch.setenv("OPENAI_BASE_URL", "http://gpu-box:8000/v1")
    ex = from_settings(override(chosen, model="Qwen/Qwen2.5-7B-Instruct", price_input_per_mtok=0.2))
    assert ex.base_url == "http://gpu-box:8000/v1" and ex.rates.input == 0.2
    with pytest.raises(DistillError, match="batch"):
        from_settings(override(chosen, model=MODEL, batch_api=True))


# --- through the pipeline and the CLI


def session_of(agents, *texts: str, agent: str = "main") -> None:
    path = new_session(agents, agent)
    for text in texts:
        append(path, message_line(text))


def stored(settings: Settings) -> list[str]:
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        return [s for (s,) in con.execute("SELECT statement FROM beliefs ORDER BY 1").fetchall()]


def run_json(fake: FakeOpenAI, *args: str):
    result = distill("--json", "run", "--extractor", "openai-compatible", "--base-url", fake.base_url,
                     "--model", MODEL, *args)
    return result.returncode, (orjson.loads(result.stdout) if result.stdout.strip() else None), result.stderr


def test_a_run_through_a_server_without_json_schema_finds_the_mode_once_records_it_and_commits(agents, settings):
    facts = ["I'm allergic to peanuts and shellfish", "I live in Lisbon near the river", "I play the cello on Sundays",
             "I brew my own coffee every morning"]
    for n, fact in enumerate(facts):
        session_of(agents, fact, agent=f"agent{n}")  # one request each, four in flight
    with FakeOpenAI(auto=True, rejects={"json_schema"}) as fake:
        code, summary, err = run_json(fake, "--concurrency", "4")
        modes = fake.modes()
    assert code == 0, err
    assert summary["extractor"] == "openai-compatible" and summary["model"] == MODEL
    assert modes.count("json_schema") == 1 and modes.count("json_object") == 4  # found once, not per request
    assert summary["output_mode"] == "json_object" and "json_schema" in summary["output_mode_note"]
    assert summary["cost_usd"] == 0 and summary["tokens"] > 0
    assert len(stored(settings)) == 4


def test_cross_request_citations_and_floods_are_refused_as_from_any_model(agents, settings):
    session_of(agents, "I'm allergic to peanuts and shellfish", agent="alpha")
    session_of(agents, "I live in Lisbon near the river", agent="beta")

    def steal(items, earlier):  # its own items, every earlier request's, and a flood on top
        honest = [candidate(i.item_id, i.text) for i in [*earlier, *items] if i.citable]
        flood = [candidate(items[0].item_id, items[0].text, attribute=f"fact-{n}") for n in range(60)]
        return Reply(content=orjson.dumps({"candidates": honest + flood}).decode())

    with FakeOpenAI() as fake:
        fake.responder = steal
        code, summary, err = run_json(fake)
    assert code == 0, err
    assert summary["rejected"]["other-request"] == 1
    assert summary["rejected"]["over-candidate-cap"] > 0 and summary["quarantined_requests"] == 0
    assert len(stored(settings)) == 2


def test_a_reply_that_does_not_parse_is_asked_once_more_and_nothing_is_split(agents, settings):
    session_of(agents, "I'm allergic to peanuts and shellfish", "I live in Lisbon near the river")
    with FakeOpenAI(auto=True) as fake:
        fake.enqueue_content("Sorry, here it is: {candidates: [oops")
        code, summary, err = run_json(fake)
        calls = len(fake.completion_requests())
    assert code == 0, err
    assert calls == 2 and summary["model_calls"] == 2 and summary["quarantined_requests"] == 0
    assert len(stored(settings)) == 2


def test_a_request_whose_replies_never_parse_is_split_then_quarantined_with_its_reason(agents, settings):
    session_of(agents, "I'm allergic to peanuts and shellfish", "I live in Lisbon near the river")
    with FakeOpenAI() as fake:
        fake.responder = lambda items, _: Reply(content="I cannot produce JSON, sorry.")
        code, summary, err = run_json(fake)
        calls = len(fake.completion_requests())
    assert code == 0, err
    assert summary["quarantined_requests"] == 2 and calls == 6  # whole, then each half: asked twice each
    listed = orjson.loads(distill("--json", "batches", "list", check=True).stdout)
    assert "the reply did not parse" in orjson.dumps(listed).decode()


def test_a_truncated_reply_is_retried_with_more_room_through_the_pipeline(agents, settings):
    session_of(agents, "I'm allergic to peanuts and shellfish")
    with FakeOpenAI(auto=True) as fake:
        fake.enqueue_content('{"candidates": [{"statement": "The user', finish_reason="length")
        code, _, err = run_json(fake)
        rooms = [b["max_tokens"] for b in fake.completion_requests()]
    assert code == 0, err
    assert rooms == [4096, 8192] and len(stored(settings)) == 1


def test_a_rate_limited_server_stops_the_run_with_75_and_the_next_resumes(agents, settings):
    session_of(agents, "I'm allergic to peanuts and shellfish")
    with FakeOpenAI(auto=True) as fake:
        for _ in range(3):
            fake.enqueue_error(429, "busy")
        code, _, err = run_json(fake)
        assert code == 75, err
        code, summary, err = run_json(fake)
    assert code == 0, err
    assert summary["resumed_batches"] == 1 and len(stored(settings)) == 1


def test_a_token_budget_holds_a_free_local_model(agents, settings):
    session_of(agents, "I'm allergic to peanuts and shellfish")
    with FakeOpenAI(auto=True) as fake:
        code, summary, err = run_json(fake, "--budget-tokens", "1000")
        assert fake.completion_requests() == []
    assert code == 0, err
    assert summary["budget_stop"]


def test_a_dry_run_prices_a_local_model_at_zero(agents, settings):
    session_of(agents, "I'm allergic to peanuts and shellfish")
    with FakeOpenAI() as fake:
        code, summary, err = run_json(fake, "--dry-run")
        assert fake.completion_requests() == []
    assert code == 0, err
    assert summary["estimated_tokens"] > 0 and summary["estimated_cost_usd"] == 0


# --- doctor


def doctor_checks(env: dict[str, str]) -> dict[str, tuple[str, str]]:
    result = distill("--json", "doctor", env=env)
    return {c["name"]: (c["level"], c["detail"]) for c in orjson.loads(result.stdout)["checks"]}


def test_doctor_names_the_backend_and_asks_the_server_for_the_model(tmp_path):
    with FakeOpenAI(models=("qwen2.5:7b", "llama3.1:latest")) as fake:
        env = {"DISTILL_EXTRACTOR": "openai-compatible", "DISTILL_BASE_URL": fake.base_url}
        checks = doctor_checks({**env, "DISTILL_MODEL": "llama3.1"})
        assert checks["extractor"][0] == "ok" and "openai-compatible, model llama3.1" in checks["extractor"][1]
        assert checks["server"] == ("ok", f"{fake.base_url} serves llama3.1")
        assert "not set" in checks["api_key"][1]
        missing = doctor_checks({**env, "DISTILL_MODEL": "mistral:7b"})["server"]
        assert missing[0] == "problem" and "qwen2.5:7b" in missing[1]
    gone = doctor_checks({**env, "DISTILL_MODEL": "qwen2.5:7b"})["server"]
    assert gone[0] == "problem" and "did not answer" in gone[1]
    assert doctor_checks({"DISTILL_EXTRACTOR": "openai-compatible"})["server"][0] == "problem"


def test_a_schedule_for_a_local_server_needs_no_anthropic_key_but_a_server_and_a_model(tmp_path, agents, settings,
                                                                                        monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    units = ["schedule", "install", "systemd", "--dir", str(tmp_path / "units"), "--extractor", "openai-compatible"]
    no_server = distill(*units, "--model", MODEL)
    assert no_server.returncode == 1 and "--base-url" in no_server.stderr
    assert not (tmp_path / "units").exists()
    only_openai_env = distill(*units, "--model", MODEL, env={"OPENAI_BASE_URL": "http://localhost:11434/v1"})
    assert only_openai_env.returncode == 1 and "--base-url" in only_openai_env.stderr  # the unit would not see it
    from_shell = distill(*units, "--model", MODEL, env={"DISTILL_BASE_URL": "http://gpu-box:11434/v1"})
    assert from_shell.returncode == 0, from_shell.stderr  # written into the unit, as the sources are
    assert "--base-url http://gpu-box:11434/v1" in (tmp_path / "units" / "distill.service").read_text()
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    (settings.state_dir / "distill.toml").write_text('base_url = "http://localhost:11434/v1"\n')
    done = distill(*units, "--model", MODEL)
    assert done.returncode == 0, done.stderr


def test_the_call_asking_again_is_held_against_the_budget_first(agents, settings):
    session_of(agents, "I'm allergic to peanuts and shellfish")
    with FakeOpenAI(auto=True) as fake:
        fake.enqueue_content("no json at all")
        code, summary, err = run_json(fake, "--budget-tokens", "12000")  # one call's worst case fits, not two
        calls = len(fake.completion_requests())
    assert code == 0, err
    assert calls == 1 and summary["budget_stop"] and summary["quarantined_requests"] == 1
    assert summary["tokens"] <= 12000
