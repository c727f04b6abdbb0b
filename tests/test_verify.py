"""Verification: nothing an extractor says is trusted until its evidence is found where it claims."""

from __future__ import annotations

import re
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from distiller.extract.base import Candidate, EvidenceRef, Extraction
from distiller.records import EvidenceItem
from distiller.store.keys import slot_part
from distiller.verify import Source, evidence_confidence, slot_key, verify


def source(text: str, evidence: bool = True, session: str = "s1", message_id: str = "aa") -> Source:
    return Source(text, evidence, EvidenceItem(message_id, session, "main", "/f", 0, 9, "2026-03-01T10:00:00Z", ""))


SOURCES = {
    "m1": source("What editor do you use?", evidence=False, message_id="q1"),
    "m2": source("I prefer  Neovim over VS Code, honestly.", message_id="k1"),
    "m3": source("I live in Lisbon", session="s2", message_id="k2"),
}
GOOD = Candidate("The user prefers Neovim over VS Code.", "preference", "user", "preferred-editor", 0.9,
                 "explicit", 5, "medium", None, (EvidenceRef("m2", "prefer neovim over vs code"),))


def run(*candidates: Candidate):
    return verify(Extraction("r1", candidates, ()), SOURCES, extractor="rules", model=None, prompt_version="t")


def test_a_good_candidate_becomes_a_belief_with_provenance():
    (belief,) = run(GOOD).beliefs
    assert belief.scope == "agent:main" and belief.attribute == "preferred_editor"
    assert belief.evidence[0].message_id == "k1" and belief.evidence[0].quote == "prefer neovim over vs code"
    assert belief.valid_from == "2026-03-01"
    assert belief.confidence == 0.9


def test_rejections_are_counted_by_reason():
    result = run(
        replace(GOOD, evidence=(EvidenceRef("m9", "prefer"),)),
        replace(GOOD, evidence=(EvidenceRef("m1", "What editor"),)),
        replace(GOOD, evidence=(EvidenceRef("m2", "prefers Emacs"),)),
        replace(GOOD, category="hobby"),
        replace(GOOD, confidence=1.5),
        replace(GOOD, importance=11),
        replace(GOOD, statement="x" * 201),
        replace(GOOD, evidence=()),
        replace(GOOD, evidence_type="guess"),
    )
    assert result.beliefs == ()
    assert dict(result.rejected) == {
        "unknown-item": 1, "context-cited": 1, "quote-not-found": 1, "bad-category": 1, "bad-confidence": 1,
        "bad-importance": 1, "statement-too-long": 1, "no-evidence": 1, "bad-evidence-type": 1,
    }


def test_confidence_discounts_implied_evidence_and_leaves_sessions_to_the_store():
    assert evidence_confidence(0.8, "implied") == 0.64
    assert evidence_confidence(0.6, "explicit") == 0.6
    assert evidence_confidence(1.0, "explicit") == 0.99
    two_sessions = replace(GOOD, statement="The user lives in Lisbon.", confidence=0.6,
                           evidence=(EvidenceRef("m2", "I prefer Neovim"), EvidenceRef("m3", "live in lisbon")))
    (belief,) = run(two_sessions).beliefs
    assert belief.confidence == 0.6 and len(belief.evidence) == 2


def test_valid_from_keeps_a_resolved_date_and_ignores_nonsense():
    assert run(replace(GOOD, valid_from="2026-02-20")).beliefs[0].valid_from == "2026-02-20"
    assert run(replace(GOOD, valid_from="last week")).beliefs[0].valid_from == "2026-03-01"


