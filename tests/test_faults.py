"""Faults of the machine around a run: odd files, bad directories, full disks, broken state, other users."""

from __future__ import annotations

import os
import subprocess

import orjson
import pytest
from conftest import append, distill, ingested_ids, message_line, new_session

from distiller.config import Settings


def _run_json(state, agents, timeout: float = 60) -> dict:
    result = distill("--json", "run", "--source", str(agents), state_dir=state, timeout=timeout)
    assert result.returncode == 0, result.stderr
    return orjson.loads(result.stdout)


def test_a_fifo_at_a_tracked_path_or_named_like_its_archive_is_never_opened(tmp_path, agents):
    state = tmp_path / "state"
    path = new_session(agents)
    append(path, message_line("first", message_id="00000001"))
    other = new_session(agents)
    append(other, message_line("second", message_id="00000002"))
    _run_json(state, agents)
    path.unlink()
    os.mkfifo(path)  # the tracked path now holds a FIFO
    os.mkfifo(other.with_name(other.name + ".reset.2026-03-04T09-12-33.120Z"))
    other.unlink()
    new = new_session(agents)
    append(new, message_line("third", message_id="00000003"))
    try:
        summary = _run_json(state, agents, timeout=30)  # blocked forever before
    except subprocess.TimeoutExpired:
        pytest.fail("run blocked on a FIFO")
    assert summary["files_skipped"]["not_regular"] == 2
    assert ingested_ids(Settings(state_dir=state)) == ["00000001", "00000002", "00000003"]
