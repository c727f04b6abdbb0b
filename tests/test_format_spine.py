"""The spine's guarantees for every format: a transcript written in pieces (cut anywhere, mid-line and between
the lines of one Claude Code response included), renamed or rewritten in place between runs, is distilled exactly
once — the same ledger as one run over the final file, nothing twice."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from agent_lines import SPINE_SESSION, TRANSCRIPTS, cc_user, cx_meta, cx_turn, dumps, gm_header, gm_message
from conftest import ingested
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from distiller.config import Settings
from distiller.pipeline import run as pipeline


def _replace_in_place(path: Path) -> None:
    """The same bytes under a new inode (write a temp copy, rename it over): the file is read again from 0."""
    temp = path.with_name(path.name + ".tmp")
    shutil.copyfile(path, temp)
    os.replace(temp, path)


# Each example runs the pipeline up to six times (about 0.5 s): the quick set draws 2 sequences per format, the slow
# set (CI) 25.
_SPINE_SETTINGS = {"deadline": None,
                   "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]}


@pytest.mark.parametrize("name", sorted(TRANSCRIPTS))
@settings(max_examples=2, **_SPINE_SETTINGS)
@given(data=st.data())
def test_any_sequence_of_runs_reads_each_message_exactly_once(name, migrated_store, data):
    _reads_each_message_exactly_once(name, migrated_store, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TRANSCRIPTS))
@settings(max_examples=25, **_SPINE_SETTINGS)
@given(data=st.data())
def test_any_sequence_of_runs_reads_each_message_exactly_once_at_length(name, migrated_store, data):
    _reads_each_message_exactly_once(name, migrated_store, data)


def _reads_each_message_exactly_once(name, migrated_store, data) -> None:
    turns = data.draw(st.integers(1, 4))
    sub, filename, content = TRANSCRIPTS[name](turns)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(content) - 1), max_size=4))))
    root = Path(tempfile.mkdtemp(prefix="distill-spine-"))
    try:
        directory = root / "tree" / sub
        directory.mkdir(parents=True)
        path = directory / filename
        state = Settings(state_dir=root / "state", commit_every_bytes=data.draw(st.sampled_from([200, 1 << 22])))
        migrated_store(state.db_path)  # a new store, as a first run would make it
        written = 0
        for cut in [*cuts, len(content)]:
            with open(path, "ab") as f:
                f.write(content[written:cut])
            written = cut
            action = data.draw(st.sampled_from(["run", "run", "rename", "rewrite"]))
            if action == "rename":
                moved = path.with_name(path.name.replace(SPINE_SESSION[:8], SPINE_SESSION[:8] + "m", 1))
                os.rename(path, moved)
                path = moved
            elif action == "rewrite":
                _replace_in_place(path)
            pipeline.run_once(state, [root / "tree"])
        rows = [message_id for _, message_id in ingested(state)]
        assert not [m for m, n in Counter(rows).items() if n > 1], "emitted twice"

        once = Settings(state_dir=root / "once")
        migrated_store(once.db_path)
        pipeline.run_once(once, [root / "tree"])
        assert sorted(rows) == sorted(message_id for _, message_id in ingested(once))
        assert len(rows) == 2 * turns
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _one_user_turn(name: str, text: str) -> tuple[str, str, bytes]:
    if name == "claude-code":
        return "projects/-Users-alice-app", f"{SPINE_SESSION}.jsonl", dumps(cc_user(SPINE_SESSION, text))
    if name == "codex":
        return ("sessions/2026/04/29", f"rollout-2026-04-29T10-58-39-{SPINE_SESSION}.jsonl",
                dumps(cx_meta(SPINE_SESSION), *cx_turn(text, "ok")))
    return f"tmp/{'9f2c' * 16}/chats", "session-2026-10-02T10-00-5e55a0b1.jsonl", dumps(
        gm_header(SPINE_SESSION), gm_message("user", text, "u1"))


@pytest.mark.parametrize("name", sorted(TRANSCRIPTS))
def test_screening_is_the_same_whatever_the_format(name, tmp_path):
    """Injected memory and secrets are stripped from every format's messages, by the same rules."""
    key = "AKIA" + "Q3EGRJ5Z7XLPM2VN"
    text = (f"<bee-recall>\n- [fact] The user lives in Reykjavik.\n</bee-recall>\n"
            f"<relevant-memories>The user loves opera.</relevant-memories>\n"
            f"I moved to Lisbon in 2021 with my wife. My key is {key} for the deploy.")
    sub, filename, content = _one_user_turn(name, text)
    directory = tmp_path / "tree" / sub
    directory.mkdir(parents=True)
    (directory / filename).write_bytes(content)
    seen = []
    state = Settings(state_dir=tmp_path / "state")

    tally = pipeline.run_once(state, [tmp_path / "tree"], show=seen.append).tally

    user = [d for d in seen if d.message.role == "user"]
    assert len(user) == 1 and user[0].decision == "keep"
    assert "Lisbon" in user[0].text and key not in user[0].text and "[REDACTED:" in user[0].text
    assert "Reykjavik" not in user[0].text and "opera" not in user[0].text
    assert tally.cleaned["stripped:bee-recall"] == 1 and tally.cleaned["stripped:relevant-memories"] == 1
    assert sum(tally.redactions.values()) == 1


