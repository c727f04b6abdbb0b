"""The same store however the history arrives: the same transcripts read in any sequence of runs (appends cut
mid-line, renames to archives, rewrites, any chunk size) give the same beliefs, evidence and statuses as one run
over the finished files."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from distiller import pipeline
from distiller.config import Settings
from distiller.extract.base import Extraction, ExtractRequest
from distiller.extract.rules import RulesExtractor

# Sentences the rules extractor turns into beliefs: slots that supersede each other, near duplicates, facts that
# fade within weeks ("I have …", "on call": high decay), identities that never fade, and noise.
SENTENCES = (
    "My name is Ann Lee.",
    "My name is Bob Stone.",
    "I live in Lisbon.",
    "I live in Porto.",
    "I have a dog named Rex.",
    "I have a big dog named Rex.",
    "I have two cats at home.",
    "I'm on call this weekend.",
    "I'm on call every weekend.",
    "I prefer green tea in the morning.",
    "I prefer green tea in the early morning.",
    "I like hiking in the mountains.",
    "I don't like hiking in the mountains.",
    "My goal is to run a marathon in spring.",
    "ok thanks",
)
GAPS_HOURS = (0, 1, 20, 24 * 30, 24 * 400)
BASE = datetime(2024, 1, 1, tzinfo=UTC)


def _line(entry: dict) -> bytes:
    return orjson.dumps(entry) + b"\n"


@st.composite
def transcripts(draw) -> list[tuple[str, str, bytes]]:
    """(agent, file name, content) of a few sessions whose messages interleave in time."""
    files = []
    for number in range(draw(st.integers(1, 3))):
        agent = draw(st.sampled_from(("main", "work")))
        session = str(uuid.UUID(int=draw(st.integers(0, 2**32)) * 8 + number))
        at = BASE + timedelta(hours=draw(st.sampled_from(GAPS_HOURS)))
        lines = [_line({"type": "session", "version": 3, "id": session, "timestamp": at.isoformat()})]
        for index in range(draw(st.integers(1, 6))):
            at += timedelta(hours=draw(st.sampled_from(GAPS_HOURS)), minutes=1)
            text = draw(st.sampled_from(SENTENCES))
            lines.append(_line({"type": "message", "id": f"m{number}x{index}", "parentId": None,
                                "timestamp": at.isoformat().replace("+00:00", "Z"),
                                "message": {"role": "user", "content": [{"type": "text", "text": text}]}}))
        files.append((agent, f"{session}.jsonl", b"".join(lines)))
    return files


@st.composite
def histories(draw, n_files: int) -> list[tuple[list[float], list[str], int]]:
    """Runs: how far each file has been written (a fraction of its bytes, cut anywhere), what happens to each file
    before the run (nothing, a rewrite to a new inode, or a rename to its archive once complete), the chunk size."""
    steps = draw(st.lists(st.tuples(
        st.lists(st.floats(0, 1), min_size=n_files, max_size=n_files),
        st.lists(st.sampled_from(("", "", "rewrite", "rename")), min_size=n_files, max_size=n_files),
        st.sampled_from((1, 300, 2000, 4 * 1024 * 1024)),
    ), min_size=1, max_size=5))
    return steps


def _store(state: Path) -> tuple[dict, set]:
    """Beliefs by the evidence they rest on (ids depend on which wording came first), and the evidence."""
    with duckdb.connect(str(state / "distill.duckdb"), read_only=True) as con:
        beliefs = con.execute(
            """
            SELECT list(e.session_id || '/' || e.message_id ORDER BY e.session_id, e.message_id), b.status,
                   b.evidence_count, b.sessions, b.first_seen, b.last_seen, round(b.confidence, 9)
            FROM beliefs b JOIN evidence e USING (belief_id) GROUP BY ALL
            """
        ).fetchall()
        evidence = set(con.execute("SELECT session_id, message_id, quote FROM evidence").fetchall())
    return {tuple(row[0]): row[1:] for row in beliefs}, evidence


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _replace(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


class PerMessageRules(RulesExtractor):
    """The offline rules, one message at a time: what a message yields must not depend on which request it was
    packed into. (The rules extractor merges a statement repeated within one request into one more confident
    candidate, which is batching-dependent by design, as any model's reading of its context is; this property
    is about the pipeline and the store, so extraction is taken per message.)"""

    def extract(self, request: ExtractRequest, *, max_tokens: int | None = None,
                on_overload: object = None) -> Extraction:
        candidates = [c for item in request.items
                      for c in RulesExtractor.extract(self, replace(request, items=(item,))).candidates]
        return Extraction(request.request_id, tuple(candidates), ())


def _run(root: Path, state: Path, chunk: int) -> None:
    pipeline.run_once(Settings(state_dir=state, extractor="rules", commit_every_bytes=chunk), [root / "agents"],
                      extractor=PerMessageRules())


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), files=transcripts())
def test_any_sequence_of_runs_builds_the_store_one_run_builds(data, files) -> None:
    root = Path(tempfile.mkdtemp(prefix="distill-history-"))
    try:
        for agent, name, content in files:
            _write(root / "once" / "agents" / agent / "sessions" / name, content)
        _run(root / "once", root / "once-state", 4 * 1024 * 1024)

        (root / "split" / "agents").mkdir(parents=True)
        live = {name: root / "split" / "agents" / agent / "sessions" / name for agent, name, _ in files}
        written = dict.fromkeys(live, 0)
        seen: set[str] = set()
        for fractions, actions, chunk in data.draw(histories(len(files))):
            for (_agent, name, content), fraction, action in zip(files, fractions, actions, strict=True):
                path = live[name]
                grown = max(written[name], int(len(content) * fraction))
                if action == "rename" and name in seen and written[name] == len(content) and ".reset." not in path.name:
                    archive = path.with_name(f"{path.name}.reset.2026-03-01T00-00-00.000Z")
                    os.rename(path, archive)
                    live[name] = archive
                elif action == "rewrite" and written[name]:
                    _replace(path, content[:written[name]])
                if grown > written[name]:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    with open(path, "ab") as f:
                        f.write(content[written[name]:grown])
                    written[name] = grown
            _run(root / "split", root / "split-state", chunk)
            seen |= {name for _, name, content in files if written[name] > content.index(b"\n")}
        for _, name, content in files:
            if written[name] < len(content):
                live[name].parent.mkdir(parents=True, exist_ok=True)
                with open(live[name], "ab") as f:
                    f.write(content[written[name]:])
        _run(root / "split", root / "split-state", 4 * 1024 * 1024)

        once, split = _store(root / "once-state"), _store(root / "split-state")
        assert split[1] == once[1], "different evidence"
        assert split[0] == once[0], "different beliefs or statuses"
    finally:
        shutil.rmtree(root, ignore_errors=True)
