"""The offline rules extractor on labelled sentences: what it must find, and what it must leave alone."""

from __future__ import annotations

import pytest

from distiller.extract.base import ExtractRequest, Item
from distiller.extract.rules import RulesExtractor, candidates_from

FOUND = [
    ("I prefer tabs over spaces, and my editor is neovim.", "preference", "The user prefers tabs over spaces."),
    ("we decided to use Postgres instead of Kafka.", "decision", "The user decided to use Postgres instead of Kafka."),
    ("I live in Lisbon — love it", "identity", "The user lives in Lisbon."),
    ("I'm allergic to peanuts", "fact", "The user is allergic to peanuts."),
    ("My goal is to run a marathon in October", "goal", "The user's goal is to run a marathon in October."),
    ("ok so I really dislike Java, so no JVM tools", "preference", "The user dislikes Java."),
    ("My name is Maya Chen", "identity", "The user's name is Maya Chen."),
    ("I'm a backend engineer at Finch", "identity", "The user is a backend engineer at Finch."),
    ("I want to learn European Portuguese before the move", "goal",
     "The user wants to learn European Portuguese before the move."),
    ("I have two cats", "fact", "The user has two cats."),
]
LEFT_ALONE = [
    "Do you think I should use Postgres?",
    "If I move to Lisbon I will learn Portuguese",
    "What do I prefer again?",
    "thanks, that works",
    "Can you book a table for two?",
]


@pytest.mark.parametrize("text, category, statement", FOUND)
def test_first_person_declarations_become_candidates(text, category, statement):
    (candidate,) = candidates_from("m1", text)
    assert (candidate.category, candidate.statement) == (category, statement)
    assert candidate.evidence[0].quote in text
    assert candidate.subject == "user" and candidate.attribute


@pytest.mark.parametrize("text", LEFT_ALONE)
def test_questions_conditionals_and_chatter_are_not_beliefs(text):
    assert candidates_from("m1", text) == []


def test_only_citable_user_items_are_read():
    request = ExtractRequest("r1", "main", (
        Item("m1", "assistant", None, "I prefer to keep answers short.", True),
        Item("m2", "user", None, "I live in Porto.", False),
        Item("m3", "user", None, "I live in Lisbon.", True),
    ))
    extraction = RulesExtractor().extract(request)
    assert [c.evidence[0].item_id for c in extraction.candidates] == ["m3"]
    assert extraction.usage == ()
