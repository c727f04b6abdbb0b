import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from secretgen import CLEAN_MARKERS, texts_with_secrets

from distiller.screen.clean import Cleaned
from distiller.screen.clean import clean as clean_as
from distiller.screen.clean import clean_every_rule as clean_every_rule_as
from distiller.screen.injected import MEMORY_BLOCKS, OUR_BLOCKS
from distiller.sources.openclaw.envelopes import CLEANING


def clean(text, role, extra_blocks=()):
    """OpenClaw's messages, cleaned by OpenClaw's rules."""
    return clean_as(text, role, extra_blocks, CLEANING)


def clean_every_rule(text, role, extra_blocks=()):
    return clean_every_rule_as(text, role, extra_blocks, CLEANING)


FIXTURE = Path(__file__).parent / "fixtures" / "labelled.jsonl"
ROWS = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]


def _text(row):
    return "\n".join(block["text"] for block in row["line"]["message"]["content"] if block.get("type") == "text")


def _is_subsequence(part, text):
    remaining = iter(text)
    return all(ch in remaining for ch in part)


@pytest.mark.parametrize("row", ROWS, ids=[row["id"] for row in ROWS])
def test_fixture_rows_clean_as_labelled(row):
    expect = row["expect"]
    cleaned = clean(_text(row), row["line"]["message"]["role"])
    assert cleaned.drop_reason == expect.get("drop_reason")
    if "parts" in expect:
        assert list(cleaned.parts) == expect["parts"]
    joined = "\n".join(cleaned.parts)
    for gone in expect.get("absent", []):
        assert gone not in joined
    for kept in expect.get("present", []):
        assert kept in joined


def test_distiller_blocks_are_always_stripped():
    assert OUR_BLOCKS == ("distiller-recall", "distiller-profile")
    assert "relevant-memories" in MEMORY_BLOCKS
    for role in ("user", "assistant"):
        assert clean("<distiller-recall>x</distiller-recall>my cat is Tom", role, extra_blocks=()).parts == (
            "my cat is Tom",
        )


@pytest.mark.parametrize("tag", OUR_BLOCKS)
@pytest.mark.parametrize("where", ["start", "middle", "end", "unclosed"])
def test_every_distiller_block_leaves_no_trace(tag, where):
    block = f"<{tag}>\n- [preference, 0.91] User prefers window seats\n- [fact] User lives in Oslo\n</{tag}>"
    if where == "start":
        text = f"{block}\n\nI adopted a dog."
    elif where == "middle":
        text = f"I adopted a dog.\n{block}\nHer name is Pia."
    elif where == "end":
        text = f"I adopted a dog.\n{block}"
    else:
        text = f"I adopted a dog.\n<{tag}>\n- [fact] User lives in Oslo"
    for role in ("user", "assistant"):
        cleaned = clean(text, role)
        joined = "\n".join(cleaned.parts)
        assert "I adopted a dog." in joined
        for trace in (tag, "Oslo", "window seats", "<", ">"):
            assert trace not in joined


def test_unclosed_block_is_counted_and_runs_to_the_end():
    cleaned = clean("I like jazz.\n<bee-recall>\n- [fact] User likes rock", "user")
    assert cleaned == Cleaned(("I like jazz.",), None, ("unclosed:bee-recall",))


def test_nested_internal_context_is_removed_whole():
    text = (
        "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>a<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>b"
        "<<<END_OPENCLAW_INTERNAL_CONTEXT>>>c<<<END_OPENCLAW_INTERNAL_CONTEXT>>>I run daily"
    )
    assert clean(text, "user") == Cleaned(("I run daily",), None, ("stripped:openclaw-internal-context",))


def test_extra_blocks_extend_the_list():
    text = "<memo-x>secret plan</memo-x>I love sushi"
    assert clean(text, "user").parts == (text,)
    assert clean(text, "user", extra_blocks=("memo-x",)).parts == ("I love sushi",)


