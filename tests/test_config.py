"""Settings are input: every value typed, finite and in range, names from a safe alphabet, each origin known."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import invoke

from distiller.config import Settings, load_settings, override
from distiller.errors import DistillError


def write_config(tmp_path: Path, text: str) -> Path:
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    (state / "distill.toml").write_text(text)
    return state / "distill.toml"


@pytest.mark.parametrize("text, name", [
    ("commit_every_bytes = 1.9\n", "commit_every_bytes"),
    ("max_line_bytes = 1e20\n", "max_line_bytes"),
    ("db_wait_seconds = inf\n", "db_wait_seconds"),
    ("db_wait_seconds = nan\n", "db_wait_seconds"),
    ("db_wait_seconds = 1e308\n", "db_wait_seconds"),
    ("request_budget_tokens = true\n", "request_budget_tokens"),
    ("budget_usd = -1\n", "budget_usd"),
    ('model = "a\\nb\\u001b"\n', "model"),
    ('extra_injected_blocks = ["ok", "<bad>"]\n', "extra_injected_blocks"),
    ('excluded_agents = ["../x"]\n', "excluded_agents"),
])
def test_bad_file_values_name_the_setting_the_file_and_what_is_allowed(tmp_path, text, name):
    path = write_config(tmp_path, text)
    with pytest.raises(DistillError) as caught:
        load_settings(tmp_path / "state")
    message = str(caught.value)
    assert f"'{name}'" in message and f"file {path}" in message and "allowed:" in message
    assert "\x1b" not in message and "\n" not in message


@pytest.mark.parametrize("env, value", [
    ("DISTILL_DB_WAIT_SECONDS", "inf"), ("DISTILL_DB_WAIT_SECONDS", "1e308"), ("DISTILL_DB_WAIT_SECONDS", "NaN"),
    ("DISTILL_COMMIT_EVERY_BYTES", "1.9"), ("DISTILL_MAX_LINE_BYTES", "1e20"), ("DISTILL_MODEL", "x\x1b[2J"),
    ("DISTILL_BATCH_API", "maybe"),
])
def test_bad_env_values_name_the_env_var(tmp_path, monkeypatch, env, value):
    monkeypatch.setenv(env, value)
    result = invoke("status")
    assert result.exit_code == 1
    assert f"from env {env}" in result.stderr and "allowed:" in result.stderr


def test_bad_flag_value_names_the_flag(tmp_path):
    result = invoke("run", "--model", "claude\nevil", "--source", str(tmp_path))
    assert result.exit_code == 2  # a usage error
    assert "'model' from flag --model" in result.stderr


def test_good_values_keep_their_types_and_origins(tmp_path, monkeypatch):
    path = write_config(tmp_path, "commit_every_bytes = 65536\ndb_wait_seconds = 2\n")
    monkeypatch.setenv("DISTILL_MAX_LINE_BYTES", "1_048_576")
    monkeypatch.setenv("DISTILL_BATCH_API", "yes")
    settings = override(load_settings(tmp_path / "state"), model="claude-sonnet-5-5")
    assert settings.commit_every_bytes == 65536 and isinstance(settings.commit_every_bytes, int)
    assert settings.db_wait_seconds == 2.0 and settings.max_line_bytes == 1048576 and settings.batch_api is True
    assert settings.origin("commit_every_bytes") == f"file {path}"
    assert settings.origin("max_line_bytes") == "env DISTILL_MAX_LINE_BYTES"
    assert settings.origin("model") == "flag --model"
    assert settings.origin("extractor") == "default"


def test_user_exclusions_add_to_the_builtin_one_and_bang_removes_it(tmp_path):
    write_config(tmp_path, 'excluded_agents = ["main"]\n')
    assert load_settings(tmp_path / "state").excluded_agents == ("memory-distiller", "main")
    write_config(tmp_path, 'excluded_agents = ["!memory-distiller", "main"]\n')
    assert load_settings(tmp_path / "state").excluded_agents == ("main",)


def test_config_show_reports_origins_and_masks_the_key(tmp_path, monkeypatch):
    path = write_config(tmp_path, "request_budget_tokens = 9000\n")
    monkeypatch.setenv("DISTILL_MODEL", "claude-sonnet-5-5")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-SECRETSECRET")
    result = invoke("config", "show", "--json")
    assert result.exit_code == 0, result.stderr
    shown = {s["name"]: s for s in orjson.loads(result.stdout)["settings"]}
    assert shown["request_budget_tokens"]["value"] == 9000
    assert shown["request_budget_tokens"]["origin"] == f"file {path}"
    assert shown["model"]["origin"] == "env DISTILL_MODEL"
    assert shown["state_dir"]["origin"] == "env DISTILL_STATE_DIR"
    assert shown["db_wait_seconds"]["origin"] == "default"
    assert shown["anthropic_api_key"]["origin"] == "env ANTHROPIC_API_KEY"
    human = invoke("config", "show").stdout
    for out in (result.stdout, human):
        assert "SECRET" not in out and "sk-ant" not in out
    assert "masked" in human


def test_state_dir_flag_origin(tmp_path):
    result = invoke("--state-dir", str(tmp_path / "elsewhere"), "--json", "config", "show")
    shown = {s["name"]: s for s in orjson.loads(result.stdout)["settings"]}
    assert shown["state_dir"] == {**shown["state_dir"], "value": str(tmp_path / "elsewhere"),
                                  "origin": "flag --state-dir"}


def test_default_state_dir_is_xdg_wherever_the_command_runs(tmp_path, monkeypatch):
    monkeypatch.delenv("DISTILL_STATE_DIR")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert Settings().state_dir == tmp_path / "xdg" / "distiller"
    result = invoke("-v", "beliefs", "list")
    assert result.exit_code == 0, result.stderr
    assert f"state dir: {tmp_path / 'xdg' / 'distiller'} (default)" in result.stderr
    assert not (elsewhere / "state").exists()
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert Settings().state_dir == tmp_path / "home" / ".local" / "state" / "distiller"
