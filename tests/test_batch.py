"""Batch packing and the batch file: what is sent, with what context, and that a file round-trips exactly."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace

import orjson
import pytest

from distiller.batches import files as batches
from distiller.batches import model as batch_model
from distiller.extract.base import Candidate, EvidenceRef, Extraction, ExtractRequest, Item, Usage
from distiller.extract.rules import RulesExtractor
from distiller.records import Cursor, Message
from distiller.screen import screen


def screened(text: str, role: str = "user", agent: str = "main", session: str = "s1", message_id: str = "id"):
    message = Message("openclaw", agent, session, message_id, None, "2026-03-01T10:00:00Z", role, text, "/f", 0, 10)
    return screen(message), "file-1"


def build(entries, budget=6000):
    cursor = Cursor("file-1", "/f", "main", "s1", 1, 2, 100, 5, 100, "d")
    return batch_model.build("b1", "run1", RulesExtractor(), entries, [(cursor, 0)], request_budget_tokens=budget,
                         prompt_tokens=100)


def test_kept_messages_are_citable_and_carry_their_preceding_turn_as_context():
    batch = build([
        screened("What should we use for the ledger service?", role="assistant", message_id="a1"),
        screened("ok", message_id="u0"),
        screened("We decided to use Postgres instead of Kafka for the ledger", message_id="u1"),
        screened("I'm allergic to peanuts", message_id="u2"),
    ])
    (request,) = batch.requests
    assert [(i.item_id, i.role, i.evidence) for i in request.items] == [
        ("m1", "assistant", False), ("m2", "user", True), ("m3", "user", True)]
    assert [b.provenance.message_id for b in batch.items] == ["a1", "u1", "u2"]
    assert len(batch.ledger) == 4 and batch.estimated_tokens > 100


def test_agents_get_their_own_requests_and_budgets_split_them():
    entries = [screened(f"I like hiking trail number {i} a lot", agent=agent, message_id=f"{agent}{i}")
               for agent in ("main", "work") for i in range(6)]
    batch = build(entries, budget=30)
    assert {r.agent for r in batch.requests} == {"main", "work"}
    assert len(batch.requests) > 2
    agent_of_request = {r.request_id: r.agent for r in batch.requests}
    assert all(b.provenance.agent == agent_of_request[b.request_id] for b in batch.items)
    assert sum(len(r.items) for r in batch.requests) == 12


def test_a_plan_counts_the_requests_and_tokens_build_packs():
    entries = [screened("What did you decide?", role="assistant", message_id="a0")] + [
        screened(f"I like hiking trail number {i} a lot", agent=agent, message_id=f"{agent}{i}")
        for agent in ("main", "work") for i in range(6)]
    for budget in (30, 6000):
        batch = build(entries, budget=budget)
        plan = batch_model.plan(entries, request_budget_tokens=budget, prompt_tokens=100)
        assert (plan.requests, plan.estimated_tokens) == (len(batch.requests), batch.estimated_tokens)


def test_nothing_kept_means_no_request():
    batch = build([screened("thanks!"), screened("HEARTBEAT_OK", role="assistant")])
    assert batch.requests == () and len(batch.ledger) == 2


def test_split_halves_keep_context_with_its_evidence():
    items = (Item("m1", "assistant", None, "q", False), Item("m2", "user", None, "a", True),
             Item("m3", "assistant", None, "q2", False), Item("m4", "user", None, "b", True))
    first, second = batch_model.split(ExtractRequest("b1-r1", "main", items))
    assert [i.item_id for i in first.items] == ["m1", "m2"] and first.request_id == "b1-r1a"
    assert [i.item_id for i in second.items] == ["m3", "m4"]
    assert batch_model.split(ExtractRequest("x", "main", items[:1])) == ()


def test_batch_file_round_trips_and_is_private(tmp_path):
    batch = build([screened("I live in Lisbon", message_id="u1"), screened("ok", message_id="u2")])
    candidate = Candidate("The user lives in Lisbon.", "identity", "user", "home", 0.7, "explicit", 8, "low", None,
                          (EvidenceRef("m1", "I live in Lisbon"),))
    usage = Usage("claude-haiku-5-5", 10, 5, 0, 0, 12, 0.0001)
    batch = replace(batch, results=(Extraction("b1-r1", (candidate,), (usage,)),),
                    failed=((batch.requests[0], "refused"),), attempts=2)
    path = batches.write(tmp_path, batch)
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert b"I live in Lisbon" in path.read_bytes() and b'"ok"' not in path.read_bytes()
    without_ledger_text = replace(batch, ledger=tuple(
        replace(row, verdict=replace(row.verdict, text="", message=replace(row.verdict.message, text="")))
        for row in batch.ledger))
    assert batches.load(path) == without_ledger_text
    assert batches.load_all(tmp_path) == [without_ledger_text]
    batches.remove(tmp_path, "b1")
    assert batches.load_all(tmp_path) == []



@pytest.mark.parametrize("version", [2, 0, "1", None])
def test_a_batch_file_of_another_format_is_unreadable_with_its_format_named_and_is_set_aside(tmp_path, version):
    """Its fields may not mean what ours do: never trusted, never a traceback; its messages are read again."""
    batch = replace(build([screened("I live in Lisbon")]), batch_id="0123456789ab-0001")
    path = batches.write(tmp_path, batch)
    data = orjson.loads(path.read_bytes())
    if version is None:
        del data["format"]
    else:
        data["format"] = version
    path.write_bytes(orjson.dumps(data))
    with pytest.raises(batches.BatchUnreadable) as caught:
        batches.load(path)
    assert f"batch file format {version!r}, this version reads format 1" in str(caught.value)
    assert str(path) in str(caught.value) and "reads its messages again" in str(caught.value)
    assert batches.scan(tmp_path).unreadable == [path]
    assert batches.tidy(tmp_path) == ["0123456789ab-0001.json"]


@pytest.mark.parametrize("content", [b"[]", b'"batch"', b"null", b"17"])
def test_a_batch_file_that_is_json_but_no_object_is_unreadable(tmp_path, content):
    path = batches.path_of(tmp_path, "0123456789ab-0001")
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    with pytest.raises(batches.BatchUnreadable, match="this version reads format 1"):
        batches.load(path)

def test_token_estimate_counts_cjk_characters_fully():
    assert batch_model.estimate_tokens("a" * 400) == 101
    assert batch_model.estimate_tokens("我不吃生鱼片") == 7


def test_a_short_write_fails_whole_and_leaves_no_file(tmp_path):
    """A file size limit makes os.write write only part (as a full disk does): the write must fail, not fsync and
    rename a truncated file."""
    script = f"""