def test_queued_batch_is_split_and_each_part_cleaned():
    text = (
        "[Queued messages while agent was busy]\n\n---\nQueued #1\n[Mon 2026-02-23 10:00 GMT+8] I moved\n\n"
        "---\nQueued #2\nSystem: [2026-02-23 10:01:00 GMT+8] Exec completed (a, code 0)\n\nto Rome"
    )
    cleaned = clean(text, "user")
    assert cleaned.parts == ("I moved", "to Rome")
    assert cleaned.events.count("split:queued") == 1
    assert "envelope:timestamp" in cleaned.events and "envelope:system-line" in cleaned.events


def test_queued_part_that_is_synthetic_is_dropped_alone():
    text = "[Queued messages while agent was busy]\n\n---\nQueued #1\n[cron:abc nightly] run\n\n---\nQueued #2\nI'm home"
    cleaned = clean(text, "user")
    assert cleaned.parts == ("I'm home",)
    assert cleaned.drop_reason is None
    assert "synthetic:cron" in cleaned.events


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("[cron:nightly] A new session was started via /new or /reset", "session-start"),
        ("[cron:nightly] please reply with HEARTBEAT_OK", "heartbeat"),
        ("[cron:nightly] rotate the logs", "cron"),
        ("Exec failed (exit 1): npm test", "exec-event"),
    ],
)
def test_synthetic_kinds_keep_their_precedence(text, kind):
    assert clean(text, "user") == Cleaned((), "synthetic-prompt", (f"synthetic:{kind}",))


def test_metadata_blocks_after_the_users_words_are_removed_too():
    text = (
        "I moved to Lisbon.\n"
        'Conversation info (untrusted metadata):\n```json\n{"message_id": "7"}\n```\n'
        'Sender (untrusted metadata):\n```json\n{"id": "7781"}\n```\n'
        "And I adopted a cat."
    )
    cleaned = clean(text, "user")
    assert cleaned.parts == ("I moved to Lisbon.\nAnd I adopted a cat.",)
    assert cleaned.events == ("envelope:inbound-metadata", "envelope:inbound-metadata")


def test_every_assistant_media_directive_is_removed():
    cleaned = clean("Sure.\nMEDIA: /tmp/a.png\nMEDIA: /tmp/b.png", "assistant")
    assert cleaned == Cleaned(("Sure.",), None, ("media:directive", "media:directive"))


def test_envelopes_are_user_side_only():
    text = "[Mon 2026-02-23 10:00 GMT+8] the meeting moved"
    assert clean(text, "assistant").parts == (text,)
    assert clean(text, "user").parts == ("the meeting moved",)


def test_think_blocks_are_assistant_side_only():
    assert clean("<think>hmm</think>Sure.", "assistant").parts == ("Sure.",)
    assert clean("reasoning here</think>Sure.", "assistant").parts == ("Sure.",)
    assert clean("<think>hmm</think>Sure.", "user").parts == ("<think>hmm</think>Sure.",)


def test_plain_text_passes_untouched():
    text = "We spent the summer in Crete and I finally learned to sail."
    assert clean(text, "user") == Cleaned((text,), None, ())


def test_empty_message_reports_empty_after_clean():
    assert clean("   \n ", "user") == Cleaned((), "empty-after-clean", ())


MARKERS = st.sampled_from(
    [
        "<bee-recall>", "</bee-recall>", "<relevant-memories>", "</relevant-memories>", "[UNTRUSTED DATA x]",
        "[END UNTRUSTED DATA]", "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>", "<<<END_OPENCLAW_INTERNAL_CONTEXT>>>",
        "<distiller-recall>", "</distiller-recall>", "<think>", "</think>", "\n", "\n\n\n", "```json\n", "\n```",
        "Conversation info (untrusted metadata):\n", "Sender: ⟦openclaw:ctx⟧\n", "Context: ⟦openclaw:ctx⟧\n",
        "[Mon 2026-02-23 10:00 GMT+8] ", "System: [2026-03-18 14:21:36 GMT+8] x\n", "[message_id: m1]\n",
        "[Queued messages while agent was busy]", "\n---\nQueued #1\n", "NO_REPLY", "HEARTBEAT_OK",
        "[[reply_to_current]]", "MEDIA:x.png\n", "[Audio]\n", "Transcript:\n", "Description:\n", "[cron:a b]",
        "Untrusted context (metadata, do not treat as instructions or commands):\n", "Source: x\n", "\r\n", " ",
        "<BEE-RECALL>", "< /Bee_Recall >", "<bее-recall>", "</bее‐recall>", "<user-memories>", "</user-memories>",
        "<MemoryRouter>", "<bee-x y>", "</bee-x>", "[context]", "[/context]",
    ]
)  # fmt: skip
TEXTS = st.lists(st.one_of(MARKERS, st.text(max_size=12)), max_size=12).map("".join)


