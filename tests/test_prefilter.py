import json
from pathlib import Path

import pytest

from distiller.screen.clean import clean as clean_as
from distiller.screen.prefilter import CONTEXT, DROP, KEEP, REASONS, Verdict, prefilter
from distiller.sources.openclaw.envelopes import CLEANING


def clean(text, role, extra_blocks=()):
    return clean_as(text, role, extra_blocks, CLEANING)


FIXTURE = Path(__file__).parent / "fixtures" / "labelled.jsonl"
ROWS = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]


def _verdicts(row):
    message = row["line"]["message"]
    text = "\n".join(block["text"] for block in message["content"] if block.get("type") == "text")
    cleaned = clean(text, message["role"])
    return cleaned, [prefilter(part, message["role"]) for part in cleaned.parts]


@pytest.mark.parametrize("row", [row for row in ROWS if "decisions" in row["expect"]], ids=lambda row: row["id"])
def test_fixture_decisions(row):
    _, verdicts = _verdicts(row)
    assert [verdict.decision for verdict in verdicts] == row["expect"]["decisions"]
    assert all(verdict.reason in REASONS for verdict in verdicts)


def test_fixture_fact_turns_are_kept_and_most_chatter_dropped():
    facts = [row for row in ROWS if row["fact"] is True]
    chatter = [row for row in ROWS if row["fact"] is False]
    kept = [row["id"] for row in facts if any(v.decision == KEEP for v in _verdicts(row)[1])]
    dropped = [row["id"] for row in chatter if not any(v.decision == KEEP for v in _verdicts(row)[1])]
    assert len(facts) >= 60 and len(chatter) >= 60
    assert len(kept) / len(facts) >= 0.97, sorted({row["id"] for row in facts} - set(kept))
    assert len(dropped) / len(chatter) >= 0.54


@pytest.mark.parametrize(
    "text",
    [
        "I'm vegetarian, what should I cook tonight?",
        "my daughter turns 5 next week — party ideas?",
        "book my flight to Berlin on Friday, I hate aisle seats",
        "Just adopted a puppy named Max!",
        "我在上海工作",
        "私は医者です",
        "Never use emojis when you reply to me.",
        "Berlin.",
    ],
)
def test_turns_that_may_carry_a_fact_are_kept(text):
    assert prefilter(text, "user").decision == KEEP


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("Haha that's awesome", "ack-filler"),
        ("Thanks, Caroline!", "ack-filler"),
        ("好的，谢谢！", "ack-filler"),
        ("What did you do last weekend?", "question"),
        ("你周末做了什么？", "question"),
        ("Write a haiku about autumn", "command"),
        ("/reset", "slash-command"),
        ("🎉🎉", "emoji-only"),
        ("?", "too-short"),
        ("https://example.com/a?b=c", "url-only"),
        ("Do you remember what I told you about my job?", "meta-question"),
        ("", "empty-after-clean"),
    ],
)
def test_turns_without_facts_are_dropped_with_their_reason(text, reason):
    assert prefilter(text, "user") == Verdict(DROP, reason)


def test_assistant_messages_are_context_unless_configured():
    text = "That sounds like a wonderful trip — Lisbon in spring is lovely."
    assert prefilter(text, "assistant") == Verdict(CONTEXT, "assistant-context")
    assert prefilter(text, "assistant", assistant_decision=DROP) == Verdict(DROP, "assistant-context")


def test_assistant_refusal_is_dropped():
    assert prefilter("I don't recall you mentioning that.", "assistant") == Verdict(DROP, "assistant-refusal")


def test_repeated_text_is_an_echo():
    previous = "I moved to Rome in 2021."
    assert prefilter("I moved to  rome in 2021.", "user", previous_user_text=previous) == Verdict(DROP, "echo")
    assert prefilter(previous, "assistant", previous_user_text=previous) == Verdict(DROP, "echo")


def test_long_personal_message_is_kept_without_sentence_analysis():
    text = "I grew up on a farm. " + "We had cows and a tractor and the winters were long. " * 40
    assert prefilter(text, "user") == Verdict(KEEP, "personal")


