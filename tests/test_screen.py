"""Screening joins clean, prefilter and redact on one message."""

from __future__ import annotations

from distiller.records import Message
from distiller.screen import screen


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