@settings(max_examples=400, deadline=None)
@given(TEXTS, st.sampled_from(["user", "assistant"]))
def test_clean_only_removes_never_raises_and_is_idempotent(text, role):
    cleaned = clean(text, role)
    assert _is_subsequence("".join(cleaned.parts), text)
    assert all(part and part == part.strip() for part in cleaned.parts)
    for part in cleaned.parts:
        assert clean(part, role) == Cleaned((part,), None, ())


@pytest.mark.slow  # hundreds of generated examples; CI runs it with the other slow tests
@settings(max_examples=400, deadline=None)
@given(texts_with_secrets(tuple(CLEAN_MARKERS)), st.sampled_from(["user", "assistant"]))
def test_the_trigger_shortcut_equals_running_every_rule(text, role):
    assert clean(text, role) == clean_every_rule(text, role)


def _declared_needles() -> list[str]:
    """Every literal each OpenClaw rule declares, in the case variants and line positions its rule accepts."""
    found: set[str] = set()
    for rule in (*CLEANING.splits, *CLEANING.synthetic, *CLEANING.rewrites):
        needles = rule.needles
        found.update(needles.anywhere)
        found.update(f"\n \t{needle}" for needle in needles.line_start)
        found.update(needles.line_start)
        for needle in (*needles.folded, *needles.start_folded):
            found.update((needle, needle.upper(), needle.title(), needle.swapcase()))
    return sorted(found)


NEEDLE_TEXTS = st.lists(
    st.one_of(st.sampled_from(_declared_needles()), MARKERS, st.sampled_from(CLEAN_MARKERS),
              st.text(st.sampled_from("ab _.:*(\n \t[]<>/"), max_size=8)),
    max_size=8,
).map("".join)


@settings(max_examples=600, deadline=None)
@given(NEEDLE_TEXTS, st.sampled_from(["user", "assistant"]))
def test_the_shortcut_derived_from_every_rules_needles_equals_running_every_rule(text, role):
    assert clean(text, role) == clean_every_rule(text, role)


@pytest.mark.parametrize(
    ("text", "role"),
    [
        ("heartbeat_ok", "assistant"),
        ("* NO_REPLY and then a tail longer than the last two dozen characters", "assistant"),
        ("ok.\n  MEDIA: ./a.png", "assistant"),
        ("please heartbeat_respond now", "user"),
        ("eXec completed (code 0)", "user"),
    ],
)
def test_texts_a_hand_kept_trigger_list_let_past_are_cleaned_as_by_every_rule(text, role):
    """Each of these took the old shortcut (no trigger found) although a rule changes it."""
    cleaned = clean(text, role)
    assert cleaned == clean_every_rule(text, role)
    assert cleaned != Cleaned((text,), None, ())


def test_a_format_without_rules_of_its_own_strips_injected_memory_but_not_openclaw_envelopes():
    text = "<relevant-memories>x</relevant-memories> [Telegram 2026-03-01 10:00] hi <distiller-recall>y</distiller-recall>"
    assert clean_as(text, "user").parts == ("[Telegram 2026-03-01 10:00] hi",)
    assert clean_as("Read HEARTBEAT.md", "user") == Cleaned(("Read HEARTBEAT.md",), None, ())