import resource, signal, sys
sys.path.insert(0, {os.path.dirname(__file__)!r})
from test_batch import build, screened
from distiller.batches import files as batches
from distiller.errors import DistillError
from pathlib import Path
batch = build([screened("I live in Lisbon and " + "words " * 2000, message_id="u" + str(i)) for i in range(20)])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
try:
    batches.write(Path({str(tmp_path)!r}), batch)
except DistillError as exc:
    print("refused:", exc)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "refused: cannot write batch file" in result.stdout, result.stdout
    assert list(batches.batches_dir(tmp_path).iterdir()) == []


def test_a_batch_file_that_does_not_parse_is_listed_then_set_aside_with_the_later_ones_of_its_run(tmp_path):
    first = replace(build([screened("I live in Lisbon")]), batch_id="0123456789ab-0001")
    later = replace(first, batch_id="0123456789ab-0002")
    other_run = replace(first, batch_id="ba9876543210-0001")
    for batch in (first, later, other_run):
        batches.write(tmp_path, batch)
    path = batches.path_of(tmp_path, first.batch_id)
    path.write_bytes(path.read_bytes()[:100])  # what a full disk left before writes were checked
    (batches.batches_dir(tmp_path) / "ba9876543210-0002.json.tmp").write_bytes(b"{redacted text")
    waiting = batches.scan(tmp_path)
    assert [b.batch_id for b in waiting.batches] == [later.batch_id, other_run.batch_id]
    assert waiting.unreadable == [path]
    assert batches.tidy(tmp_path) == ["0123456789ab-0001.json", "0123456789ab-0002.json"]
    assert sorted(p.name for p in batches.batches_dir(tmp_path).iterdir()) == [
        "0123456789ab-0001.json.unreadable", "0123456789ab-0002.json.unreadable", "ba9876543210-0001.json"]
    assert batches.load_all(tmp_path) == [batches.load(batches.path_of(tmp_path, other_run.batch_id))]


def test_batch_ids_from_outside_must_have_the_shape_of_one():
    for good in ("0123456789ab-0001", "0123456789ab-0012-r1", "0123456789ab-0012-r1-r2"):
        assert batches.checked_id(good) == good
    for bad in ("../../x", "0123456789ab-0001/../../y", "", "0123456789ab-0001.json", "*", "0123456789AB-0001"):
        with pytest.raises(batches.BadBatchId):
            batches.checked_id(bad)
