"""Shared fixtures: every test gets its own state dir and OpenClaw home, and real transcript files on disk."""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import signal
import ssl
import subprocess
import sys
import time
import uuid
from pathlib import Path

import duckdb
import orjson
import pytest
from click.testing import CliRunner, Result
from fakeapi import fake_anthropic  # noqa: F401  (the fake Messages API fixture)
from fakeopenai import fake_openai  # noqa: F401  (the fake OpenAI-compatible server fixture)

from distiller import stop
from distiller.cli import cli
from distiller.config import Settings
from distiller.store.db import connect

_ids = itertools.count(1)


def _one_trusted_certificate() -> str | None:
    """One certificate file of the system's trust store, readable by every user, or None where there is none.

    Every extractor the suite builds makes a real SDK client, and httpx loads the whole trust store into a new TLS
    context for each one: about 20 ms of CPU (140 certificates here) for ~240 clients, 5 s of a 115 s run, though
    no test speaks TLS (the fake servers are plain HTTP on 127.0.0.1). httpx reads `SSL_CERT_FILE` first, so one
    certificate there makes that 0.5 ms; the client is otherwise built exactly as without it. It replaces a
    `SSL_CERT_FILE` of the host's (this one names its whole bundle) for the session only, as `isolated_env` keeps
    the host's other settings out: no test may depend on the machine's trust store."""
    capath = ssl.get_default_verify_paths().capath
    if not capath or not os.path.isdir(capath):
        return None
    for name in sorted(os.listdir(capath)):
        path = os.path.join(capath, name)
        if name.endswith(".pem") and os.path.isfile(path) and os.stat(path).st_mode & 0o004:
            return path
    return None


if _cert := _one_trusted_certificate():
    os.environ["SSL_CERT_FILE"] = _cert  # for the whole session and the processes it starts (see above)


_used_state_dirs: set[Path] = set()


@pytest.fixture(autouse=True)
def process_left_as_found(tmp_path):
    """The CLI runs in this process: what a test's commands change must not reach the next test. Set up before
    monkeypatch (`isolated_env` asks for it first), so it checks after monkeypatch undid the test's own changes."""
    logger = logging.getLogger("distiller")
    logging_before = (logger.handlers[:], logger.level, logger.propagate)
    before = _process_state()
    yield
    logger.handlers[:], logger.level, logger.propagate = logging_before  # the CLI points it at its own stderr
    used = sorted(_used_state_dirs | {tmp_path / "state"})
    _used_state_dirs.clear()
    for state_dir in used:
        assert_no_open_connection(state_dir / "distill.duckdb")
    assert _process_state() == before, "the test changed the process (cwd, umask, signals, stop flag, environment)"


def _process_state() -> tuple:
    umask = os.umask(0o077)
    os.umask(umask)
    handlers = tuple(signal.getsignal(signum) for signum in stop.SIGNALS)
    environ = {name: value for name, value in os.environ.items() if name != "PYTEST_CURRENT_TEST"}
    return os.getcwd(), umask, handlers, stop.requested(), environ


@pytest.fixture(autouse=True)
def isolated_env(process_left_as_found, tmp_path, monkeypatch):
    monkeypatch.setenv("DISTILL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(tmp_path / "openclaw"))
    # every other assistant's default tree too: a tree of this machine's own must never be read by a test
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "gemini-home"))
    for name in list(os.environ):
        if (name.startswith("DISTILL_") and name != "DISTILL_STATE_DIR") or name.startswith(("ANTHROPIC_", "OPENAI_")):
            monkeypatch.delenv(name)


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings(state_dir=tmp_path / "state")


@pytest.fixture
def agents(tmp_path) -> Path:
    root = tmp_path / "openclaw" / "agents"
    root.mkdir(parents=True)
    return root


@pytest.fixture(scope="session")
def migrated_store(tmp_path_factory):
    """A new database as `connect` creates it (migrated), made once per session; `migrated_store(path)` puts a copy
    of it at `path` (about 1 ms, where creating and migrating one costs 100-250 ms here): for property tests that
    need a fresh store per example, where the store's creation is not what they test."""
    template = tmp_path_factory.mktemp("migrated") / "distill.duckdb"
    with connect(template):
        pass

    def copy(path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        shutil.copyfile(template, path)
        os.chmod(path, 0o600)
        return path

    return copy


FACT = "I'm allergic to peanuts and I live in Lisbon"


@pytest.fixture
def api(fake_anthropic):  # noqa: F811  (pytest passes the imported fixture by its name)
    """The environment that points the real SDK at the fake Messages API."""
    return {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake_anthropic.base_url}


@pytest.fixture
def transcript(agents):
    """One session: an assistant question, a fact of the user's, and a thank-you."""
    path = new_session(agents)
    append(path, message_line("Where do you live these days?", role="assistant", message_id="a0000001"))
    append(path, message_line(FACT, message_id="u0000001"))
    append(path, message_line("thanks!", message_id="u0000002"))
    return path


def header(session_id: str | None = None) -> bytes:
    return orjson.dumps(
        {"type": "session", "version": 3, "id": session_id or str(uuid.uuid4()),
         "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/home/u"}
    ) + b"\n"


def message_line(text: str, role: str = "user", message_id: str | None = None, **extra) -> bytes:
    message = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1772359200000}
    message.update(extra)
    entry = {"type": "message", "id": message_id or f"{next(_ids):08x}", "parentId": None,
             "timestamp": "2026-03-01T10:00:01.000Z", "message": message}
    return orjson.dumps(entry) + b"\n"


