"""SIGTERM and SIGINT on a real `distill run`: stop at a safe point, record `interrupted`, one line, 143/130."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter

import duckdb
import pytest
from conftest import append, distill, ingested, message_line, new_session

from distiller.config import Settings

CHUNK_ENV = {"DISTILL_COMMIT_EVERY_BYTES": "16384"}


def _corpus(agents, sessions: int = 12, lines: int = 300) -> None:
    for s in range(sessions):
        path = new_session(agents, agent=f"agent{s % 3}")
        append(path, b"".join(message_line(f"session {s} says {i} " + "words " * (i % 40)) for i in range(lines)))


def _start(state_dir, *args: str) -> subprocess.Popen:
    env = {**os.environ, "DISTILL_STATE_DIR": str(state_dir), **CHUNK_ENV}
    return subprocess.Popen([sys.executable, "-m", "distiller", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for_lock(state_dir, proc: subprocess.Popen) -> None:
    """Until the run holds its lock (it writes its pid there), so the signal lands inside the run."""
    lock = Settings(state_dir=state_dir).lock_path
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        if lock.exists() and lock.read_text().strip() == str(proc.pid):
            return
        time.sleep(0.01)
    raise AssertionError("the run never took its lock")


def _wait_for_handlers(proc: subprocess.Popen) -> None:
    """Until the process catches SIGTERM (the kernel's SigCgt mask): distill's entry point has routed the signals
    and is importing the rest."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        with open(f"/proc/{proc.pid}/status") as f:
            caught = next(int(line.split()[1], 16) for line in f if line.startswith("SigCgt:"))
        if caught >> (signal.SIGTERM - 1) & 1:
            return
        time.sleep(0.001)
    if proc.poll() is None:
        raise AssertionError("distill never installed its signal handlers")


def _last_run(state_dir) -> tuple[str, str | None]:
    with duckdb.connect(str(Settings(state_dir=state_dir).db_path), read_only=True) as con:
        return con.execute("SELECT status, error FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()


@pytest.mark.slow  # three full runs of a 3,600-message corpus in 16 KB commits: ~45 s of CPU each
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_stops_a_run_at_a_safe_point(tmp_path, agents, signum, code):
    _corpus(agents)
    reference_state = tmp_path / "reference"
    distill("run", "--source", str(agents), state_dir=reference_state, env=CHUNK_ENV, check=True)
    reference = ingested(Settings(state_dir=reference_state))

    state = tmp_path / "state"
    proc = _start(state, "run", "--source", str(agents))
    _wait_for_lock(state, proc)
    time.sleep(0.3)
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == code, stderr
    assert stderr.strip().count("\n") == 0 and "interrupted by " + signum.name in stderr, stderr
    assert "Traceback" not in stderr and stdout == ""
    assert _last_run(state)[0] == "interrupted"

    distill("run", "--source", str(agents), state_dir=state, env=CHUNK_ENV, check=True)
    rows = ingested(Settings(state_dir=state))
    assert not [key for key, n in Counter(rows).items() if n > 1]
    assert rows == reference


@pytest.mark.parametrize("delay", [0.0, 0.03, 0.08])
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_while_starting_is_one_line(tmp_path, signum, code, delay):
    """A signal during the imports (before any command runs) is one line too, never a traceback: also when it
    lands inside an extension's initialisation (DuckDB's then raises ImportError)."""
    proc = _start(tmp_path / "state", "status")
    _wait_for_handlers(proc)  # the interpreter's own start-up (site, .pth files) is before any code of ours
    time.sleep(delay)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=60)
    if proc.returncode == 0:
        pytest.skip("the command finished before the signal landed")
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr and stderr.strip().count("\n") == 0, stderr
