"""Prompt caching that happens: the static prefix clears every priced model's minimum cacheable length, its worked
examples pass our own verification, the fake API caches only what the real one would, and runs record, estimate
and show what the cache saved. The real SDK against the fake Messages API throughout."""

from __future__ import annotations

import html
import re
import time

import anthropic
import duckdb
import orjson
import pytest
from click.testing import CliRunner
from conftest import append, message_line, new_session
from fakeapi import FakeAnthropic

from distiller import prices
from distiller.cli import cli
from distiller.extract.anthropic import AnthropicExtractor, system_blocks
from distiller.extract.base import Extraction, ExtractRequest, Item
from distiller.extract.prompt import OUTPUT_SCHEMA, STATIC_PREFIX_TOKENS, SYSTEM_PROMPT, WORKED_EXAMPLES
from distiller.extract.rules import RulesExtractor
from distiller.extract.select import CACHE_WRITES_PER_RUN, Estimator, estimate
from distiller.records import EvidenceItem
from distiller.verify import Source, verify

MODEL = "claude-haiku-5-5"


def priced(model: str = MODEL) -> Estimator:
    """The dry run's stand-in for an Anthropic model, priced from the table."""
    return Estimator(model, prices.rates(model), prices.caches(model, STATIC_PREFIX_TOKENS))
_EXAMPLE = re.compile(r'(<transcript agent="([^"]*)">\n.*?</transcript>)\n\nA good answer:\n'
                      r'(\{"candidates": \[\]\}|\{"candidates": \[\n.*?\n\]\})\n', re.DOTALL)
_ITEM = re.compile(r'<item id="([^"]*)" role="([^"]*)" ts="([^"]*)" cite="(yes|no)">\n(.*?)\n</item>', re.DOTALL)


# --- the prompt and the price table


def test_every_priced_model_has_a_minimum_cacheable_length():
    assert set(prices.MIN_CACHEABLE_TOKENS) == set(prices.PRICES)
    assert all(n >= 512 for n in prices.MIN_CACHEABLE_TOKENS.values())
    with pytest.raises(prices.DistillError, match="no price known"):
        prices.min_cacheable_tokens("claude-unknown-1")


def test_the_static_prefix_clears_every_priced_models_minimum_with_a_margin():
    """The estimate is four characters a token, an undercount for this text; 10% more on top of that."""
    assert STATIC_PREFIX_TOKENS == (len(SYSTEM_PROMPT) + len(orjson.dumps(OUTPUT_SCHEMA))) // 4
    for model in prices.PRICES:
        assert STATIC_PREFIX_TOKENS >= 1.1 * prices.min_cacheable_tokens(model), model


def test_the_marker_is_sent_only_where_the_model_caches_the_prefix():
    minimum = prices.min_cacheable_tokens(MODEL)
    (marked,) = system_blocks(MODEL)
    assert marked == {"type": "text", "text": SYSTEM_PROMPT, "cache_control": {"type": "ephemeral"}}
    assert "cache_control" in system_blocks(MODEL, minimum)[0]
    assert system_blocks(MODEL, minimum - 1) == [{"type": "text", "text": SYSTEM_PROMPT}]
    assert "cache_control" not in system_blocks("claude-opus-5", 511)[0]
    assert "cache_control" in system_blocks("claude-opus-5", 512)[0]


def _examples() -> list[tuple[ExtractRequest, dict[str, Source], Extraction]]:
    from distiller.extract.anthropic import parse_candidates

    found = []
    for number, (transcript, agent, answer) in enumerate(_EXAMPLE.findall(SYSTEM_PROMPT)):
        items, sources = [], {}
        for item_id, role, ts, cite, text in _ITEM.findall(transcript):
            text = html.unescape(text)
            items.append(Item(item_id, role, ts, text, cite == "yes"))
            sources[item_id] = Source(text, cite == "yes", EvidenceItem(f"x{number}-{item_id}", f"s{number}", agent,
                                                                        "/example", 0, 1, ts, ""))
        request = ExtractRequest(f"example{number}", agent, tuple(items))
        found.append((request, sources, Extraction(request.request_id, parse_candidates(answer), ())))
    return found


