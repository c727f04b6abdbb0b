"""The format seam: a transcript format is a package and one registration, nothing else.

A toy format, defined here and nowhere in distiller, is registered and a file of it is distilled end to end by the
real pipeline (reader, tracker, screening, rules extractor, store), which know it only through the registry."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import duckdb
import orjson
import pytest

from distiller import sources
from distiller.pipeline import run as pipeline
from distiller.records import Message
from distiller.sources import sniff
from distiller.sources.base import Discovery, Format, Header, SourceFile
from distiller.sources.cleaning import BLOCKS, Cleaning, Needles, Rule

TOY = "toy"


def _toy_discover(roots: Iterable[Path], excluded: frozenset[str]) -> Discovery:
    """Every `*.toy` file under a root; the agent is the directory holding it."""
    found = Discovery()
    for root in roots:
        root = Path(root)
        if not root.exists():
            found.missing.append(str(root))
            continue
        paths = [root] if root.is_file() else sorted(root.rglob("*.toy"))
        for path in paths:
            if path.name.endswith(".toy") and path.parent.name not in excluded:
                found.live.append(SourceFile(str(path), path.parent.name, TOY))
    return found


def _toy_header(line: bytes | None) -> Header:
    entry = orjson.loads(line) if line else None
    conversation = entry.get("conversation") if isinstance(entry, dict) else None
    return Header(conversation if isinstance(conversation, str) else None, isinstance(conversation, str))


def _toy_message(entry: object, *, agent: str, session_id: str, file: str, byte_start: int, byte_end: int
                 ) -> Message | str:
    if not isinstance(entry, dict) or "conversation" in entry:
        return "non_message"
    role = {"me": "user", "bot": "assistant"}.get(entry.get("speaker"))
    if role is None:
        return "other_role"
    return Message(TOY, agent, session_id, entry["n"], None, entry.get("at"), role, entry["words"], file,
                   byte_start, byte_end)


def _toy_skip_line(data: bytes) -> str | None:
    return "toy_noise" if data.startswith(b'{"noise"') else None


def _strip_signature(text: str, events: list[str]) -> str:
    """The toy app appends "~~sent from my toyphone~~" to what the user types."""
    if "~~sent from my toyphone~~" in text:
        events.append("toy:signature")
        text = text.replace("~~sent from my toyphone~~", "")
    return text


TOY_FORMAT = Format(
    name=TOY,
    label="Toy",
    recognises=lambda entry: "conversation" in entry,
    claims=lambda name: name.endswith(".toy"),
    discover=_toy_discover,
    default_source=lambda: Path("/nonexistent/toy"),
    header=_toy_header,
    to_message=_toy_message,
    skip_line=_toy_skip_line,
    user_line_marker=b'"me"',
    session_skip=lambda key: None,
    cleaning=Cleaning(rewrites=(BLOCKS, Rule("signature", Needles(anywhere=("~~",)), _strip_signature))),
)


@pytest.fixture
def toy_registered():
    sources.register(TOY_FORMAT)
    yield TOY_FORMAT
    sources.unregister(TOY)


def _toy_file(directory: Path) -> Path:
    directory.mkdir(parents=True)
    path = directory / "chat-1.toy"
    lines = [
        {"conversation": "toy-session-1"},
        {"n": "t1", "speaker": "me", "at": "2026-03-01T10:00:00Z", "words": "I moved to Lisbon in 2021 with my wife."},
        {"noise": "a tool's output nobody said"},
        {"n": "t2", "speaker": "bot", "at": "2026-03-01T10:00:05Z", "words": "Lisbon is lovely in spring."},
        {"n": "t3", "speaker": "me", "at": "2026-03-01T10:01:00Z", "words": "My favourite drink is green tea. ~~sent from my toyphone~~"},
    ]
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def test_a_registered_toy_format_is_distilled_end_to_end_without_touching_the_pipeline(settings, tmp_path,
                                                                                      toy_registered):
    root = tmp_path / "toys"
    path = _toy_file(root / "alice")

    tally = pipeline.run_once(settings, [root]).tally

    assert (tally.files, tally.messages, tally.lines) == (1, 3, 5)
    assert tally.skipped["toy_noise"] == 1
    assert tally.cleaned["toy:signature"] == 1  # the format's own rule, applied by screening
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        ledger = con.execute("SELECT session_id, message_id, decision FROM ingested ORDER BY 2").fetchall()
        evidence = con.execute("SELECT DISTINCT file, agent FROM evidence").fetchall()
        beliefs = con.execute("SELECT count(*) FROM beliefs").fetchone()[0]
        quotes = [q for (q,) in con.execute("SELECT quote FROM evidence").fetchall()]
    assert [(s, m) for s, m, _ in ledger] == [("toy-session-1", "t1"), ("toy-session-1", "t2"), ("toy-session-1", "t3")]
    assert beliefs >= 1
    assert not any("toyphone" in quote for quote in quotes)
    assert {agent for _, agent in evidence} == {"alice"}
    assert {os.path.basename(file) for file, _ in evidence} == {path.name}
    # The cursor moved to the end: a second run reads nothing.
    again = pipeline.run_once(settings, [root]).tally
    assert (again.files, again.messages) == (0, 0)


def test_a_toy_file_given_as_the_source_is_read_by_its_own_format_only(settings, tmp_path, toy_registered):
    path = _toy_file(tmp_path / "bob")
    assert sniff.sniff(path) == TOY
    tally = pipeline.run_once(settings, [path]).tally
    assert (tally.files, tally.messages) == (1, 3)
    assert "unsupported_format" not in tally.files_skipped


def test_without_its_registration_the_toy_file_is_named_not_misread(settings, tmp_path):
    path = _toy_file(tmp_path / "carol")
    tally = pipeline.run_once(settings, [path]).tally
    assert tally.messages == 0
    assert tally.files_skipped["unsupported_format"] == 1


def test_a_format_name_is_registered_once():
    with pytest.raises(ValueError):
        sources.register(sources.default())


@pytest.fixture
def toy_without_blocks():
    """The toy format with a cleaning of its own that says nothing of injected blocks."""
    fmt = replace(TOY_FORMAT, cleaning=Cleaning(rewrites=(Rule("signature", Needles(anywhere=("~~",)),
                                                               _strip_signature),)))
    sources.register(fmt)
    yield fmt
    sources.unregister(TOY)


@pytest.mark.parametrize("opening,closing", [("<bee-recall>", "</bee-recall>"), ("＜ＢＥＥ－ＲＥＣＡＬＬ＞", "＜／ＢＥＥ－ＲＥＣＡＬＬ＞"),
                                             ("<relevant-memories>", "</relevant-memories>"),
                                             ("<bее-recall>", "</bее-recall>")])
def test_a_recall_echo_in_any_format_is_stripped(settings, tmp_path, toy_without_blocks, opening, closing):
    directory = tmp_path / "toys" / "dana"
    directory.mkdir(parents=True)
    lines = [
        {"conversation": "toy-session-echo"},
        {"n": "e1", "speaker": "me", "at": "2026-03-01T10:00:00Z",
         "words": f"{opening}\n- [fact, 0.90] The user lives in Reykjavik.\n- [preference] The user loves opera.\n"
                  f"{closing}\nI moved to Lisbon in 2021 with my wife."},
    ]
    (directory / "chat-echo.toy").write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))

    tally = pipeline.run_once(settings, [tmp_path / "toys"]).tally

    assert tally.messages == 1
    assert sum(n for event, n in tally.cleaned.items() if event.startswith("stripped:")) == 1
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        stored = " ".join(s for (s,) in con.execute("SELECT statement FROM beliefs").fetchall())
        quotes = " ".join(q for (q,) in con.execute("SELECT quote FROM evidence").fetchall())
    assert "Lisbon" in stored
    for echoed in ("Reykjavik", "opera"):
        assert echoed not in stored and echoed not in quotes


def test_a_file_is_read_by_the_format_its_first_line_names_whatever_dir_it_is_in(settings, tmp_path):
    """An OpenClaw v1 header (no version, an id) is OpenClaw's; a JSONL no known assistant wrote is named and not
    read, even inside an OpenClaw sessions dir."""
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    v1 = {"type": "session", "id": "v1-session", "timestamp": "2026-01-05T10:00:00.000Z", "cwd": "/w"}
    turn = {"type": "message", "id": "m1", "parentId": None, "timestamp": "2026-01-05T10:00:01.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": "I moved to Lisbon in 2021."}]}}
    (sessions / "v1-session.jsonl").write_bytes(orjson.dumps(v1) + b"\n" + orjson.dumps(turn) + b"\n")
    (sessions / "app-log.jsonl").write_bytes(b'{"level": "info", "msg": "started"}\n')
    tally = pipeline.run_once(settings, [tmp_path / "agents"]).tally
    assert (tally.files, tally.messages) == (1, 1)
    assert tally.files_skipped["unsupported_format"] == 1 and "unknown_type" not in tally.skipped
