"""The run record agrees with what happened: an exit 1 is not `ok`, an interrupted reprocess is `interrupted` like
a run, and a run whose process is gone is `died` as soon as anyone looks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import duckdb
import orjson
from conftest import append, distill, message_line, new_session
from test_stop import _corpus, _last_run, _start, _wait_for_lock


def _json(*args: str, state_dir=None) -> dict | list:
    result = distill("--json", *args, state_dir=state_dir)
    assert result.returncode == 0, result.stderr
    return orjson.loads(result.stdout)


def test_a_run_that_exits_1_for_a_missing_source_is_not_recorded_ok(tmp_path, agents):
    new_session(agents, n_messages=2)
    result = distill("--json", "run", "--extractor", "rules", "--source", str(agents), "--source",
                     str(tmp_path / "nope"))
    assert result.returncode == 1
    (last,) = _json("runs", "--limit", "1")["runs"]
    assert last["status"] == "failed" and "nope" in last["error"]
    assert _json("status")["last_run"]["status"] == "failed"


# A real `distill` process SIGKILLed right after its N-th commit returned (before its batch file is dropped, the
# first thing after every commit transaction): the kill lands between the work and anything a second transaction
# would record after it.
_KILLED_AFTER_COMMIT = """
import os, signal, sys
from distiller.batches import files
from distiller.__main__ import main
remove, left = files.remove, int(os.environ["KILL_AFTER_COMMITS"])
def kill_after(*args, **kwargs):
    global left
    remove(*args, **kwargs)
    left -= 1
    if left == 0:
        os.kill(os.getpid(), signal.SIGKILL)
files.remove = kill_after
sys.argv[0] = "distill"
main()
"""


def test_a_run_killed_after_any_commit_is_never_recorded_ok_when_it_would_exit_1(tmp_path, agents):
    """A run of a few commits (16 KB chunks) that will exit 1 (a source not found), killed after each commit in
    turn: after any but the final one it is `died`; after the final one `failed`, as it would have ended; never
    `ok`. Until the kill comes after the last commit, and the run ends by itself."""
    for s in range(2):
        append(new_session(agents), b"".join(message_line(f"session {s} says {i} " + "words " * 30)
                                             for i in range(20)))
    seen = []
    for commits in range(1, 10):
        state = tmp_path / f"state{commits}"
        env = {**os.environ, "DISTILL_STATE_DIR": str(state), "DISTILL_COMMIT_EVERY_BYTES": "16384",
               "KILL_AFTER_COMMITS": str(commits)}
        proc = subprocess.run([sys.executable, "-c", _KILLED_AFTER_COMMIT, "-q", "run", "--extractor", "rules",
                               "--source", str(agents), "--source", str(tmp_path / "nope")], env=env,
                              capture_output=True, text=True, timeout=120)
        (last,) = _json("runs", "--limit", "1", state_dir=state)["runs"]
        seen.append(last["status"])
        if proc.returncode != -signal.SIGKILL:
            assert proc.returncode == 1, proc.stderr  # no kill: the commits are done
            break
        assert last["counters"]["batches"] == commits
        assert last["status"] in ("died", "failed")
    assert len(seen) >= 3 and seen[-1] == "failed"
    assert seen[:-2] == ["died"] * (len(seen) - 2) and seen[-2] == "failed"  # killed after the final commit


def test_a_sigkilled_run_is_died_at_once_for_status_and_runs_and_for_the_next_run(tmp_path, agents):
    _corpus(agents)
    state = tmp_path / "state"
    proc = _start(state, "run", "--extractor", "rules", "--source", str(agents))
    _wait_for_lock(state, proc)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (state / "distill.duckdb").exists():
        time.sleep(0.01)
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert _last_run(state)[0] == "running"  # what the killed process left in the database
    assert _json("status", state_dir=state)["last_run"]["status"] == "died"
    assert _json("runs", state_dir=state)["runs"][0]["status"] == "died"
    distill("run", "--extractor", "rules", "--source", str(agents), state_dir=state, check=True)
    with duckdb.connect(str(state / "distill.duckdb"), read_only=True) as con:
        assert con.execute("SELECT status FROM runs ORDER BY started_at").fetchall() == [("died",), ("ok",)]


def test_an_interrupted_reprocess_is_recorded_interrupted_like_a_run(tmp_path, agents):
    _corpus(agents)
    state = tmp_path / "state"
    distill("run", "--extractor", "rules", "--source", str(agents), state_dir=state, check=True)
    proc = _start(state, "reprocess", "--yes", "--extractor", "rules", "--source", str(agents))
    _wait_for_lock(state, proc)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert _last_run(state)[0] == "interrupted"
