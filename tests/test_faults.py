"""Faults of the machine around a run: odd files, bad directories, full disks, broken state, other users."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson
import pytest
from conftest import append, distill, distill_process, ingested_ids, message_line, new_session

from distiller.config import Settings
from distiller.errors import DistillError
from distiller.store.db import BLOCK_SIZE


def _run_json(state, agents, timeout: float | None = None) -> dict:
    """A run in this process; with a timeout, in a real process that is killed if it blocks."""
    args = ("--json", "run", "--source", str(agents))
    result = distill(*args, state_dir=state) if timeout is None else distill_process(*args, state_dir=state,
                                                                                    timeout=timeout)
    assert result.returncode == 0, result.stderr
    return orjson.loads(result.stdout)


@pytest.mark.slow  # a real process and its timeout; CI runs it with the other slow tests
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


def _kept_corpus(agents, sessions: int = 3, messages: int = 20) -> list[str]:
    ids = []
    for s in range(sessions):
        path = new_session(agents)
        for i in range(messages):
            ids.append(f"{s:04x}{i:04x}")
            append(path, message_line(f"I prefer tea over coffee, note {s}-{i}: " + "details " * 300,
                                      message_id=ids[-1]))
    return sorted(ids)


@contextlib.contextmanager
def _tmpfs(path, size: str):
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
                             capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (the short-write unit test in test_batch covers the write)")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=True)


def test_disk_full_fails_the_run_cleanly_and_every_command_keeps_working(tmp_path, agents):
    state = tmp_path / "state"
    ids = _kept_corpus(agents)
    with _tmpfs(state / "batches", "32k"):  # staged for an agent: an offline extractor writes no batch file
        result = distill("run", "--no-llm", "--source", str(agents), state_dir=state)
        assert result.returncode == 1, result.stderr
        assert "cannot write batch file" in result.stderr and "No space left on device" in result.stderr
        assert "internal error" not in result.stderr and result.stderr.count("\n") == 1, result.stderr
        assert list((state / "batches").iterdir()) == []  # no truncated file, no tmp left
        for command in (["status"], ["batches", "list"], ["beliefs", "list"], ["runs"]):
            assert distill(*command, state_dir=state).returncode == 0, command
    summary = _run_json(state, agents)
    assert ingested_ids(Settings(state_dir=state)) == ids and summary["messages"] == len(ids)


def test_a_truncated_batch_file_is_named_by_status_then_set_aside_and_its_messages_read_again(tmp_path, agents):
    state = tmp_path / "state"
    ids = _kept_corpus(agents, sessions=1, messages=3)
    staged = distill("--json", "run", "--no-llm", "--source", str(agents), state_dir=state)
    (path,) = [Path(p) for p in orjson.loads(staged.stdout)["staged"]]
    path.write_bytes(path.read_bytes()[:200])
    listed = distill("--json", "batches", "list", state_dir=state)
    assert listed.returncode == 0, listed.stderr
    assert [(b["status"], b["path"]) for b in orjson.loads(listed.stdout)["batches"]] == [("unreadable", str(path))]
    status = distill("status", state_dir=state)
    assert status.returncode == 0 and str(path) in status.stdout, status.stderr
    summary = _run_json(state, agents)
    assert summary["batches_set_aside"] == [path.name]
    assert ingested_ids(Settings(state_dir=state)) == ids
    assert path.with_name(path.name + ".unreadable").exists() and not path.exists()
    assert distill("status", state_dir=state).returncode == 0


def test_orphan_tmp_batch_files_are_removed_when_a_run_starts(tmp_path, agents):
    state = tmp_path / "state"
    new_session(agents, n_messages=2)
    orphan = state / "batches" / "0123456789ab-0001.json.tmp"
    orphan.parent.mkdir(parents=True)
    orphan.write_bytes(b'{"items": [{"text": "redacted but private"')
    _run_json(state, agents)
    assert not orphan.exists()


@pytest.mark.parametrize("command", ["discard", "retry"])
def test_batch_ids_from_the_command_line_are_checked_before_any_path_is_built(tmp_path, agents, command):
    state = tmp_path / "state"
    _kept_corpus(agents, sessions=1, messages=2)
    staged = orjson.loads(distill("--json", "run", "--no-llm", "--source", str(agents), state_dir=state).stdout)
    result = distill("batches", command, "../../x", state_dir=state)
    assert result.returncode == 2 and "not a batch id" in result.stderr, result.stderr
    assert all(Path(p).exists() for p in staged["staged"])
    beliefs = tmp_path / "beliefs.jsonl"
    beliefs.write_text("")
    result = distill("commit", "../../x", "--beliefs", str(beliefs), state_dir=state)
    assert result.returncode == 2, result.stderr


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.fixture
def world():
    """A directory every user can reach, for runs as an unprivileged user (root reads anything)."""
    root = Path(tempfile.mkdtemp(prefix="distill-faults-"))
    root.chmod(0o777)
    if os.geteuid() != 0:
        yield root, []
    elif subprocess.run([*NOBODY, sys.executable, "-c", "import distiller.cli"], cwd=root).returncode != 0:
        pytest.skip("the interpreter is not reachable as an unprivileged user here")
    else:
        yield root, NOBODY
    shutil.rmtree(root, ignore_errors=True)


def _as_user(prefix, root, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*prefix, sys.executable, "-m", "distiller", *args], capture_output=True, text=True,
                          cwd=root, env={**os.environ, "HOME": str(root)}, timeout=120)


def _open_to_all(root: Path) -> None:
    for p in [root, *root.rglob("*")]:
        if not p.is_symlink():
            p.chmod(0o777 if p.is_dir() else 0o666)


def test_bad_directories_are_skipped_with_a_reason_and_everything_else_is_read(world):
    root, prefix = world
    agents = root / "agents"
    new_session(agents, agent="good", n_messages=2)
    new_session(agents, agent="locked", n_messages=1)
    (agents / "loop1").symlink_to("loop2")
    (agents / "loop2").symlink_to("loop1")
    secret = root / "secret"
    new_session(secret, agent="hidden", n_messages=1)
    (root / "linked").symlink_to(secret)
    _open_to_all(root)
    (agents / "locked").chmod(0o000)
    secret.chmod(0o700)
    result = _as_user(prefix, root, "--json", "--state-dir", str(root / "state"), "run", "--source", str(agents),
                      "--source", str(root / "linked"))
    assert result.returncode == 0, result.stderr
    summary = orjson.loads(result.stdout)
    assert summary["messages"] == 2
    assert summary["files_skipped"]["symlink_loop"] == 2
    assert summary["files_skipped"]["unreadable_dir"] == 2
    assert str(root / "linked") in result.stderr and "internal error" not in result.stderr


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_every_file_distill_creates_is_private_to_the_user(tmp_path, agents):
    _kept_corpus(agents, sessions=1, messages=3)
    state = tmp_path / "fresh" / "state"
    env = {**os.environ, "DISTILL_STATE_DIR": str(state)}
    run = subprocess.run([sys.executable, "-m", "distiller", "--json", "run", "--no-llm", "--source", str(agents)],
                         capture_output=True, text=True, env=env, preexec_fn=lambda: os.umask(0o022), timeout=60)
    assert run.returncode == 0, run.stderr
    (staged,) = orjson.loads(run.stdout)["staged"]
    assert _mode(state) == 0o700 and _mode(state / "batches") == 0o700
    assert _mode(state / "distill.duckdb") == 0o600 and _mode(Path(staged)) == 0o600
    assert _mode(Settings(state_dir=state).lock_path) == 0o600
    shared = tmp_path / "shared.jsonl"
    shared.write_text("old")
    shared.chmod(0o644)
    for args, mode in ((["-o", str(shared)], 0o600), (["-o", str(tmp_path / "group.csv"), "--format", "csv",
                                                       "--mode", "640"], 0o640)):
        result = subprocess.run([sys.executable, "-m", "distiller", "beliefs", "export", *args], env=env,
                                capture_output=True, text=True, preexec_fn=lambda: os.umask(0o022), timeout=60)
        assert result.returncode == 0, result.stderr
        assert _mode(Path(args[1])) == mode, args


def test_the_database_wal_is_private_even_under_a_permissive_umask(tmp_path):
    from distiller.store.db import connect

    db = tmp_path / "state" / "distill.duckdb"
    old = os.umask(0o022)
    try:
        with connect(db) as con:
            con.execute("CREATE TABLE probe (a INTEGER)")
            con.execute("INSERT INTO probe VALUES (1)")
            wal = db.with_name(db.name + ".wal")
            assert wal.exists() and _mode(wal) == 0o600
        db.chmod(0o644)  # left readable by an older version: made private on the next write open
        with connect(db):
            pass
        assert _mode(db) == 0o600
    finally:
        os.umask(old)


def test_learned_statements_reach_stdout_only_when_asked(tmp_path, agents):
    path = new_session(agents)
    append(path, message_line("I prefer green tea over coffee every morning"))
    quiet = distill("run", "--source", str(agents), state_dir=tmp_path / "a", check=True)
    assert "beliefs: inserted" in quiet.stdout and "green tea" not in quiet.stdout + quiet.stderr
    for flags in (["-v", "run"], ["run", "--show-beliefs"]):
        shown = distill(*flags, "--source", str(agents), state_dir=tmp_path / "-".join(flags), check=True)
        assert "green tea" in shown.stdout, flags


SAMPLE = Path(__file__).resolve().parent.parent / "distiller" / "sample" / "agents"
COMMANDS = (["run", "--source", str(SAMPLE)], ["status"], ["beliefs", "list"], ["beliefs", "export"], ["runs"],
            ["batches", "list"])


def _one_clear_line(result: subprocess.CompletedProcess, *words: str) -> None:
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert result.stderr.count("\n") == 1 and "internal error" not in result.stderr, result.stderr
    assert all(word in result.stderr for word in words), result.stderr


def test_a_damaged_database_is_one_clear_line_in_every_command(tmp_path):
    reference = tmp_path / "reference"
    distill("run", "--source", str(SAMPLE), state_dir=reference, check=True)
    db = Settings(state_dir=reference).db_path
    damaged = 0
    for block in (None, 1, 3, 9):  # None: the file is truncated; else one data block is overwritten
        state = tmp_path / f"damaged-{block}"
        shutil.copytree(reference, state)
        path = Settings(state_dir=state).db_path
        if block is None:
            os.truncate(path, db.stat().st_size // 3)
        else:
            with open(path, "r+b") as f:
                f.seek(3 * 4096 + block * BLOCK_SIZE + 100)  # past the file's three 4 kB headers
                f.write(bytes(range(256)) * 8)
        for command in COMMANDS:
            result = distill(*command, state_dir=state)
            if result.returncode != 0 or (block is None and command[0] in ("run", "status", "runs")):
                _one_clear_line(result, str(path), "is damaged", "restore a backup")
                damaged += 1
    assert damaged > len(COMMANDS)


def test_a_read_only_state_dir_is_one_clear_line_and_reading_commands_still_work(tmp_path):
    state = tmp_path / "state"
    with _tmpfs(state, "8m"):
        distill("run", "--source", str(SAMPLE), state_dir=state, check=True)
        subprocess.run(["mount", "-o", "remount,ro", str(state)], check=True)
        for command in (["run", "--source", str(SAMPLE)], ["init"]):
            _one_clear_line(distill(*command, state_dir=state), str(state), "Read-only file system",
                            "choose another state dir")
        for command in COMMANDS[1:]:
            assert distill(*command, state_dir=state).returncode == 0, command


def test_a_state_dir_of_another_user_is_one_clear_line(world):
    root, prefix = world
    if not prefix:
        pytest.skip("needs root to make a state dir another user cannot write")
    state = root / "state"
    state.mkdir(mode=0o755)
    result = _as_user(prefix, root, "--state-dir", str(state), "run", "--source", str(SAMPLE))
    _one_clear_line(result, str(state), "Permission denied", "make it writable by you")
    result = _as_user(prefix, root, "--state-dir", str(state / "sub"), "status")
    assert result.returncode in (0, 1) and "internal error" not in result.stderr, result.stderr


def test_a_full_disk_under_the_database_is_one_clear_line(tmp_path):
    from distiller.store.db import connect, transaction

    state = tmp_path / "state"
    with _tmpfs(state, "6m"):
        db = Settings(state_dir=state).db_path
        with connect(db):
            pass
        free = os.statvfs(state)
        (state / "filler").write_bytes(b"\0" * (free.f_bavail * free.f_frsize - 1_500_000))
        with (pytest.raises(DistillError, match="No space left on device; free space on that file system"),
              connect(db) as con, transaction(con)):
            con.execute("CREATE TABLE big AS SELECT md5(i::VARCHAR) || repeat('x', 200) AS s FROM range(200000) t(i)")


def test_commit_and_discard_of_a_batch_file_that_does_not_parse(tmp_path, agents):
    state = tmp_path / "state"
    _kept_corpus(agents, sessions=1, messages=2)
    staged = orjson.loads(distill("--json", "run", "--no-llm", "--source", str(agents), state_dir=state).stdout)
    (path,) = [Path(p) for p in staged["staged"]]
    path.write_bytes(path.read_bytes()[:150])
    beliefs = tmp_path / "beliefs.jsonl"
    beliefs.write_text("")
    result = distill("commit", path.stem, "--beliefs", str(beliefs), state_dir=state)
    _one_clear_line(result, str(path), "does not parse")
    result = distill("--json", "batches", "discard", path.stem, state_dir=state)
    assert result.returncode == 0 and orjson.loads(result.stdout)["discarded"] == [path.stem], result.stderr
    assert not path.exists()
