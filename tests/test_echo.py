"""Recall never feeds back: echoes of stored beliefs are removed from user messages (screen/echo.py), and a corpus
distilled, recalled and pasted back into new messages, tagged or not, teaches the store nothing."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import orjson
import pytest
from conftest import append, distill, message_line, new_session
from fakeapi import candidate, candidates_reply
from hypothesis import given
from hypothesis import strategies as st

from distiller.screen import echo

STATEMENTS = ["The user prefers tabs over spaces.", "The user lives in Lisbon with two cats.",
              "The user is a nurse.", "Likes tea.", "The user prefers green tea in the morning."]
INDEX = echo.index(STATEMENTS)


@pytest.mark.parametrize("text, left", [
    ("- [preference] The user prefers tabs over spaces. (0.90)", ""),
    ("- [preference] The user prefers tabs over spaces. (0.90)\nAlso I just adopted a dog named Biscuit.",
     "Also I just adopted a dog named Biscuit."),
    ("I just adopted a dog. - [fact] The user lives in Lisbon with two cats. (0.60) What should I feed it?",
     "I just adopted a dog. What should I feed it?"),
    ("My new job starts Monday.\nthe user is a nurse", "My new job starts Monday."),
    ("As you know THE USER LIVES IN LISBON, with two cats! Right?", "As you know Right?"),
])
def test_echoed_spans_go_and_new_words_stay(text, left):
    kept, count = echo.strip(text, INDEX)
    assert kept == left and count >= 1


@pytest.mark.parametrize("text", [
    "I prefer tabs over spaces, always have.",  # the user's own words, first person
    "I live in Lisbon with my two cats.",
    "I really like tea in the morning.",  # a statement of fewer than three words is never an echo
    "My sister is a nurse.",
    "I prefer green tea in the morning.",  # a phrase of a statement, said again by the user: not an echo
    "Yes, the user lives in Lisbon.",  # the start of a statement is not the statement
])
def test_the_users_own_words_are_not_echoes(text):
    assert echo.strip(text, INDEX) == (text, 0)


@given(st.lists(st.sampled_from(["I", "prefer", "tabs", "over", "spaces", "the", "user", "lives", "in", "Lisbon",
                                 "new", "job", "dog", "-", "[fact]", "(0.60)", "\n", "."]), max_size=40))
def test_stripping_never_adds_words_and_is_stable(tokens):
    text = " ".join(tokens)
    kept, count = echo.strip(text, INDEX)
    assert set(echo.words(kept)) <= set(echo.words(text))
    assert echo.strip(kept, INDEX) == (kept, 0)  # what is left holds no echo
    assert (count == 0) == (kept == text)


FACTS = ["I live in Porto and I work as a nurse at the city hospital.", "I prefer tea over coffee in the morning.",
         "My goal is to run a marathon next year.", "I decided to learn Portuguese this spring."]


def _counts(db: Path) -> tuple:
    with duckdb.connect(str(db), read_only=True) as con:
        return (sorted(con.execute("SELECT belief_id, status, evidence_count, statement FROM beliefs").fetchall()),
                con.execute("SELECT count(*) FROM evidence").fetchone()[0])


def _run(agents: Path, state: Path, env: dict | None = None) -> dict:
    done = distill("--json", "run", "--source", str(agents), state_dir=state, env=env, check=True)
    return orjson.loads(done.stdout)


_DECORATION = re.compile(r"^(?:- \[\w+\] )?(.*?)(?: \(\d\.\d\d\))?$")


def gullible(items, _earlier):
    """A model that believes every line a user item states (not its questions), recall lines included: the worst
    case for feedback, where a pasted line would come back as evidence of the belief it shows."""
    found = []
    for item in items:
        for line in item.text.splitlines() if item.citable and item.role == "user" else ():
            line = line.strip()
            if len(line.split()) >= 3 and not line.endswith("?") and not line.startswith("#"):
                statement = _DECORATION.match(line).group(1)
                found.append(candidate(item.item_id, line, statement=statement if statement.startswith("The user")
                                       else None, category="identity"))
    return candidates_reply(found)


def test_recall_pasted_back_tagged_or_not_teaches_nothing(tmp_path, agents, fake_anthropic, api):
    fake_anthropic.responder = gullible
    state = tmp_path / "state"
    for facts in (FACTS, FACTS[:2]):
        session = new_session(agents)
        for fact in facts:
            append(session, message_line(fact))
    _run(agents, state, api)
    before = _counts(state / "distill.duckdb")
    assert len(before[0]) == len(FACTS)
    block = orjson.loads(distill("--json", "recall", "porto nurse tea marathon portuguese", "--with-profile",
                                 "--limit-core", "1",
                                 "--limit-active", "1", state_dir=state, check=True).stdout)
    markdown = distill("recall", "--format", "markdown", "--with-profile", state_dir=state, check=True).stdout
    profile = orjson.loads(distill("--json", "profile", state_dir=state, check=True).stdout)["text"]
    assert profile and block["profile"] and {line["tier"] for line in block["lines"]} == {"core", "active", "recalled"}
    lines = [line for line in block["text"].splitlines() if line.startswith("- ")]
    pasted = [
        block["text"] + "\nCan you help me plan the week?",  # tagged, as a recall plugin injects it
        markdown,  # untagged, whole
        profile,
        f"Here is my profile: {profile} What do you think?",
    ]
    for line in lines:
        pasted += [line, f"{line}\nCan you help me plan the week?", f"Quick question.\n{line}\nWhat do you think?",
                   f"What do you think? {line}"]
    session = new_session(agents)
    for text in pasted:
        append(session, message_line(text))
    second = _run(agents, state, api)
    assert _counts(state / "distill.duckdb") == before  # no new belief, no new evidence, nothing reinforced
    assert second["cleaned"]["recall-echo"] >= len(lines) * 4 + 2 and second["cleaned"]["stripped:bee-recall"] == 1
    assert second["dropped"]["recall-echo"] >= len(lines) + 2  # alone: nothing left of the message


def test_new_information_beside_an_echo_is_still_learned(tmp_path, agents):
    state = tmp_path / "state"
    append(new_session(agents), message_line(FACTS[0]))
    _run(agents, state)
    first = _counts(state / "distill.duckdb")
    # one recall line: a message mostly of recall-shaped lines is dropped whole by the prefilter ("echo")
    echoed = f"- [fact] {first[0][0][3]} (0.60)"
    append(new_session(agents), message_line(f"{echoed}\nI prefer tea over coffee in the morning."))
    second = _run(agents, state)
    after = _counts(state / "distill.duckdb")
    assert set(first[0]) < set(after[0]) and len(after[0]) == len(first[0]) + 1  # the tea, and nothing reinforced
    assert second["cleaned"]["recall-echo"] == 1