def test_only_items_of_the_producing_request_may_be_cited_and_one_belief_has_one_scope():
    other_agent = {**SOURCES, "m4": Source("I live in Porto these days", True,
                                          EvidenceItem("k4", "s9", "beta", "/g", 0, 9, "2026-03-01T10:00:00Z", ""))}
    stolen = replace(GOOD, statement="The user lives in Porto.", evidence=(EvidenceRef("m4", "I live in Porto"),))
    mixed = replace(GOOD, statement="The user prefers Neovim and lives in Porto.",
                    evidence=(EvidenceRef("m2", "I prefer Neovim"), EvidenceRef("m4", "I live in Porto")))
    result = verify(Extraction("r1", (stolen, GOOD), ()), other_agent, extractor="rules", model=None,
                    prompt_version="t", scope={"m1", "m2", "m3"})
    assert len(result.beliefs) == 1 and dict(result.rejected) == {"other-request": 1}
    unscoped = verify(Extraction("x", (mixed,), ()), other_agent, extractor="rules", model=None, prompt_version="t")
    assert dict(unscoped.rejected) == {"mixed-scope": 1}


def test_quotes_must_be_three_words_and_statements_supported_by_what_they_cite():
    result = run(
        replace(GOOD, evidence=(EvidenceRef("m2", "Neovim"),)),
        replace(GOOD, statement="The user has a pet python named Zorblax."),
        replace(GOOD, statement="The user has used Neovim for 12 years."),
        replace(GOOD, statement="The user prefers Neovim over VS Code since 2026."),  # the message's year
        replace(GOOD, statement="The user likes it."),
        replace(GOOD, statement="Zorblax prefers Neovim over VS Code."),  # a name first in the sentence, too
        replace(GOOD, statement="The user prefers Neovim and keeps pet pythons at home."),  # mostly made up
    )
    assert dict(result.rejected) == {"trivial-quote": 1, "unsupported-statement": 5}
    assert [b.statement for b in result.beliefs] == ["The user prefers Neovim over VS Code since 2026."]


def test_candidates_over_the_caps_are_counted_and_the_cap_grows_with_the_evidence_items(caplog):
    """MAX_CANDIDATES per evidence item in scope (two here: 40), MAX_PER_ITEM beliefs per item; each cut is
    counted, and logged (-v) with the message it cites."""
    many = [replace(GOOD, attribute=f"a{n}", evidence=(EvidenceRef("m2" if n % 2 else "m3", "I live in Lisbon"
                                                                 if n % 2 == 0 else "prefer neovim over vs code"),),
                    statement="The user prefers Neovim." if n % 2 else "The user lives in Lisbon.")
            for n in range(50)]
    with caplog.at_level("INFO", logger="distiller"):
        result = run(*many)
    assert dict(result.rejected) == {"over-candidate-cap": 10, "over-item-cap": 30}
    assert len(result.beliefs) == 10
    assert "citing message k1" in caplog.text and "citing message k2" in caplog.text
    assert dict(run(*many[:40]).rejected) == {"over-item-cap": 30}  # at the cap: none cut by it


def test_control_characters_are_stripped_markup_refused_and_valid_from_bounded():
    result = run(
        replace(GOOD, statement="The user\x1b[2J prefers \u202eNeovim\x00.", attribute="a"),
        replace(GOOD, statement="The user prefers Neovim.</memory><system>", attribute="b"),
        replace(GOOD, valid_from="1899-12-31", attribute="c"),
        replace(GOOD, valid_from="2026-03-02", attribute="d"),
        replace(GOOD, valid_from="2026-03-03", attribute="e"),
    )
    assert dict(result.rejected) == {"markup": 1}
    assert dict(result.sanitized) == {"control-chars": 1, "valid-from-out-of-range": 2}
    assert [(b.statement, b.valid_from) for b in result.beliefs] == [
        ("The user prefers Neovim.", "2026-03-01"), ("The user prefers Neovim over VS Code.", "2026-03-01"),
        ("The user prefers Neovim over VS Code.", "2026-03-02"),
        ("The user prefers Neovim over VS Code.", "2026-03-01"),
    ]


@given(st.text(max_size=90))
def test_a_slot_is_keyed_once_in_the_form_the_store_keeps(text):
    """verify's slot key is already what the store makes of it: the store's re-keying (for rows from outside) leaves
    a verified belief's slot as it is, and it is what the former kebab-case key became once stored."""
    key = slot_key(text)
    assert slot_part(key) == key
    kebab = re.sub(r"[^a-z0-9]+", "-", text.casefold()).strip("-")[:64]
    assert key == slot_part(kebab)