def test_every_worked_example_answer_passes_our_own_verification():
    """An example our verifier would reject would teach the model to be rejected: each good answer must come
    through verify() whole, its quotes verbatim, its statements supported, its fields in range."""
    examples = _examples()
    assert len(examples) == 1 + WORKED_EXAMPLES.count("A good answer:")  # the first example, and the hard cases
    stored = 0
    for request, sources, extraction in examples:
        checked = verify(extraction, sources, extractor="anthropic", model=MODEL, prompt_version="t")
        assert checked.rejected == () and checked.sanitized == (), request.request_id
        assert len(checked.beliefs) == len(extraction.candidates)
        stored += len(checked.beliefs)
    assert stored >= 10 and any(not e.candidates for _, _, e in examples)  # an empty answer is shown too


def test_worked_examples_hold_no_fact_from_a_recalled_memory_block_or_about_someone_else():
    statements = " ".join(c.statement for _, _, e in _examples() for c in e.candidates)
    for word in ("vegetarian", "Sam", "Spotify", "Stockholm", "Jira", "pirate", "Canada", "swordfish77",
                 "administrator", "migraine"):
        assert word not in statements, word


# --- the fake API caches as the real one does


def _call(fake: FakeAnthropic, system, model: str = MODEL):
    client = anthropic.Anthropic(api_key="test-key", base_url=fake.base_url, max_retries=0)
    return client.messages.create(model=model, max_tokens=64, system=system,
                                  messages=[{"role": "user", "content": "hello there"}]).usage


def test_the_fake_caches_only_a_marked_prefix_that_reaches_the_models_minimum():
    long_text = "x" * (4 * prices.min_cacheable_tokens(MODEL))
    marked = [{"type": "text", "text": long_text, "cache_control": {"type": "ephemeral"}}]
    with FakeAnthropic() as fake:
        short = _call(fake, [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}])
        unmarked = _call(fake, [{"type": "text", "text": long_text}])
        first, second = _call(fake, marked), _call(fake, marked)
        opus_short = _call(fake, [{"type": "text", "text": "y" * 4 * 600, "cache_control": {"type": "ephemeral"}}],
                           model="claude-opus-5")
    for usage in (short, unmarked):
        assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (0, 0)
    assert unmarked.input_tokens > prices.min_cacheable_tokens(MODEL)  # billed in full, silently
    assert first.cache_creation_input_tokens >= prices.min_cacheable_tokens(MODEL) and not first.cache_read_input_tokens
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens and not second.cache_creation_input_tokens
    assert opus_short.cache_creation_input_tokens > 0  # Opus 5 caches from 512 tokens


def test_in_the_fake_requests_sent_together_all_write_the_cache_as_no_entry_exists_yet():
    """The API makes a cache entry once the first reply begins: requests sent alongside it cannot read it."""
    from concurrent.futures import ThreadPoolExecutor

    marked = [{"type": "text", "text": "z" * (4 * prices.min_cacheable_tokens(MODEL)),
               "cache_control": {"type": "ephemeral"}}]
    with FakeAnthropic() as fake:
        fake.delay_seconds = 0.3
        with ThreadPoolExecutor(3) as pool:
            together = list(pool.map(lambda _: _call(fake, marked), range(3)))
        after = _call(fake, marked)
    assert all(u.cache_creation_input_tokens > 0 and not u.cache_read_input_tokens for u in together)
    assert after.cache_read_input_tokens > 0 and not after.cache_creation_input_tokens


def test_the_extractor_writes_the_prefix_once_then_reads_it():
    request = ExtractRequest("r1", "main", (Item("m1", "user", None, "I'm Dana and I live in Lisbon.", True),))
    with FakeAnthropic() as fake:
        ex = AnthropicExtractor(MODEL, api_key="test-key", base_url=fake.base_url, max_retries=0)
        first, second = ex.extract(request).usage[0], ex.extract(request).usage[0]
    assert first.cache_write_tokens >= STATIC_PREFIX_TOKENS and first.cache_read_tokens == 0
    assert second.cache_read_tokens == first.cache_write_tokens and second.cache_write_tokens == 0
    assert second.cost_usd < first.cost_usd and second.tokens == first.tokens