def test_large_paste_without_first_person_is_oversized():
    text = "The quarterly revenue grew across all regions. " * 200
    assert prefilter(text, "user") == Verdict(DROP, "oversized-paste")


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("I see.", Verdict(DROP, "ack-filler")),
        ("Hey Sam, I see.", Verdict(DROP, "ack-filler")),
        ("I see my doctor on Monday.", Verdict(KEEP, "personal")),
        ("It is 24°C and 私は東京に住んでいます", Verdict(KEEP, "personal")),
    ],
)
def test_hollow_phrases_are_discounted_but_first_person_in_any_script_counts(text, verdict):
    assert prefilter(text, "user") == verdict


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("Thanks, Deb! Your support really means a lot.", "other-party"),
        ("Wow, Maria, glad you found something that brings you joy.", "other-party"),
        ("Cool! Wall lighting adds beauty to your workspace.", "other-party"),
        ("I'm sure you'll have a blast at the wedding.", "other-party"),
        ("I love how you're using art to heal.", "other-party"),
        ("Man, Apex Legends looks tough! How does it stack up?", "reaction"),
        ("Those are great games!", "reaction"),
        ("I love that book!", "reaction"),
        ("It's so rewarding.", "reaction"),
        ("Good luck with the move, I know it's stressful!", "reaction"),
        ("Have fun at the concert!", "reaction"),
        ("You got this!", "ack-filler"),
        ("Yes, I do.", "ack-filler"),
        ("Maybe I will!", "ack-filler"),
        ("I'll text you later!", "ack-filler"),
        ("We should hang out sometime!", "ack-filler"),
        ("Bye, talk soon!", "ack-filler"),
        ("Thanks for the advice!", "ack-filler"),
        ("Oh, I've heard good things about it. I'll have to check it out.", "ack-filler"),
        ("I've always wanted to do that.", "ack-filler"),  # first person, but filler words only
        ("I am doing well, thank you for asking.", "ack-filler"),
        ("I would love that!", "ack-filler"),
        ("Yeah, it's one of my favorites.", "ack-filler"),
        ("You should! It's a great way to stay in shape.", "reaction"),
        ("It'll be a great adventure.", "reaction"),
    ],
)
def test_pleasantries_reactions_and_farewells_are_dropped_per_sentence(text, reason):
    assert prefilter(text, "user") == Verdict(DROP, reason)


@pytest.mark.parametrize(
    "text",
    [
        "Thanks, Deb! I'm gonna keep pushing forward with my pottery.",  # a fact inside the pleasantries
        "Wow, that's great! I signed up for a pottery class.",
        "Just got back from Japan! Have you been?",  # news told without its "I", then a question
        "Apex Legends looks tough!",  # an exclamation without a question after it stays content
        "New job starts Monday!",
        "I'm excited to become a nurse.",  # a feeling about the speaker's own plan
        "I love the way folk music tells stories.",
        "I love how my dog greets me.",
        "It's a lot of work, but it's a great place to live.",
        "I'm 34.",  # a number is always something
        "I have two cats.",
        "My favorite is pizza.",
        "You should always answer in Spanish.",  # an instruction to the assistant, not a compliment
        "Please don't use emojis when you reply.",
        "Your last answer was wrong; the meeting is on Thursday.",  # a semicolon ends a sentence
        "Your story inspired me to start volunteering at the shelter.",
    ],
)
def test_a_fact_among_pleasantries_keeps_the_message(text):
    assert prefilter(text, "user").decision == KEEP


def test_the_hollow_phrase_lookahead_only_skips_words_no_phrase_starts_with():
    import re

    from distiller.screen.prefilter import _HOLLOW_FIRST_PERSON, _SENTENCE, _normalise

    plain = re.compile(_HOLLOW_FIRST_PERSON.pattern.replace(r"\b(?=[gilmostw])", r"\b", 1))
    assert plain.pattern != _HOLLOW_FIRST_PERSON.pattern
    texts = [block["text"] for row in ROWS for block in row["line"].get("message", {}).get("content", [])
             if isinstance(block, dict) and block.get("type") == "text"]
    texts += ["I'll have to check it out.", "we should hang out", "oh my god", "same here", "tell me more",
              "give me a sec", "shall we", "let's go", "my bad", "I might just have to give it a try"]
    sentences = [_normalise(sentence) for text in texts for sentence in _SENTENCE.findall(text)]
    assert len(sentences) > 200
    for sentence in sentences:
        assert _HOLLOW_FIRST_PERSON.sub(" ", sentence) == plain.sub(" ", sentence)