def new_session(agents_dir: Path, agent: str = "main", n_messages: int = 0, name: str | None = None) -> Path:
    sessions = agents_dir / agent / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    session_id = str(uuid.uuid4())
    path = sessions / f"{name or session_id}.jsonl"
    path.write_bytes(header(session_id) + b"".join(message_line(f"message {i}") for i in range(n_messages)))
    return path


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def ingested(settings: Settings) -> list[tuple[str, str]]:
    """All (session, message id) rows of the ledger, duplicates included (a duplicate is a bug)."""
    if not settings.db_path.exists():
        return []
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        return con.execute("SELECT session_id, message_id FROM ingested ORDER BY 1, 2").fetchall()


def ingested_ids(settings: Settings) -> list[str]:
    return sorted(message_id for _, message_id in ingested(settings))


def distill(*args: str, state_dir: Path | None = None, env: dict | None = None,
            check: bool = False) -> subprocess.CompletedProcess:
    """The CLI in this process (click's runner), with the console script's error handling and exit codes.

    What the process itself does (umask, signal routing, `python -m`, locks between processes, timeouts) needs
    `distill_process`."""
    full_env = dict(env or {})
    if state_dir is not None:
        full_env["DISTILL_STATE_DIR"] = str(state_dir)
    result = invoke(*args, env=full_env)
    completed = subprocess.CompletedProcess(["distill", *args], result.exit_code, result.stdout, result.stderr)
    if check and completed.returncode != 0:
        raise AssertionError(f"distill {args} exited {completed.returncode}: {completed.stderr}")
    return completed


def invoke(*args: str, env: dict | None = None, input: str | None = None) -> Result:
    """click's runner on the CLI. Nothing a command changes outlives it: the logger it configured is put back,
    and a database connection it left open fails the test (checked when the test ends)."""
    env = env or {}
    # the zone is read once per process (tzset, ICU in DuckDB): a test of another zone needs distill_process
    assert "TZ" not in env, "TZ needs a process of its own: use distill_process"
    state_dir = env.get("DISTILL_STATE_DIR") or os.environ.get("DISTILL_STATE_DIR")
    if state_dir:
        _used_state_dirs.add(Path(state_dir))
    logger = logging.getLogger("distiller")
    saved = (logger.handlers[:], logger.level, logger.propagate)
    try:
        return CliRunner().invoke(cli, list(args), input=input, env=env, prog_name="distill",
                                  catch_exceptions=False)
    finally:
        logger.handlers[:], logger.level, logger.propagate = saved


def distill_process(*args: str, state_dir: Path | None = None, env: dict | None = None, check: bool = False,
                    timeout: float = 120) -> subprocess.CompletedProcess:
    """The real CLI in a subprocess (`python -m distiller`), for what only a process shows."""
    full_env = dict(os.environ)
    if state_dir is not None:
        full_env["DISTILL_STATE_DIR"] = str(state_dir)
    full_env.update(env or {})
    result = subprocess.run(
        [sys.executable, "-m", "distiller", *args], capture_output=True, text=True, env=full_env, timeout=timeout
    )
    if check and result.returncode != 0:
        raise AssertionError(f"distill {args} exited {result.returncode}: {result.stderr}")
    return result


def assert_no_open_connection(db: Path) -> None:
    """Fail if this process still holds a connection to `db`. DuckDB keeps the file open while any connection is:
    where the process's open files can be listed (/proc), that is checked without opening anything; elsewhere a
    probe connection with another configuration, which DuckDB refuses while one is open."""
    if not db.exists():
        return
    fds = Path("/proc/self/fd")
    if fds.is_dir():
        target = os.path.realpath(db)
        for fd in os.listdir(fds):
            try:
                held = os.readlink(fds / fd)
            except OSError:
                continue
            if held == target:
                pytest.fail(f"a connection to {db} was left open")
        return
    try:
        duckdb.connect(str(db), read_only=True, config={"threads": 1}).close()
    except duckdb.ConnectionException as exc:
        if "different configuration" in str(exc):
            pytest.fail(f"a connection to {db} was left open")
    except duckdb.Error:
        pass  # a damaged or busy file is the test's business, not a leak


def wait_for(condition, what: str, seconds: float = 60) -> None:
    """Poll a condition a real process will make true, failing the test after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    pytest.fail(f"timed out waiting for {what}")