# --- the estimate


def test_the_estimate_prices_the_prefix_as_the_cache_will():
    transcript = 6000
    requests = 10
    total = requests * (STATIC_PREFIX_TOKENS + transcript)
    output = int(transcript * 0.25)
    write = prices.cost_usd(MODEL, transcript, output, 0, STATIC_PREFIX_TOKENS)
    read = prices.cost_usd(MODEL, transcript, output, STATIC_PREFIX_TOKENS, 0)
    full = prices.cost_usd(MODEL, STATIC_PREFIX_TOKENS + transcript, output, 0, 0)

    cold = estimate(priced(), total, requests)
    assert cold.usd == pytest.approx(CACHE_WRITES_PER_RUN * write + (requests - CACHE_WRITES_PER_RUN) * read)
    assert cold.cache_read_tokens == (requests - CACHE_WRITES_PER_RUN) * STATIC_PREFIX_TOKENS
    assert cold.tokens == total + requests * output
    assert estimate(priced(), total, requests, warm=True).usd == pytest.approx(requests * read)
    assert estimate(priced(), total, requests, every_request_writes=True).usd == pytest.approx(requests * write)
    assert read < full < write
    assert estimate(RulesExtractor(), total, requests).usd == 0.0


def test_the_estimate_prices_each_request_not_the_sum_of_a_batch():
    """Haiku 5.5 bills a prompt above 100k tokens at five times the rate: twenty ordinary requests are not one."""
    one = estimate(priced(), STATIC_PREFIX_TOKENS + 6000, 1, warm=True).usd
    assert estimate(priced(), 20 * (STATIC_PREFIX_TOKENS + 6000), 20, warm=True).usd == pytest.approx(20 * one)


def test_a_model_that_cannot_cache_the_prefix_is_estimated_at_full_price(monkeypatch):
    monkeypatch.setitem(prices.MIN_CACHEABLE_TOKENS, MODEL, STATIC_PREFIX_TOKENS + 1)
    expected = estimate(priced(), 10 * (STATIC_PREFIX_TOKENS + 6000), 10)
    full = prices.cost_usd(MODEL, STATIC_PREFIX_TOKENS + 6000, 1500, 0, 0)
    assert expected.usd == pytest.approx(10 * full) and expected.cache_read_tokens == 0


# --- runs record, estimate and show the cached share

_PLACES = ("Lisbon", "Porto", "Braga", "Faro", "Coimbra", "Evora")
FACTS = [f"I have lived in {place} since 20{10 + i} and I work as a nurse at ward {i} of the city hospital. "
         f"My shifts at the {place} hospital start at {6 + i} in the morning, and on my days off I like to cycle "
         f"along the river with my old road bike, which I have had for {i + 3} years and keep repairing myself. "
         f"I would not trade {place} for any other city."
         for i, place in enumerate(_PLACES)]  # each over the 100-token request budget: one request each


@pytest.fixture
def many_requests(agents, monkeypatch):
    """Six kept messages, one request each (the per-request budget fits one message)."""
    path = new_session(agents)
    for i, fact in enumerate(FACTS):
        append(path, message_line(fact, message_id=f"u{i:07d}"))
    monkeypatch.setenv("DISTILL_REQUEST_BUDGET_TOKENS", "100")
    return path


