"""Screening joins clean, prefilter and redact on one message."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from secretgen import texts_with_secrets

from distiller.canonical import canonical
from distiller.records import Message
from distiller.redact import redact
from distiller.screen import screen
from distiller.screen.clean import clean
from distiller.sources.openclaw.envelopes import CLEANING


def msg(text: str, role: str = "user", inter_session: bool = False) -> Message:
    return Message("openclaw", "main", "s1", "abcd1234", None, "2026-03-01T10:00:00Z", role, text, "/f", 0, 10,
                   inter_session)


def test_queued_batch_becomes_one_decision_per_part():
    text = ("[Queued messages while agent was busy]\n\n---\nQueued #1\nok\n\n---\nQueued #2\n"
            "I moved to Porto last month and I love it")
    screened = screen(msg(text))
    assert [d.item_id for d in screened.decisions] == ["abcd1234#1", "abcd1234#2"]
    assert screened.decision.item_id == "abcd1234#2" and screened.decision.decision == "keep"
    assert "split:queued" in screened.clean_events


def test_recall_block_is_stripped_and_the_users_words_kept():
    text = ("<relevant-memories>\n[UNTRUSTED DATA — notes]\n1. [fact] User lives in Paris\n[END UNTRUSTED DATA]\n"
            "</relevant-memories>\nI just adopted a puppy named Max")
    (decision,) = screen(msg(text)).decisions
    assert decision.text == "I just adopted a puppy named Max"
    assert decision.decision == "keep"


def test_secrets_are_redacted_and_counted():
    screened = screen(msg("my key is sk-ant-api03-" + "a1B2c3D4e5" * 9 + " keep it safe"))
    assert "[REDACTED:anthropic-key]" in screened.decisions[0].text
    assert dict(screened.redactions) == {"anthropic-key": 1}


def test_session_skip_and_inter_session():
    (skipped,) = screen(msg("I live in Lisbon"), session_skip="cron-session").decisions
    assert (skipped.decision, skipped.reason, skipped.text) == ("drop", "cron-session", "")
    (forwarded,) = screen(msg("I live in Lisbon", inter_session=True)).decisions
    assert (forwarded.decision, forwarded.reason) == ("context", "inter-session")


def test_synthetic_prompt_is_dropped_whole():
    (decision,) = screen(msg("HEARTBEAT_OK", role="assistant")).decisions
    assert (decision.decision, decision.reason) == ("drop", "synthetic-prompt")


@settings(max_examples=80, deadline=None)
@given(st.lists(texts_with_secrets(), min_size=1, max_size=3), st.sampled_from(["user", "assistant"]))
def test_one_part_or_many_the_items_and_counts_are_each_parts_redaction_added_up(texts, role):
    """The one-part shortcut (its counts are the part's own) against adding up every part's counts."""
    text = texts[0] if len(texts) == 1 else "[Queued messages while agent was busy]" + "".join(
        f"\n\n---\nQueued #{n}\n{piece}" for n, piece in enumerate(texts, start=1))
    message = msg(text, role)
    screened = screen(message)
    parts = clean(canonical(text)[0], role, (), CLEANING).parts
    if not parts:
        return
    totals: Counter[str] = Counter()
    for part in parts:
        totals.update(dict(redact(part).counts))
    assert screened.redactions == tuple(sorted(totals.items()))
    assert [d.text for d in screened.decisions] == [redact(part).text for part in parts]
    expected_ids = [message.message_id] if len(parts) == 1 else [f"{message.message_id}#{n}"
                                                                 for n in range(1, len(parts) + 1)]
    assert [d.item_id for d in screened.decisions] == expected_ids


RECALL_BODY = "\n- [fact, 0.90] The user lives in Reykjavik\n"


def _disguised(opening: str, closing: str) -> str:
    return f"{opening}{RECALL_BODY}{closing}\nI adopted a cat last week."


DISGUISES = [
    ("＜ｂｅｅ－ｒｅｃａｌｌ＞", "＜／ｂｅｅ－ｒｅｃａｌｌ＞"),  # full-width
    ("<BEE-RECALL>", "</BEE-RECALL>"),
    ("<Bee-Recall>", "</bee-RECALL>"),
    ("< bee-recall >", "< /bee-recall >"),
    ("<bee\u200b-recall>", "</bee-re\u200dcall>"),  # zero-width characters inside the name
    ("<bее-rеcаll>", "</bее-rеcаll>"),  # Cyrillic е and а
    ("<bee_recall>", "</bee recall>"),  # other separators between the words
    ("<bee\u2010recall>", "</bee\u2013recall>"),  # Unicode hyphen and dash
    ("<relevant-memories data-source=\"x\">", "</RELEVANT_MEMORIES>"),
    ("<long_term_memory>", "</long_term_memory>"),  # a memory block of a system nobody listed
    ("<user-memories>", "</user-memories>"),
    ("<bee-core-beliefs>", "</bee-core-beliefs>"),
    ("<system-reminder>", "</System-Reminder>"),
]


@pytest.mark.parametrize(("opening", "closing"), DISGUISES)
@pytest.mark.parametrize("role", ["user", "assistant"])
def test_a_disguised_recall_block_is_stripped(opening, closing, role):
    screened = screen(msg(_disguised(opening, closing), role=role))
    (decision,) = screened.decisions
    assert decision.text == "I adopted a cat last week."
    assert any(event.startswith("stripped:") for event in screened.clean_events)


@pytest.mark.parametrize("text", [
    "I use <MemoryRouter> from react-router in tests.",
    "I recall that my sister moved to Oslo.",
    "My memory is terrible these days.",
    "Use <b>bold</b> and <em>emphasis</em> in the doc.",
    "Мы живём в Москве с 2019 года.",
])
def test_words_and_tags_that_only_resemble_memory_blocks_are_kept(text):
    (decision,) = screen(msg(text)).decisions
    assert decision.text == text


def test_invisible_characters_are_removed_before_screening_and_counted():
    screened = screen(msg("I live in Lis\u200bbon\u202e and I love it"))
    assert screened.decisions[0].text == "I live in Lisbon and I love it"
    assert screened.invisible_chars == 2


def test_a_zero_width_character_inside_a_key_does_not_hide_it():
    token = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5"
    split = token[:10] + "\u200b" + token[10:]
    (decision,) = screen(msg(f"my github token is {split} keep it safe")).decisions
    assert token[4:] not in decision.text and token[10:] not in decision.text
    assert "[REDACTED:" in decision.text
