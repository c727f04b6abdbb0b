"""Model requests in flight at once: the real CLI and SDK against the fake Messages API, answering out of order,
pushing back with 429/529, under a budget, and killed mid-batch. Also the per-batch result journal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import duckdb
import orjson
import pytest
from conftest import append, distill, message_line, new_session, wait_for
from fakeapi import Reply, candidate, candidates_reply, error_body

from distiller.batches import files as batches
from distiller.batches import journal
from distiller.config import Settings
from distiller.extract.base import Candidate, EvidenceRef, Extraction, Usage
from distiller.extract.rules import RulesExtractor
from distiller.pipeline import pace

FILLER = " ".join(["and the notes I keep about the migration plan stay in the project wiki"] * 6)


@pytest.fixture
def api(fake_anthropic):
    # A request budget of 100 tokens puts each of these long messages in a request of its own.
    return {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake_anthropic.base_url,
            "DISTILL_REQUEST_BUDGET_TOKENS": "100"}


def notes(agents: Path, n: int) -> None:
    path = new_session(agents)
    for i in range(n):
        append(path, message_line(f"I keep note {i:03d} in my journal, {FILLER}.", message_id=f"u{i:07d}"))


def note_of(items) -> str:
    (item,) = [i for i in items if i.citable]
    return item.text[:len("I keep note 000")]


def answer(items, **usage) -> Reply:
    """One candidate citing the request's note."""
    (item,) = [i for i in items if i.citable]
    quote = note_of(items) + " in my journal"
    return candidates_reply([candidate(item.item_id, quote, f"The user keeps {quote[7:15]} in a journal.")], **usage)


def run_json(api, *args, state_dir=None, check=True):
    result = distill("--json", "run", *args, env=api, state_dir=state_dir)
    if check:
        assert result.returncode == 0, result.stderr
        return orjson.loads(result.stdout)
    return result


def stored(db: Path) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT statement, status FROM beliefs ORDER BY rowid").fetchall()


def journal_lines(state_dir: Path) -> int:
    return sum(p.read_bytes().count(b"\n") for p in batches.batches_dir(state_dir).glob("*.journal"))


