import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distiller.redact import Redacted, find_secret, redact

FIXTURE = Path(__file__).parent / "fixtures" / "labelled.jsonl"
ROWS = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]
SECRET_ROWS = [row for row in ROWS if "redactions" in row["expect"]]


def _text(row):
    return "\n".join(block["text"] for block in row["line"]["message"]["content"] if block.get("type") == "text")


@pytest.mark.parametrize("row", SECRET_ROWS, ids=[row["id"] for row in SECRET_ROWS])
def test_fixture_secrets_are_redacted_and_near_misses_survive(row):
    result = redact(_text(row))
    assert dict(result.counts) == row["expect"]["redactions"]
    for kind in row["expect"]["redactions"]:
        assert f"[REDACTED:{kind}]" in result.text
    for kept in row["expect"].get("present", []):
        assert kept in result.text
    assert find_secret(result.text) is None
    assert find_secret(_text(row)) == (next(iter(row["expect"]["redactions"]), None))


def test_url_keeps_everything_but_the_password():
    assert redact("postgres://app:p4ssw0rd@db:5432/x").text == "postgres://app:[REDACTED:url-credentials]@db:5432/x"


def test_counts_are_per_type_and_sorted():
    text = "AKIAZ4Q7RXN2B5T3WVKP and AKIAZ4Q7RXN2B5T3WVKQ, password=hunter22"
    assert redact(text) == Redacted(
        "[REDACTED:aws-access-key-id] and [REDACTED:aws-access-key-id], password=[REDACTED:password-assignment]",
        (("aws-access-key-id", 2), ("password-assignment", 1)),
    )


def test_specific_type_wins_over_assignment():
    assert redact("ANTHROPIC_API_KEY=sk-ant-api03-AbCdEf1234567890AbCdEf12").counts == (("anthropic-key", 1),)


def test_pem_block_is_replaced_whole_even_when_truncated():
    text = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx4\nabc"
    assert redact(text).text == "[REDACTED:private-key]"


@pytest.mark.parametrize(
    "text",
    [
        "token: expired yesterday",
        "the api_key field is ${API_KEY}",
        "password: <your password>",
        "Bearer of good tidings",
        "basic ideas only",
    ],
)
def test_placeholders_and_prose_are_not_secrets(text):
    assert redact(text) == Redacted(text, ())


def test_random_token_between_tabs_is_found_and_a_hex_hash_kept():
    text = "build 2026-03-01\tid=4\tK9xQ2mV7pL4sT8wZ1nB6rD3fH5jG0cY2aE7uI9oP\tdone"
    assert redact(text) == Redacted("build 2026-03-01\tid=4\t[REDACTED:high-entropy]\tdone", (("high-entropy", 1),))
    sha = "deploy 3f2a9c1b7e4d5a6f8b0c2d4e6f8a0b1c2d3e4f5a ok"
    assert redact(sha) == Redacted(sha, ())


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("aAkK09_-=:/@+ .\nsk-antAKIAghp_eyJ"), max_size=120))
def test_redaction_is_idempotent(text):
    once = redact(text)
    assert redact(once.text) == Redacted(once.text, ())
    assert find_secret(once.text) is None
