"""The extractor seam: a backend is a class with base.Extractor's members and one registration, nothing else.

A toy extractor, defined here and nowhere in distiller, is registered and run through the real pipeline (the
registry, config validation, budgets, the journal, verification, the commit), which know it only through the
contract and the registry."""

from __future__ import annotations

import re
from dataclasses import replace

import duckdb
import pytest
from conftest import append, message_line, new_session

from distiller import extract, prices
from distiller.batches import files as batches
from distiller.batches import journal
from distiller.config import Settings, override
from distiller.errors import DistillError, UsageError
from distiller.extract.base import (
    CachesPrefix,
    Candidate,
    EvidenceRef,
    Extraction,
    ExtractionUnavailable,
    Extractor,
    ExtractRequest,
    OverloadListener,
    RetriesTruncated,
    SubmitsBatches,
    Usage,
)
from distiller.extract.select import estimator, make_extractor
from distiller.pipeline import run as pipeline

TOY = "toy"
TOY_RATES = prices.Rates(input=1.0, output=2.0, cache_write=1.0, cache_read=1.0)
_I_SENTENCE = re.compile(r"\bI(?: [A-Za-z]+){2,5}")


class ToyExtractor:
    """A billed, online extractor: one candidate per citable item saying "I …", quoting it; one more that cites an
    item it was never sent (verification must refuse it); each call 100 tokens in, 10 out. `fail_after` calls, it
    is unavailable, as a rate-limited API is."""

    name = TOY
    model: str | None = "toy-1"
    prompt_version = "toy-prompt-1"
    offline = False
    billed = True
    rates = TOY_RATES

    def __init__(self, fail_after: int | None = None) -> None:
        self.calls: list[ExtractRequest] = []
        self.fail_after = fail_after

    def extract(self, request: ExtractRequest, *, max_tokens: int | None = None,
                on_overload: OverloadListener | None = None) -> Extraction:
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise ExtractionUnavailable("the toy is out of breath")
        self.calls.append(request)
        found = []
        for item in request.items:
            said = _I_SENTENCE.search(item.text) if item.evidence else None
            if said:
                found.append(Candidate(f"The user said: {said.group(0)}.", "fact", "user", f"toy-{item.item_id}",
                                       0.8, "explicit", 5, "medium", None, (EvidenceRef(item.item_id, said.group(0)),)))
        found.append(Candidate("The user owns a yacht.", "fact", "user", "yacht", 0.9, "explicit", 5, "medium", None,
                               (EvidenceRef("m999", "I own a yacht"),)))
        usage = Usage(self.model or TOY, 100, 10, 0, 0, 1, prices.cost(TOY_RATES, 100, 10, 0, 0))
        return Extraction(request.request_id, tuple(found), (usage,))


made: list[ToyExtractor] = []


def _make(settings: Settings, fail_after: int | None = None) -> Extractor:
    toy = ToyExtractor(fail_after)
    made.append(toy)
    return toy


@pytest.fixture
def toy_registered():
    made.clear()
    backend = extract.Backend(TOY, "a toy for the contract test", _make, offline=False, billed=True,
                              default_model="toy-1", rates=lambda settings: TOY_RATES)
    extract.register(backend)
    yield backend
    extract.unregister(TOY)


def _sessions(agents, *texts: str) -> None:
    path = new_session(agents)
    for text in texts:
        append(path, message_line(text))


def _stored(settings: Settings) -> tuple[list[str], int, list[tuple[str, int]]]:
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        statements = [s for (s,) in con.execute("SELECT statement FROM beliefs ORDER BY 1").fetchall()]
        ingested = con.execute("SELECT count(*) FROM ingested").fetchone()[0]
        calls = con.execute("SELECT extractor, count(*) FROM batches GROUP BY 1").fetchall()
    return statements, ingested, calls


def test_the_toy_satisfies_the_contract_and_none_of_the_capabilities_it_lacks():
    toy = ToyExtractor()
    assert isinstance(toy, Extractor)
    assert not isinstance(toy, RetriesTruncated | CachesPrefix | SubmitsBatches)


