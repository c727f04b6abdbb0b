"""Hypothesis state machine: any mix of appends (whole and partial lines), truncations, renames and runs, over
files whose first lines may tell them apart or not, emits every complete message exactly once."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from conftest import header, ingested, message_line
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from distiller import pipeline
from distiller.config import Settings


class TranscriptFiles(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="distill-prop-"))
        self.sessions = self.root / "agents" / "main" / "sessions"
        self.sessions.mkdir(parents=True)
        self.settings = Settings(state_dir=self.root / "state", commit_every_bytes=300)
        self.next_id = 0
        self.next_file = 0
        self.live: dict[Path, list[tuple[str, bytes]]] = {}  # complete (id, line) in file order
        self.partial: dict[Path, tuple[str, bytes, bytes]] = {}  # half-written line: id, line, unwritten rest
        self.tracked: set[Path] = set()  # files a run has seen (their archives are followed)
        self.archives: dict[Path, list[str]] = {}
        self.written: set[str] = set()

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def _line(self) -> tuple[str, bytes]:
        self.next_id += 1
        message_id = f"{self.next_id:08x}"
        self.written.add(message_id)
        return message_id, message_line(f"message number {self.next_id} " + "x" * (self.next_id % 7) * 20,
                                         message_id=message_id)

    @initialize()
    def first_file(self) -> None:
        self.create()

    @rule()
    def create(self) -> None:
        self.next_file += 1
        path = self.sessions / f"s{self.next_file}.jsonl"
        path.write_bytes(header())
        self.live[path] = []

    @rule(data=st.data(), kind=st.sampled_from(["blank", "no id", "copied"]))
    def create_ambiguous(self, data, kind) -> None:
        """A first line that cannot tell files apart: blank, a header without an id, or a live file's header."""
        if kind == "copied" and not self.live:
            return
        first = {"blank": b"\n", "no id": b'{"type":"session","version":3}\n'}.get(kind) or header_of(
            data.draw(st.sampled_from(sorted(self.live))))
        self.next_file += 1
        path = self.sessions / f"s{self.next_file}.jsonl"
        path.write_bytes(first)
        self.live[path] = []

    @precondition(lambda self: self.live)
    @rule(data=st.data(), count=st.integers(1, 3))
    def append_lines(self, data, count) -> None:
        path = data.draw(st.sampled_from(sorted(self.live)))
        lines = [self._line() for _ in range(count)]
        rest = b""
        if path in self.partial:
            message_id, line, rest = self.partial.pop(path)
            self.live[path].append((message_id, line))
        with open(path, "ab") as f:
            f.write(rest + b"".join(line for _, line in lines))
        self.live[path].extend(lines)

    @precondition(lambda self: any(p not in self.partial for p in self.live))
    @rule(data=st.data(), cut=st.floats(0.05, 0.95))
    def append_partial(self, data, cut) -> None:
        path = data.draw(st.sampled_from(sorted(p for p in self.live if p not in self.partial)))
        message_id, line = self._line()
        at = max(1, int(len(line) * cut))
        with open(path, "ab") as f:
            f.write(line[:at])
        self.partial[path] = (message_id, line, line[at:])

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def truncate(self, data) -> None:
        path = data.draw(st.sampled_from(sorted(self.live)))
        keep = data.draw(st.integers(0, len(self.live[path])))
        self.live[path] = self.live[path][:keep]
        self.partial.pop(path, None)
        path.write_bytes(header_of(path) + b"".join(line for _, line in self.live[path]))

    @precondition(lambda self: self.tracked & set(self.live))
    @rule(data=st.data())
    def rename_to_reset_archive(self, data) -> None:
        path = data.draw(st.sampled_from(sorted(self.tracked & set(self.live))))
        archive = path.with_name(f"{path.name}.reset.2026-03-0{len(self.archives) % 9 + 1}T00-00-00.000Z")
        if archive.exists():
            return
        os.rename(path, archive)
        self.partial.pop(path, None)
        self.archives[archive] = [message_id for message_id, _ in self.live.pop(path)]

    @rule()
    def run(self) -> None:
        pipeline.run_once(self.settings, [self.root / "agents"])
        required = {m for lines in self.live.values() for m, _ in lines}
        required |= {m for ids in self.archives.values() for m in ids}
        rows = [message_id for _, message_id in ingested(self.settings)]
        duplicates = [m for m, n in Counter(rows).items() if n > 1]
        assert not duplicates, f"emitted twice: {duplicates}"
        assert required <= set(rows), f"lost: {sorted(required - set(rows))}"
        assert set(rows) <= self.written
        self.tracked |= set(self.live)


def header_of(path: Path) -> bytes:
    with open(path, "rb") as f:
        return f.readline()


TranscriptFiles.TestCase.settings = settings(
    max_examples=40, stateful_step_count=20, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_any_file_history_emits_each_message_exactly_once = pytest.mark.slow(TranscriptFiles.TestCase)
