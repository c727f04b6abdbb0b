"""Batch packing and the batch file: what is sent, with what context, and that a file round-trips exactly."""

from __future__ import annotations

import os
from dataclasses import replace

from distiller import batch as batches
from distiller.extract.base import Candidate, EvidenceRef, Extraction, ExtractRequest, Item, Usage
from distiller.extract.rules import RulesExtractor
from distiller.records import Message
from distiller.screen import screen
from distiller.store.cursors import Cursor


def screened(text: str, role: str = "user", agent: str = "main", session: str = "s1", message_id: str = "id"):
    message = Message("openclaw", agent, session, message_id, None, "2026-03-01T10:00:00Z", role, text, "/f", 0, 10)
    return screen(message), "file-1"


def build(entries, budget=6000):
    cursor = Cursor("file-1", "/f", "main", "s1", 1, 2, 100, 5, 100, "d")
    return batches.build("b1", "run1", RulesExtractor(), entries, [(cursor, 0)], request_budget_tokens=budget,
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
        plan = batches.plan(entries, request_budget_tokens=budget, prompt_tokens=100)
        assert (plan.requests, plan.estimated_tokens) == (len(batch.requests), batch.estimated_tokens)


def test_nothing_kept_means_no_request():
    batch = build([screened("thanks!"), screened("HEARTBEAT_OK", role="assistant")])
    assert batch.requests == () and len(batch.ledger) == 2


def test_split_halves_keep_context_with_its_evidence():
    items = (Item("m1", "assistant", None, "q", False), Item("m2", "user", None, "a", True),
             Item("m3", "assistant", None, "q2", False), Item("m4", "user", None, "b", True))
    first, second = batches.split(ExtractRequest("b1-r1", "main", items))
    assert [i.item_id for i in first.items] == ["m1", "m2"] and first.request_id == "b1-r1a"
    assert [i.item_id for i in second.items] == ["m3", "m4"]
    assert batches.split(ExtractRequest("x", "main", items[:1])) == ()


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


def test_token_estimate_counts_cjk_characters_fully():
    assert batches.estimate_tokens("a" * 400) == 101
    assert batches.estimate_tokens("我不吃生鱼片") == 7
