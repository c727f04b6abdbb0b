"""The run record agrees with what happened: an exit 1 is not `ok`, an interrupted reprocess is `interrupted` like
a run, and a run whose process is gone is `died` as soon as anyone looks."""

from __future__ import annotations

import signal
import time

import duckdb
import orjson
from conftest import distill, new_session
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