@pytest.mark.parametrize("name", sorted(TRANSCRIPTS))
def test_scan_workers_read_every_format_as_the_main_process_does(name, tmp_path):
    """The parallel scan (forked workers reading whole files, replayed in plan order) against the plain reading:
    the same decisions shown and the same ledger, responses held open at a file's end included."""
    for n in range(6):
        session = f"{n:08d}{SPINE_SESSION[8:]}"
        sub, filename, content = TRANSCRIPTS[name](n % 3 + 1, session)
        directory = tmp_path / "tree" / sub
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / filename
        path.write_bytes(content[: len(content) - (n % 2) * 150])  # every other file ends mid-way
    outcomes = []
    for workers in (0, 2):
        shown = []
        state = Settings(state_dir=tmp_path / f"state-{workers}", scan_workers=workers)
        tally = pipeline.run_once(state, [tmp_path / "tree"], show=shown.append).tally
        outcomes.append(([(d.item_id, d.decision, d.text) for d in shown], sorted(ingested(state)), tally.lines,
                         dict(tally.skipped)))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0]


_SCALARS = st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1) | st.floats(allow_nan=False) | st.text(
    max_size=12)
_KEYS = st.sampled_from(["type", "payload", "message", "content", "role", "id", "uuid", "sessionId", "text",
                         "stop_reason", "phase", "metadata", "source", "num_turns", "$rewindTo", "$set", "item",
                         "projectHash", "displayContent", "timestamp", "isMeta", "toolUseResult", "attachment"]) | st.text(
    max_size=6)
_JSON = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=6),
                     max_leaves=25)


@settings(max_examples=100, deadline=None)
@given(entries=st.lists(_JSON, min_size=1, max_size=6))
def test_hostile_lines_never_raise_in_any_format(entries):
    """Whatever JSON a line holds, every format answers a Message or a skip (and its other functions an answer):
    transcripts are input. (100 examples here, about 0.6 s; 1,000 in the slow set.)"""
    _never_raise(entries)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None)
@given(entries=st.lists(_JSON, min_size=1, max_size=6))
def test_hostile_lines_never_raise_in_any_format_at_length(entries):
    _never_raise(entries)


def _never_raise(entries) -> None:
    import orjson

    from distiller import sources

    lines = [(n * 100, orjson.dumps(entry)) for n, entry in enumerate(entries)]
    for fmt in sources.formats():
        for offset, data in lines:
            entry = orjson.loads(data)
            fmt.skip_line(data)
            fmt.header(data)
            fmt.entry_session_skip(entry)
            if isinstance(entry, dict):
                fmt.recognises(entry)
            if fmt.group is not None:
                fmt.group(entry)
            result = fmt.to_message(entry, agent="a", session_id="s", file="f", byte_start=offset,
                                    byte_end=offset + len(data))
            assert isinstance(result, str) or result.text.strip()
        if fmt.retracted is not None:
            assert set(fmt.retracted(iter(lines))) <= {offset for offset, _ in lines}
