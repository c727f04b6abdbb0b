"""External-agent batches: nothing new stages nothing; a commit that would store nothing keeps the batch staged."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import append, ingested, invoke, message_line, new_session

from distiller.batches import files as batches
from distiller.batches import model as batch_model

FACT = "I live in Lisbon and I work as a nurse."


def staged_batch(agents: Path) -> batch_model.Batch:
    path = new_session(agents)
    append(path, message_line(FACT, message_id="u0000001"))
    result = invoke("--json", "run", "--no-llm", "--source", str(agents))
    assert result.exit_code == 0, result.stderr
    (staged,) = orjson.loads(result.stdout)["staged"]
    return batches.load(Path(staged))


def cited(batch: batch_model.Batch) -> str:
    return next(b.item.item_id for b in batch.items if b.item.evidence)


def candidate(item_id: str, quote: str) -> bytes:
    return orjson.dumps({"statement": "The user lives in Lisbon.", "category": "fact", "subject": "user",
                         "attribute": "home city", "confidence": 0.9, "evidence_type": "explicit", "importance": 5,
                         "decay_sensitivity": "low", "valid_from": None,
                         "evidence": [{"item_id": item_id, "quote": quote}]}) + b"\n"


def test_no_llm_with_nothing_new_stages_nothing(agents, settings):
    batch = staged_batch(agents)
    answer = agents.parent / "answer.jsonl"
    answer.write_bytes(candidate(cited(batch), "live in Lisbon"))
    assert invoke("commit", batch.batch_id, "--beliefs", str(answer)).exit_code == 0
    again = invoke("--json", "run", "--no-llm", "--source", str(agents))
    assert again.exit_code == 0, again.stderr
    assert orjson.loads(again.stdout)["staged"] == [] and batches.load_all(settings.state_dir) == []
    third = invoke("--json", "run", "--no-llm", "--source", str(agents))
    assert third.exit_code == 0, third.stderr  # not 75: no empty batch holds up the next run


def test_all_rejected_commit_keeps_the_batch_staged_and_names_each_line(agents, settings):
    batch = staged_batch(agents)
    answer = agents.parent / "answer.jsonl"
    answer.write_bytes(candidate(cited(batch), "lives on Mars") + b"\n" + candidate("nope", "live in Lisbon"))
    result = invoke("commit", batch.batch_id, "--beliefs", str(answer))
    assert result.exit_code == 1
    assert f"{answer}:1: rejected: quote-not-found" in result.stderr
    assert f"{answer}:3: rejected: unknown-item" in result.stderr
    assert "stays staged" in result.stderr and "--accept-empty" in result.stderr
    assert [b.batch_id for b in batches.load_all(settings.state_dir)] == [batch.batch_id]
    assert ingested(settings) == []
    accepted = invoke("--json", "commit", batch.batch_id, "--beliefs", str(answer), "--accept-empty")
    assert accepted.exit_code == 0, accepted.stderr
    assert orjson.loads(accepted.stdout)["committed"] is True
    assert batches.load_all(settings.state_dir) == [] and len(ingested(settings)) == 1


def test_commit_dry_run_reports_and_changes_nothing(agents, settings):
    batch = staged_batch(agents)
    answer = agents.parent / "answer.jsonl"
    answer.write_bytes(candidate(cited(batch), "live in Lisbon") + candidate(cited(batch), "on Mars"))
    result = invoke("--json", "commit", batch.batch_id, "--beliefs", str(answer), "--dry-run")
    assert result.exit_code == 0, result.stderr
    report = orjson.loads(result.stdout)
    assert report["committed"] is False and report["accepted"] == 1
    assert [v["reason"] for v in report["lines"]] == [None, "quote-not-found"]
    assert [b.batch_id for b in batches.load_all(settings.state_dir)] == [batch.batch_id]
    assert ingested(settings) == []


def test_a_commit_the_store_refuses_whole_keeps_the_batch_staged(agents, settings):
    batch = staged_batch(agents)
    answer = agents.parent / "answer.jsonl"
    answer.write_bytes(candidate(cited(batch), "live in Lisbon"))
    assert invoke("commit", batch.batch_id, "--beliefs", str(answer)).exit_code == 0
    (stored,) = orjson.loads(invoke("--json", "beliefs", "list").stdout)["beliefs"]
    assert invoke("beliefs", "forget", stored["id"]).exit_code == 0
    path = new_session(agents)  # a later session of the same agent says it again
    append(path, message_line(FACT, message_id="u0000002"))
    staged = invoke("--json", "run", "--no-llm", "--source", str(agents))
    (again,) = [batches.load(Path(p)) for p in orjson.loads(staged.stdout)["staged"]]
    answer.write_bytes(candidate(cited(again), "live in Lisbon"))
    refused = invoke("commit", again.batch_id, "--beliefs", str(answer))
    assert refused.exit_code == 1, refused.stderr
    assert "the store refused every belief (refused_tombstoned 1)" in refused.stderr
    assert [b.batch_id for b in batches.load_all(settings.state_dir)] == [again.batch_id]
    assert len(ingested(settings)) == 1  # the second batch's message is not marked read
    assert invoke("commit", again.batch_id, "--beliefs", str(answer), "--accept-empty").exit_code == 0
    assert batches.load_all(settings.state_dir) == [] and len(ingested(settings)) == 2


def test_an_external_beliefs_line_is_parsed_exactly_as_a_model_reply_is(tmp_path):
    """One parser of the candidate contract: a beliefs file line and a model reply's candidate read the same."""
    from distiller.extract.candidates import parse_candidates
    from distiller.pipeline.batches_admin import _parse_candidates

    entries = [
        {"statement": "Dana drinks oat milk.", "category": "preference", "subject": "user", "attribute": "milk",
         "confidence": "0.7", "evidence_type": "explicit", "importance": 6.0, "decay_sensitivity": "low",
         "valid_from": "", "evidence": [{"item_id": "m1", "quote": "I'm Dana"}]},
        {"statement": 42, "confidence": "high", "importance": 7.5, "evidence": ["m1", {"item_id": 3}]},
    ]
    beliefs = tmp_path / "beliefs.jsonl"
    beliefs.write_bytes(b"\n".join(orjson.dumps(entry) for entry in entries) + b"\n\n")
    numbered = _parse_candidates(beliefs)
    assert [number for number, _ in numbered] == [1, 2]
    replied = parse_candidates(orjson.dumps({"candidates": entries}).decode())
    assert repr(tuple(c for _, c in numbered)) == repr(replied)  # repr: a NaN confidence is not equal to itself
    first = numbered[0][1]
    assert (first.confidence, first.importance, first.valid_from) == (0.7, 6, None)
