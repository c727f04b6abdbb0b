"""The prefilter's shortcuts, each proven equal to the rule it skips: a hand-kept list of needles, first words or
first letters in front of a pattern is sound only if every text the pattern accepts passes it too.

Texts are drawn from the pattern itself (and its case variants, since the rules see normalised, lower-cased text),
inside arbitrary text."""

from __future__ import annotations

import importlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pf = importlib.import_module("distiller.screen.prefilter")  # `distiller.screen.prefilter` is also the function


def _cased(pattern, fullmatch: bool = True) -> st.SearchStrategy[str]:
    around = st.text(max_size=6)
    return st.tuples(around, st.from_regex(pattern, fullmatch=fullmatch), around).map("".join).flatmap(
        lambda text: st.sampled_from([text, text.upper(), text.title(), text.swapcase(), text.capitalize()])
    )


@settings(max_examples=300, deadline=None)
@given(_cased(pf._META_QUESTION))
def test_every_meta_question_passes_its_gate(text):
    if pf._META_QUESTION.search(pf._normalise(text)):
        assert pf._may_ask_recall(text.lower())


@settings(max_examples=300, deadline=None)
@given(st.from_regex(pf._REFUSAL, fullmatch=True).flatmap(
    lambda text: st.sampled_from([text, text.upper(), text.title(), text.capitalize()])))
def test_every_refusal_passes_its_first_letter_gate(text):
    if text and pf._REFUSAL.match(pf._normalise(text)):
        assert pf._may_refuse(text)


# The words hollow phrases are made of (their lookaheads keep Hypothesis from drawing them from the pattern).
_HOLLOW_WORDS = (
    "i im i'm id i'd ill i'll ive i've me my we we'll we're let's lets let tell show give same here oh well shall "
    "see agree guess know love like it that this you your so really happy glad sorry sure too not hope wish keep "
    "mind try check can could would will do did have was might may looking forward to hearing heard good things of "
    "about hang out talk chat be friends neither pleasure bad god goodness 'll 's"
).split()
_HOLLOW_TEXTS = st.lists(st.one_of(st.sampled_from(_HOLLOW_WORDS), st.text(max_size=3)), max_size=10).flatmap(
    lambda words: st.sampled_from([" ".join(words), ", ".join(words), "".join(words), "! ".join(words)]))


@pytest.mark.slow  # hundreds of generated examples; CI runs it with the other slow tests
@settings(max_examples=500, deadline=None)
@given(st.one_of(_HOLLOW_TEXTS, _cased(pf._HOLLOW_FIRST_PERSON, fullmatch=False)))
def test_hollow_phrases_are_found_only_after_their_first_words(text):
    lowered = pf._normalise(text)
    assert pf._hollow_free(lowered, pf._word_runs(lowered)) == pf._HOLLOW_FIRST_PERSON.sub(" ", lowered)


@pytest.mark.slow  # 300 generated well-wishes (3 s): CI runs it with the slow tests
@settings(max_examples=300, deadline=None)
@given(st.tuples(st.from_regex(pf._WELL_WISH, fullmatch=True), st.text(max_size=8)).map("".join))
def test_every_well_wish_starts_with_one_of_its_leads(text):
    lowered = pf._normalise(text)
    if pf._WELL_WISH.match(lowered.lstrip()):
        words = pf._word_runs(lowered)
        assert pf._well_wish_lead(words) in pf._WELL_WISH_LEADS


@pytest.mark.slow  # hundreds of generated examples; CI runs it with the other slow tests
@settings(max_examples=300, deadline=None)
@given(st.one_of(_cased(pf._VOCATIVE), st.text(max_size=20)))
def test_the_vocative_precheck_skips_only_texts_without_one(text):
    plain = pf._VOCATIVE.sub(" ", text).replace("\u2019", "'").replace("\u2018", "'").lower()
    assert pf._normalise(text) == plain


def _split_code_asking_every_line(text: str) -> tuple[str, bool]:
    """`_split_code` as it was, every line asked whether it is code: the plain path of its early stop."""
    had_code = False
    if "```" in text:
        text, count = pf._FENCE.subn("\n", text)
        had_code = count > 0
    lines = [line for line in text.split("\n") if line.strip()]
    if len(lines) >= 2:
        code = [line for line in lines if pf._is_code_line(line.strip())]
        if len(code) >= 2 and len(code) * 2 >= len(lines):
            return "\n".join(line for line in lines if line not in set(code)), True
    elif len(lines) == 1:
        line = lines[0]
        if pf._SHELL.match(line) or (len(line) >= 12 and pf._symbol_dense(line)) or pf._looks_like_json(line):
            return "", True
    return text, had_code


_LINES = st.sampled_from([
    "def f(x):", "    return x;", "ERROR boom", "$ ls -la", "I moved to Porto.", "we should talk", "{}", "",
    "   ", "```", "x = {a: [1, 2]};", "Traceback (most recent call last)", "ok", "I like tea and biscuits",
])


@settings(max_examples=400, deadline=None)
@given(st.lists(_LINES, max_size=12).map("\n".join))
def test_the_code_split_stops_asking_only_when_the_rest_cannot_make_code(text):
    assert pf._split_code(text) == _split_code_asking_every_line(text)