@pytest.mark.slow  # answers held back for seconds; CI runs it with the other slow tests
def test_answers_out_of_order_are_journaled_at_once_and_committed_in_request_order(api, fake_anthropic, agents,
                                                                                   settings, tmp_path):
    notes(agents, 8)
    release = threading.Event()

    def responder(items, _earlier):
        if note_of(items) == "I keep note 001":
            release.wait(60)  # the second request answers last (the first goes alone, to write the prompt cache)
        return answer(items)

    fake_anthropic.responder = responder
    run = subprocess.Popen([sys.executable, "-m", "distiller", "--json", "run", "--concurrency", "4"],
                           env={**os.environ, **api}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # The seven others are answered and on disk while the second is still in flight.
        wait_for(lambda: journal_lines(settings.state_dir) == 7, "seven journaled answers")
        assert len(fake_anthropic.message_requests()) == 8
    finally:
        release.set()
        out, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    assert orjson.loads(out)["beliefs"] == {"inserted": 8}
    assert batches.load_all(settings.state_dir) == [] and journal_lines(settings.state_dir) == 0
    one_at_a_time = tmp_path / "sequential"
    fake_anthropic.responder = lambda items, _earlier: answer(items)
    run_json(api, "--concurrency", "1", state_dir=one_at_a_time)
    assert stored(settings.db_path) == stored(one_at_a_time / "distill.duckdb")  # the same rows, in the same order
    assert sorted(s for s, _ in stored(settings.db_path)) == [f"The user keeps note {i:03d} in a journal."
                                                               for i in range(8)]


@pytest.mark.slow  # real waits of the retry-after; CI runs it with the other slow tests
def test_retry_after_holds_every_new_request(api, fake_anthropic, agents, settings):
    notes(agents, 8)
    calls = []

    def responder(items, _earlier):
        calls.append(note_of(items))
        if len(calls) == 1:
            return Reply(429, body=error_body("rate_limit_error", "slow down"), headers={"retry-after": "1"})
        time.sleep(0.3)
        return answer(items)

    fake_anthropic.responder = responder
    summary = run_json(api, "--concurrency", "4")
    assert summary["beliefs"] == {"inserted": 8} and summary["overloaded"] == 1
    posts = [r for r in fake_anthropic.requests if r.path == "/v1/messages"]
    assert len(posts) == 9  # eight requests and the one retry
    refused_at = posts[0].at
    later = posts[4:]  # all but the first four, sent before the 429 came back
    assert later and min(r.at for r in later) >= refused_at + 0.95, [r.at - refused_at for r in later]


def test_429_and_529_lower_the_concurrency_and_everything_is_still_committed_once(api, fake_anthropic, agents,
                                                                                 settings):
    notes(agents, 12)
    calls = []
    lock = threading.Lock()

    def responder(items, _earlier):
        with lock:
            calls.append(note_of(items))
            n = len(calls)
        if n in (1, 2):
            status, kind = (529, "overloaded_error") if n == 1 else (429, "rate_limit_error")
            return Reply(status, body=error_body(kind, "pushed back"), headers={"retry-after-ms": "100"})
        time.sleep(0.2)
        return answer(items)

    fake_anthropic.responder = responder
    summary = run_json(api, "--concurrency", "4")
    assert summary["overloaded"] == 2 and summary["concurrency_lowest"] == 1
    assert summary["beliefs"] == {"inserted": 12} and summary["quarantined_requests"] == 0
    assert fake_anthropic.most_in_flight <= 4
    assert sorted(set(calls)) == sorted(calls[2:]) and len(calls) == 14  # each note answered once; two retried
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        assert con.execute("SELECT count(*), count(DISTINCT message_id) FROM ingested").fetchone() == (12, 12)


def test_the_budget_holds_each_calls_worst_case_while_it_is_in_flight(api, fake_anthropic, agents, settings):
    notes(agents, 8)
    planned = run_json(api, "--dry-run")["estimated_tokens"]
    budget = int(planned * 1.4)  # the batch fits the budget by its estimate; its calls' real output does not

    def responder(items, _earlier):
        time.sleep(0.3)
        return answer(items, output_tokens=3000)

    fake_anthropic.responder = responder
    summary = run_json(api, "--concurrency", "8", "--budget-tokens", str(budget))
    sent = len(fake_anthropic.message_requests())
    assert 0 < summary["tokens"] <= budget
    assert summary["budget_stop"] and summary["quarantined_requests"] == 8 - sent > 0
    # each call holds its input and all 4096 tokens of output it may use: not all eight fit at once
    assert fake_anthropic.most_in_flight < 8


def _start(api, *args):
    return subprocess.Popen([sys.executable, "-m", "distiller", "run", "--concurrency", "4", *args],
                            env={**os.environ, **api}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _kill_after_journaled(api, settings, answers: int) -> None:
    """A real run, SIGKILLed once at least `answers` answers are in its journal."""
    run = _start(api)
    try:
        wait_for(lambda: journal_lines(settings.state_dir) >= answers, f"{answers} journaled answers")
        run.send_signal(signal.SIGKILL)
        run.wait(60)
    finally:
        run.kill()


def _sent_notes(fake) -> list[str]:
    from fakeapi import request_items
    return [note_of(request_items(body)) for body in fake.message_requests()]


@pytest.mark.slow
def test_sigterm_mid_batch_waits_for_the_calls_in_flight_and_the_resume_pays_for_nothing_twice(api, fake_anthropic,
                                                                                                agents, settings):
    notes(agents, 16)
    fake_anthropic.responder = lambda items, _earlier: (time.sleep(0.5), answer(items))[1]
    run = _start(api)
    try:
        wait_for(lambda: journal_lines(settings.state_dir) >= 4, "four journaled answers")
        run.send_signal(signal.SIGTERM)
        assert run.wait(60) == 128 + signal.SIGTERM
    finally:
        run.kill()
    (pending,) = batches.load_all(settings.state_dir)
    assert pending.status == batches.PENDING and len(pending.results) == len(fake_anthropic.message_requests())
    summary = run_json(api)
    assert summary["resumed_batches"] == 1 and summary["beliefs"] == {"inserted": 16}
    sent = _sent_notes(fake_anthropic)
    assert sorted(sent) == [f"I keep note {i:03d}" for i in range(16)]  # every request paid for exactly once


@pytest.mark.slow
def test_sigkill_mid_batch_never_sends_a_journaled_request_again(api, fake_anthropic, agents, settings):
    notes(agents, 16)
    fake_anthropic.responder = lambda items, _earlier: (time.sleep(0.5), answer(items))[1]
    _kill_after_journaled(api, settings, 5)
    (pending,) = batches.load_all(settings.state_dir)
    by_id = {r.request_id: r for r in pending.requests}
    saved = {note_of_request(by_id[x.request_id]) for x in pending.results}
    assert len(saved) >= 5
    before = len(fake_anthropic.message_requests())
    summary = run_json(api)
    assert summary["resumed_batches"] == 1 and summary["beliefs"] == {"inserted": 16}
    again = _sent_notes(fake_anthropic)[before:]
    assert not saved & set(again)  # what was saved is never paid for again
    assert len(again) == 16 - len(saved)  # only what was not: the calls in flight at the kill, and the rest
    assert len(_sent_notes(fake_anthropic)) - 16 <= 4  # at most the four in flight were sent twice


def note_of_request(request) -> str:
    (item,) = [i for i in request.items if i.evidence]
    return item.text[:len("I keep note 000")]


# The journal ----------------------------------------------------------------------------------------------------


def _pending_batch(tmp_path):
    from test_batch import build, screened
    batch = build([screened(f"I'm allergic to peanuts number {i}", message_id=f"u{i}") for i in range(3)], budget=5)
    assert len(batch.requests) == 3
    return batch


def _answer(request, n=1) -> Extraction:
    return Extraction(request.request_id, (), (Usage("claude-haiku-5-5", 100 * n, 10, 0, 0, 5, 0.001),))


def test_a_torn_last_journal_line_is_ignored_and_cut_before_the_next_append(tmp_path):
    batch = _pending_batch(tmp_path)
    path = batches.write(tmp_path, batch)
    with journal.Journal(path) as log:
        log.append(_answer(batch.requests[0]), ())
        log.append(_answer(batch.requests[1]), ((batch.requests[1], "refused"),))
    whole = journal.path_of(path).read_bytes()
    journal.path_of(path).write_bytes(whole + journal.encode("b1", _answer(batch.requests[2]), ())[:40])  # killed mid-write
    loaded = batches.load(path)
    assert [x.request_id for x in loaded.results] == [r.request_id for r in batch.requests[:2]]
    assert loaded.failed == ((batch.requests[1], "refused"),) and loaded.todo == (batch.requests[2],)
    with journal.Journal(path) as log:
        log.append(_answer(batch.requests[2], 2), ())
    loaded = batches.load(path)
    assert [x.usage[0].input_tokens for x in loaded.results] == [100, 100, 200] and loaded.todo == ()


def test_a_journal_line_that_does_not_parse_is_skipped_and_its_request_sent_again(tmp_path):
    batch = _pending_batch(tmp_path)
    path = batches.write(tmp_path, batch)
    lines = [journal.encode("b1", _answer(r), ()) for r in batch.requests]
    journal.path_of(path).write_bytes(lines[0] + b"\x00" * 30 + b"\n" + lines[2])
    loaded = batches.load(path)
    assert [x.request_id for x in loaded.results] == [batch.requests[0].request_id, batch.requests[2].request_id]
    assert loaded.todo == (batch.requests[1],)


def test_a_journal_goes_with_its_batch_file(tmp_path):
    batch = _pending_batch(tmp_path)
    path = batches.write(tmp_path, batch)
    with journal.Journal(path) as log:
        log.append(_answer(batch.requests[0]), ())
    batches.set_aside(tmp_path, batch.batch_id)
    assert not journal.path_of(path).exists() and path.with_name(path.name + ".unreadable").exists()
    assert journal.path_of(path).with_name("b1.journal.unreadable").exists()
    orphan = journal.path_of(batches.path_of(tmp_path, "b2"))
    orphan.write_bytes(b"")  # its batch committed and removed by a run killed before it removed the journal
    batches.tidy(tmp_path)
    assert not orphan.exists()


# The pace --------------------------------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_pace_halves_on_push_back_waits_out_retry_after_and_climbs_back_one_at_a_time():
    clock = Clock()
    pacer = pace.Pace(8, clock=clock)
    assert pacer.wait_seconds(0) == 0 and pacer.wait_seconds(7) == 0 and pacer.wait_seconds(8) is None
    pacer.overloaded(429, 2.0)
    assert pacer.limit == 4 and pacer.wait_seconds(0) == pytest.approx(2.0)
    pacer.overloaded(529, None)
    pacer.overloaded(529, None)
    pacer.overloaded(529, None)
    assert pacer.limit == 1 and pacer.lowest == 1 and pacer.overloads == 4
    clock.now += 2.0
    assert pacer.wait_seconds(0) == 0 and pacer.wait_seconds(1) is None
    climbed = []
    for _ in range(1 + 2 + 3 + 4 + 5 + 6 + 7 + 10):
        pacer.succeeded()
        climbed.append(pacer.limit)
    assert climbed[0] == 2 and climbed[2] == 3 and climbed[5] == 4 and max(climbed) == 8 == pacer.ceiling
    pacer.overloaded(429, 3600.0)  # a retry-after of an hour holds new requests for a minute at most
    assert pacer.wait_seconds(0) == pace.MAX_PAUSE_SECONDS


def test_a_journal_line_of_another_batch_or_request_is_skipped_and_never_charged(tmp_path, caplog):
    batch = _pending_batch(tmp_path)
    path = batches.write(tmp_path, batch)
    first, second, third = batch.requests
    own = journal.encode("b1", _answer(first), ())
    other_batch = journal.encode("b9", _answer(second, 1000), ())
    unknown_request = journal.encode("b1", Extraction("0123456789ab-0007-r1", (), _answer(first, 1000).usage), ())
    not_its_items = journal.encode("b1", _answer(third, 1000), ((replace(third, items=first.items), "refused"),))
    before_batch_ids = orjson.loads(journal.encode("b1", _answer(second), ()))
    del before_batch_ids["batch_id"]  # written by a version that did not record it: kept, it passes the request check
    journal.path_of(path).write_bytes(own + other_batch + unknown_request + not_its_items
                                      + orjson.dumps(before_batch_ids) + b"\n")
    loaded = batches.load(path)
    assert [x.request_id for x in loaded.results] == [first.request_id, second.request_id]
    assert [u.input_tokens for x in loaded.results for u in x.usage] == [100, 100]
    assert loaded.failed == () and loaded.todo == (third,)
    assert "skipped 3 journal line(s)" in caplog.text


SECRET = "sk-ant-api03-" + "Q7xK2mPz9LwR4tYv8NbC3dFh6JsG1aEe5UoI0pXrTqWnMkBjHgVfDcSzAyLuOiPw7e-QxZvY2bN4mK8sL1dF9gH3jQ-AA"


def _leaky_answer(request) -> Extraction:
    """A reply that repeats a secret in every text it writes."""
    cand = Candidate(f"The user's key is {SECRET}.", "fact", f"key {SECRET}", f"key-{SECRET}", 0.8, "explicit", 5,
                     "medium", f"since {SECRET}", (EvidenceRef(request.items[0].item_id, f"my key {SECRET}"),))
    return Extraction(request.request_id, (cand,), _answer(request).usage)


def test_the_journal_and_the_batch_file_hold_the_models_text_redacted(tmp_path):
    batch = _pending_batch(tmp_path)
    path = batches.write(tmp_path, batch)
    with journal.Journal(path) as log:
        log.append(_leaky_answer(batch.requests[0]), ((batch.requests[0], f"refused: {SECRET}"),))
    assert SECRET.encode() not in journal.path_of(path).read_bytes()
    replayed = batches.load(path)
    assert "[REDACTED:" in replayed.results[0].candidates[0].statement
    batches.write(tmp_path, replace(batch, results=(_leaky_answer(batch.requests[2]),),
                                    failed=((batch.requests[1], f"refused: {SECRET}"),)))
    assert SECRET.encode() not in path.read_bytes()


@pytest.mark.slow
def test_a_secret_in_the_models_reply_is_on_no_file_after_a_kill(api, fake_anthropic, agents, settings):
    notes(agents, 8)

    def leaky(items, _earlier):
        time.sleep(0.5)
        (item,) = [i for i in items if i.citable]
        quote = note_of(items) + " in my journal"
        return candidates_reply([candidate(item.item_id, f"{quote} {SECRET}", f"The user's key is {SECRET}.",
                                           subject=f"key {SECRET}", attribute=SECRET)])

    fake_anthropic.responder = leaky
    _kill_after_journaled(api, settings, 2)
    written = list(batches.batches_dir(settings.state_dir).iterdir())
    assert any(p.suffix == ".journal" for p in written)
    assert [p.name for p in written if SECRET.encode() in p.read_bytes()] == []


def test_a_batch_resumed_with_another_extractor_keeps_its_provenance_and_quarantines_the_rest(tmp_path, caplog):
    from distiller.pipeline import distill as extraction
    batch = replace(_pending_batch(tmp_path), batch_id="0123456789ab-0001", extractor="anthropic",
                    model="claude-haiku-5-5", prompt_version="p-old")
    path = batches.write(tmp_path, batch)
    with journal.Journal(path) as log:
        log.append(_answer(batch.requests[0]), ())
    done = extraction.extract(tmp_path, batches.load(path), RulesExtractor())
    assert (done.extractor, done.model, done.prompt_version) == ("anthropic", "claude-haiku-5-5", "p-old")
    assert [x.request_id for x in done.results] == [r.request_id for r in batch.requests]
    assert [x.candidates for x in done.results[1:]] == [(), ()]  # nothing drawn by the rules extractor
    assert [r for r, _ in done.failed] == list(batch.requests[1:])
    assert all("was started with anthropic model claude-haiku-5-5" in why for _, why in done.failed)
    assert "batches retry 0123456789ab-0001" in caplog.text
    assert batches.load(path) == done  # as it is on disk, for the commit


def test_a_model_batch_nothing_was_answered_for_is_quarantined_not_finished_by_the_rules(tmp_path, caplog):
    from distiller.pipeline import distill as extraction
    batch = replace(_pending_batch(tmp_path), extractor="anthropic", model="claude-haiku-5-5")
    batches.write(tmp_path, batch)
    done = extraction.extract(tmp_path, batch, RulesExtractor())
    assert (done.extractor, done.model) == ("anthropic", "claude-haiku-5-5")
    assert [r for r, _ in done.failed] == list(batch.requests)  # every request quarantined, none answered by rules
    assert all(x.candidates == () for x in done.results)
    assert "quarantined" in caplog.text and "batches retry" in caplog.text


@pytest.mark.slow
def test_resuming_offline_commits_what_the_model_answered_as_its_own_and_retry_sends_the_rest(api, fake_anthropic,
                                                                                                agents, settings):
    notes(agents, 16)
    fake_anthropic.responder = lambda items, _earlier: (time.sleep(0.5), answer(items))[1]
    _kill_after_journaled(api, settings, 3)
    (pending,) = batches.load_all(settings.state_dir)
    answered = len(pending.results)
    offline = {k: v for k, v in api.items() if k != "ANTHROPIC_API_KEY"}
    summary = run_json(offline)
    assert summary["quarantined_requests"] == 16 - answered
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        beliefs = con.execute("SELECT extractor, model FROM beliefs").fetchall()
        rows = con.execute("SELECT status, extractor, model FROM batches").fetchall()
    assert beliefs == [("anthropic", "claude-haiku-5-5")] * answered
    assert rows == [("quarantined", "anthropic", "claude-haiku-5-5")]
    before = len(fake_anthropic.message_requests())
    retried = distill("batches", "retry", pending.batch_id, env=api)
    assert retried.returncode == 0, retried.stderr
    assert len(fake_anthropic.message_requests()) - before == 16 - answered
    assert sorted(s for s, _ in stored(settings.db_path)) == [f"The user keeps note {i:03d} in a journal."
                                                               for i in range(16)]


@pytest.mark.parametrize("usage", [{"input_tokens": -50_000_000}, {"input_tokens": None}, {"output_tokens": "12"},
                                   {"input_tokens": 2**64 - 1}, {"cache_read_input_tokens": 3.5}], ids=repr)
def test_a_reply_with_hostile_usage_is_journaled_once_counted_at_its_estimate_and_never_a_credit(
        api, fake_anthropic, agents, settings, usage):
    notes(agents, 2)
    fake_anthropic.responder = lambda items, _e: answer(items, **usage)

    first = run_json(api, "--concurrency", "1", "--budget-tokens", "1000000")
    again = run_json(api)

    assert len(fake_anthropic.message_requests()) == 2  # each paid answer kept: nothing paid for twice
    assert first["estimated_calls"] == 2 and first["tokens"] > 0 and first["cost_usd"] > 0
    assert again["cost_usd"] == 0
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        assert con.execute("SELECT min(cost_usd) FROM batches").fetchone()[0] >= 0
    assert len(stored(settings.db_path)) == 2


@pytest.mark.slow  # real waits of the retry-after; CI runs it with the other slow tests
def test_a_retry_after_given_as_an_http_date_holds_every_new_request(api, fake_anthropic, agents, settings):
    from email.utils import formatdate

    notes(agents, 8)
    calls = []

    def responder(items, _earlier):
        calls.append(note_of(items))
        if len(calls) == 1:  # a whole second more than asked, since the date drops the fraction
            return Reply(429, body=error_body("rate_limit_error", "slow down"),
                         headers={"retry-after": formatdate(time.time() + 3, usegmt=True)})
        time.sleep(0.3)
        return answer(items)

    fake_anthropic.responder = responder
    summary = run_json(api, "--concurrency", "4")
    assert summary["beliefs"] == {"inserted": 8} and summary["overloaded"] == 1
    posts = [r for r in fake_anthropic.requests if r.path == "/v1/messages"]
    refused_at = posts[0].at
    later = posts[4:]
    assert later and min(r.at for r in later) >= refused_at + 1.5, [r.at - refused_at for r in later]


def test_a_resumed_batchs_journaled_answers_count_toward_the_daily_budget(fake_anthropic, tmp_path):
    """A killed run paid for them; the store records those calls only with the commit, so the day's spend
    read from it misses them: the resume must not spend that money a second time."""
    from distiller.extract.anthropic import AnthropicExtractor
    from distiller.extract.prompt import PROMPT_VERSION
    from distiller.pipeline import run_once
    settings = Settings(state_dir=tmp_path / "state", budget_usd_per_day=1.0)
    batch = replace(_pending_batch(tmp_path), batch_id="0123456789ab-0001", extractor="anthropic",
                    model="claude-haiku-5-5", prompt_version=PROMPT_VERSION)
    batch = replace(batch, cursors=tuple((cursor, None) for cursor, _ in batch.cursors))  # files new to the store
    path = batches.write(settings.state_dir, batch)
    with journal.Journal(path) as log:
        log.append(Extraction(batch.requests[0].request_id, (),
                              (Usage("claude-haiku-5-5", 100, 10, 0, 0, 5, 0.999),)), ())
    extractor = AnthropicExtractor("claude-haiku-5-5", api_key="test-key", base_url=fake_anthropic.base_url)
    summary = run_once(settings, [tmp_path / "none"], extractor=extractor)
    assert fake_anthropic.message_requests() == []  # $0.001 left of the day: no request's worst case fits
    assert summary.tally.quarantined_requests == 2 and summary.tally.cost_usd == pytest.approx(0.999)
