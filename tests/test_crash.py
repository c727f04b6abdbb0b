"""SIGKILL a real `distill run` at random moments: re-running converges to exactly the uninterrupted result."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
from agent_lines import TRANSCRIPTS
from conftest import append, distill, distill_process, ingested, message_line, new_session

from distiller.config import Settings

CHUNK_ENV = {"DISTILL_COMMIT_EVERY_BYTES": "16384"}


def _start(state_dir, agents) -> subprocess.Popen:
    env = {**os.environ, "DISTILL_STATE_DIR": str(state_dir), **CHUNK_ENV}
    return subprocess.Popen([sys.executable, "-m", "distiller", "-q", "run", "--source", str(agents)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.mark.slow
def test_sigkill_at_random_moments_converges(tmp_path, agents):
    for s in range(12):
        path = new_session(agents, agent=f"agent{s % 3}")
        append(path, b"".join(message_line(f"session {s} says {i} " + "words " * (i % 40)) for i in range(250)))

    reference_state = tmp_path / "reference"
    started = time.monotonic()  # a real process, as the killed ones are: its time spans the kill moments
    distill_process("run", "--source", str(agents), state_dir=reference_state, env=CHUNK_ENV, check=True)
    full_run = time.monotonic() - started
    reference = ingested(Settings(state_dir=reference_state))
    assert len(reference) == 12 * 250

    rng = random.Random(20261129)
    killed_mid_run = 0
    for trial in range(10):
        state = tmp_path / f"trial{trial}"
        for _ in range(rng.randint(1, 3)):  # sometimes kill the recovery run too
            proc = _start(state, agents)
            time.sleep(rng.uniform(0.0, full_run))
            proc.send_signal(signal.SIGKILL)
            killed_mid_run += proc.wait() == -signal.SIGKILL
        distill("run", "--source", str(agents), state_dir=state, env=CHUNK_ENV, check=True)
        rows = ingested(Settings(state_dir=state))
        assert not [key for key, n in Counter(rows).items() if n > 1], f"trial {trial}: duplicates"
        assert rows == reference, f"trial {trial}: {len(rows)} rows vs {len(reference)}"
        status = distill("--json", "status", state_dir=state, check=True)
        assert '"bytes_behind":0' in status.stdout
    assert killed_mid_run >= 5, "too few kills landed while a run was still working"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TRANSCRIPTS))
def test_sigkill_converges_for_every_format(tmp_path, name):
    """The same for Claude Code, Codex and Gemini CLI transcripts: killed runs, then one more, give the ledger of
    an uninterrupted run, nothing twice, nothing behind."""
    tree = tmp_path / "tree"
    for s in range(8):
        sub, filename, content = TRANSCRIPTS[name](40, f"{s:08d}-0000-4000-8000-000000000001")
        directory = tree / sub
        directory.mkdir(parents=True, exist_ok=True)
        (directory / filename).write_bytes(content)
    reference_state = tmp_path / "reference"
    started = time.monotonic()
    distill_process("run", "--source", str(tree), state_dir=reference_state, env=CHUNK_ENV, check=True)
    full_run = time.monotonic() - started
    reference = ingested(Settings(state_dir=reference_state))
    assert len(reference) == 8 * 40 * 2

    rng = random.Random(20261203)
    for trial in range(4):
        state = tmp_path / f"trial{trial}"
        for _ in range(rng.randint(1, 2)):
            proc = _start(state, tree)
            time.sleep(rng.uniform(0.0, full_run))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        distill("run", "--source", str(tree), state_dir=state, env=CHUNK_ENV, check=True)
        rows = ingested(Settings(state_dir=state))
        assert not [key for key, n in Counter(rows).items() if n > 1], f"trial {trial}: duplicates"
        assert rows == reference, f"trial {trial}: {len(rows)} rows vs {len(reference)}"
        status = distill("--json", "status", "--source", str(tree), state_dir=state, check=True)
        assert '"bytes_behind":0' in status.stdout