def _cli(*args: str, env: dict | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_a_run_records_cache_writes_and_reads_and_runs_shows_the_cached_share(many_requests, settings):
    with FakeAnthropic() as fake:
        env = {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake.base_url}
        code, out, err = _cli("--json", "run", env=env)
        assert code == 0, err
        summary = orjson.loads(out)
        code, human, err = _cli("run", env=env)  # nothing new: no calls
    assert summary["requests"] == len(FACTS) == summary["model_calls"]
    output_config = {"format": {"type": "json_schema", "schema": OUTPUT_SCHEMA}}
    assert summary["cache_write_tokens"] == (len(SYSTEM_PROMPT) + len(orjson.dumps(output_config))) // 4
    assert summary["cache_read_tokens"] == (len(FACTS) - 1) * summary["cache_write_tokens"]
    prompt = summary["input_tokens"] + summary["cache_write_tokens"] + summary["cache_read_tokens"]
    assert summary["cached_share"] == round(summary["cache_read_tokens"] / prompt, 4) > 0.3
    assert summary["tokens"] > prompt  # every token billed: the prompt, cached or not, and the output
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        per_call = con.execute("SELECT sum(cache_write_tokens), sum(cache_read_tokens), count(*) FROM llm_calls "
                               "WHERE cache_write_tokens > 0 OR cache_read_tokens > 0").fetchone()
    assert per_call == (summary["cache_write_tokens"], summary["cache_read_tokens"], len(FACTS))

    code, out, _ = _cli("--json", "runs")
    latest, idle = orjson.loads(out)["runs"][1], orjson.loads(out)["runs"][0]
    assert latest["cached_share"] == summary["cached_share"] and idle["cached_share"] is None
    code, human, _ = _cli("runs")
    assert re.search(rf"cached +{summary['cached_share']:.0%}", human) and "cached    -" in human


def test_the_first_request_warms_the_cache_alone_so_the_others_read_it(many_requests, settings):
    """Four at a time, each answer 0.3 s away: sent together, all four would find no cache and pay to write it."""
    with FakeAnthropic() as fake:
        fake.responder = lambda items, _earlier: (time.sleep(0.3), None)[1]
        code, out, err = _cli("--json", "run", "--concurrency", "4",
                              env={"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake.base_url})
    assert code == 0, err
    summary = orjson.loads(out)
    output_config = {"format": {"type": "json_schema", "schema": OUTPUT_SCHEMA}}
    assert summary["requests"] == len(FACTS)
    assert summary["cache_write_tokens"] == (len(SYSTEM_PROMPT) + len(orjson.dumps(output_config))) // 4
    assert summary["cache_read_tokens"] == (len(FACTS) - 1) * summary["cache_write_tokens"]


def test_the_run_summary_names_cache_writes_reads_and_share(many_requests):
    with FakeAnthropic() as fake:
        code, human, err = _cli("run", env={"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake.base_url})
    assert code == 0, err
    (line,) = [line for line in human.splitlines() if line.startswith("model tokens:")]
    assert re.search(r"cache write [\d,]+, cache read [\d,]+: \d+% of the prompt from the cache\), cost \$", line)


def test_the_dry_run_estimate_accounts_for_the_cache(many_requests):
    code, out, err = _cli("--json", "run", "--dry-run")
    assert code == 0, err
    d = orjson.loads(out)
    expected = estimate(priced(), d["estimated_tokens"], d["requests"])
    assert d["requests"] == len(FACTS)
    assert d["estimated_cache_read_tokens"] == (len(FACTS) - CACHE_WRITES_PER_RUN) * STATIC_PREFIX_TOKENS
    assert d["estimated_cost_usd"] == pytest.approx(expected.usd, abs=1e-6)
    code, human, _ = _cli("run", "--dry-run")
    assert re.search(r"estimate: ≈[\d,]+ input tokens \(≈\d+% read from the prompt cache\), ≈\$", human)


def test_the_reprocess_estimate_accounts_for_the_cache(many_requests):
    code, out, err = _cli("--json", "reprocess", "--dry-run")
    assert code == 0, err
    d = orjson.loads(out)
    d = d.get("estimate", d)
    assert d["requests"] == len(FACTS)
    assert d["estimated_cache_read_tokens"] == (len(FACTS) - CACHE_WRITES_PER_RUN) * STATIC_PREFIX_TOKENS
    assert d["estimated_cost_usd"] == pytest.approx(estimate(priced(), d["estimated_tokens"], d["requests"]).usd,
                                                    abs=1e-6)
    code, human, err = _cli("reprocess", "--dry-run", "--model", MODEL)  # the job a key would run: priced
    assert re.search(rf"to the Anthropic extractor, model {MODEL}, ≈[\d,]+ input tokens \(≈\d+% read from the prompt "
                     rf"cache\), ≈\$[\d.]+", human + err)
    code, human, err = _cli("reprocess", "--dry-run")  # no key: the offline rules would run, and cost nothing
    assert "nothing to pay" in human and "$" not in human