def test_a_registered_toy_extractor_is_a_setting_and_runs_through_the_real_pipeline(settings, agents,
                                                                                   toy_registered):
    _sessions(agents, "I play the cello on Sundays", "what a lovely day", "I brew my own coffee")
    chosen = override(settings, extractor=TOY)  # the setting's validation reads the registry
    extractor = make_extractor(chosen)
    assert isinstance(extractor, ToyExtractor)

    tally = pipeline.run_once(chosen, [agents], extractor=extractor).tally

    assert (tally.extractor, tally.model) == (TOY, "toy-1")
    assert tally.model_calls == len(extractor.calls) == 1
    assert tally.tokens == 110 and tally.cost_usd == pytest.approx(prices.cost(TOY_RATES, 100, 10, 0, 0))
    assert sum(tally.rejected.values()) == 1  # the yacht cites an item it was never sent
    statements, ingested, _ = _stored(chosen)
    assert statements == ["The user said: I brew my own coffee.", "The user said: I play the cello on Sundays."]
    assert ingested == 3
    assert pipeline.run_once(chosen, [agents], extractor=make_extractor(chosen)).tally.messages == 0


def test_an_unknown_extractor_is_refused_by_the_setting_once_unregistered(settings, toy_registered):
    extract.unregister(TOY)
    with pytest.raises(UsageError, match="toy"):
        override(settings, extractor=TOY)
    extract.register(toy_registered)


def test_the_toy_answers_are_journaled_so_a_run_that_stops_resumes_without_asking_twice(settings, agents,
                                                                                      toy_registered):
    chosen = override(settings, extractor=TOY, request_budget_tokens=100)
    padding = " and so on" * 40  # about 100 tokens: one message a request
    _sessions(agents, "I play the cello on Sundays" + padding, "I brew my own coffee" + padding,
              "I live on a houseboat" + padding)
    first = ToyExtractor(fail_after=1)
    with pytest.raises(ExtractionUnavailable):
        pipeline.run_once(chosen, [agents], extractor=first)
    (pending,) = batches.load_all(chosen.state_dir)  # the batch file, with its journal's answers
    assert len(first.calls) == 1 and len(pending.results) == 1 and len(pending.requests) == 3
    assert journal.path_of(batches.path_of(chosen.state_dir, pending.batch_id)).exists()

    second = ToyExtractor()
    tally = pipeline.run_once(chosen, [agents], extractor=second).tally

    assert tally.resumed == 1
    asked_first = {i.text for r in first.calls for i in r.items if i.evidence}
    asked_again = {i.text for r in second.calls for i in r.items if i.evidence}
    assert asked_first and not asked_first & asked_again  # the journaled answer was not paid for twice
    statements, ingested, _ = _stored(chosen)
    assert len(statements) == 3 and ingested == 3


def test_the_budgets_hold_the_toy_calls_at_its_own_rates(settings, agents, toy_registered):
    _sessions(agents, "I play the cello on Sundays", "I brew my own coffee")
    chosen = override(settings, extractor=TOY, budget_usd=0.000001)
    toy = ToyExtractor()
    summary = pipeline.run_once(chosen, [agents], extractor=toy)
    assert summary.tally.budget_stop and toy.calls == []


def test_a_dry_run_prices_the_chosen_backend_from_the_registry(settings, agents, toy_registered):
    _sessions(agents, "I play the cello on Sundays")
    chosen = override(settings, extractor=TOY)
    assert estimator(chosen).rates == TOY_RATES
    tally = pipeline.run_once(chosen, [agents], dry_run=True).tally
    assert tally.estimated_tokens > 0 and tally.estimated_cost_usd > 0


def test_a_model_name_is_checked_by_the_backend_that_would_run_it(settings):
    with pytest.raises(UsageError, match="no price known"):
        override(settings, model="llama3.1:8b")  # auto: the Anthropic price table decides
    assert override(settings, extractor="openai-compatible", model="Qwen/Qwen2.5-7B-Instruct").model == \
        "Qwen/Qwen2.5-7B-Instruct"


def test_a_name_is_registered_once(toy_registered):
    with pytest.raises(ValueError):
        extract.register(replace(toy_registered))
    with pytest.raises(ValueError):
        extract.register(replace(toy_registered, name=extract.AUTO))
    with pytest.raises(DistillError, match="no extractor named"):
        extract.named("nonesuch")
