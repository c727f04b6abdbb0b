import base64
import json
import random
import re
import signal
from itertools import pairwise
from pathlib import Path

import duckdb
import pytest
from conftest import append, distill, message_line, new_session
from hypothesis import given, settings
from hypothesis import strategies as st
from secretclasses import cases, lookalikes, split_across_messages
from secretgen import SECRETS, prose, texts_with_secrets

from distiller.redact import (
    _RULES,
    _WORDS,
    Redacted,
    _many_blanks,
    _rules_in_play,
    _spans,
    find_secret,
    redact,
    redact_every_rule,
    refusal,
    split_secret,
)
from distiller.textscan import contains_any

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


# --- the needle shortcut is the plain path, and no rule has a blind spot


@pytest.mark.slow  # hundreds of generated examples; CI runs it with the other slow tests
@settings(max_examples=400, deadline=None)
@given(texts_with_secrets())
def test_the_needle_shortcut_equals_running_every_rule(text):
    assert redact(text) == redact_every_rule(text)
    assert find_secret(text) == min(((start, kind) for start, _, kind in _spans(text, _RULES)), default=(0, None))[1]


@pytest.mark.slow  # hundreds of generated examples; CI runs it with the other slow tests
@settings(max_examples=1500, deadline=None)
@given(st.data())
def test_every_span_a_rule_reports_holds_a_needle_and_passes_its_shape_check(data):
    """Texts drawn from one rule's pattern at a time, in ASCII or any text: what the shortcut asks of a text is true
    of every span the rule reports, and the shape check of every match (of any text: it is asked of every text)."""
    rule = data.draw(st.sampled_from(_RULES))
    alphabet = data.draw(st.sampled_from([st.characters(max_codepoint=127), st.characters(exclude_categories=("Cs",))]))
    text = data.draw(st.one_of(st.from_regex(rule.pattern, alphabet=alphabet), st.tuples(
        prose(), SECRETS.get(rule.kind, st.just("")), prose()).map("".join)))
    if any(True for _ in _spans(text, (rule,))):
        assert contains_any(text.lower() if rule.ignore_case else text, rule.needles), text
        assert rule in _rules_in_play(text), text
    if rule.possible is not None:
        for match in rule.pattern.finditer(text):
            assert rule.possible(match.group().encode()), match.group()
    assert redact(text) == redact_every_rule(text)


_NEEDLES = sorted({needle for rule in _RULES for needle in rule.needles})


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(
    st.sampled_from(_NEEDLES), st.sampled_from(_NEEDLES).map(str.upper), st.sampled_from(_NEEDLES).map(str.title),
    st.text(alphabet=st.sampled_from("aAkKsS-_.:/ \t\n0189=\u0130\u212a\u00b0ß\u03a3Ωé"), max_size=6),
    st.text(max_size=4), st.just("".join(map(chr, range(33, 127))))), max_size=12).map("".join))
def test_the_needle_index_finds_the_rules_a_search_per_rule_finds(text):
    """The index (one trie, one anchored search, one marking of single characters, bits per rule) finds exactly the
    rules whose needles a text holds, as a search per rule does, and asks their shapes as each rule would."""
    lowered, data = text.lower(), text.encode()
    expected = tuple(rule for rule in _RULES
                     if (not rule.needles or contains_any(lowered if rule.ignore_case else text, rule.needles))
                     and (rule.possible is None or rule.possible(data)))
    assert _rules_in_play(text) == expected


@pytest.mark.parametrize("kind", sorted(SECRETS))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_every_rule_redacts_its_secrets_wherever_they_are(kind, data):
    secret = data.draw(SECRETS[kind])
    text = f"note: {secret} (as discussed)"
    result = redact(text)
    assert kind in dict(result.counts), result.text
    assert find_secret(text) == kind


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Authorization: Bearer abc.def-ghi_jkl.mnopqrstu", "auth-header"),
        ("the key is sk_live_abcdefghijklmnopqrstuvwx", "stripe-key"),
        ("maps key AIzaSyAbcdefghijklmnopqrstuvwxyz_ABCDEF", "google-api-key"),
        ("my password for the vpn is Tr0ub4dor&3", "password-phrase"),
        ("The wifi password is hunter", "password-phrase"),
        ("the PIN is 4321", "pin"),
        ("my bank pin number is 908172.", "pin"),
        ("connect to postgres://admin:p@ss@word1@db.internal:5432/prod", "url-credentials"),
        ("my passphrase is correct horse battery staple", "passphrase"),
        ("seed phrase: abandon ability able about above absent absorb abstract absurd abuse access accident",
         "passphrase"),
        ("our door code is 7391", "access-code"),
        ("The alarm code is 1234#, don't forget", "access-code"),
        ("backup codes: 8f3k-29dj-1kd9", "access-code"),
        ("my SSN is 123-45-6789", "ssn"),
        ("Social security number: 078 05 1120.", "ssn"),
        ("login: bob / pw: letmein99", "password-assignment"),
        ("my mother's maiden name is Kowalski", "security-answer"),
        ("the answer to my security question about my first pet is Fluffy", "security-answer"),
        ("security answer: Blue Moon", "security-answer"),
    ],
)
def test_former_blind_spots_and_plain_word_secrets_are_redacted(text, kind):
    assert dict(redact(text).counts) == {kind: 1}


@pytest.mark.parametrize(
    "text",
    ["the password is wrong", "my password is too short", "I reset the PIN yesterday", "the pin is bent",
     "I use a password manager", "ping is 40 ms", "the passphrase is stored in my password manager",
     "the passphrase is long", "the door code is simple", "the error code is 404", "use the promo code SAVE20",
     "my SSN is on the form", "I pwned it: 10 times", "the seed phrase is written on paper in a safe",
     "what is your mother's maiden name?", "the security answer is wrong", "her maiden name is Jones",
     "I forgot my security question"],
)
def test_talk_about_passwords_is_not_a_secret(text):
    assert redact(text) == Redacted(text, ())


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("I always send Authorization: Bearer abcdefghijklmnopqrstuvwxyzABCDEFGH to the api", "auth-header"),
        ("Bearer QWERTYuiopASDFGhjklZXCVbnmQWERTYuiop", "auth-header"),
        ("cache at redis://:S3cretPass@localhost:6379", "url-credentials"),
        ("my AWS secret key is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "key-phrase"),
        ("I changed my password to Xy9!kLmn yesterday", "password-phrase"),
        ("my card is 4111 1111 1111 1111, expires soon", "card-number"),
        ("pay to DE89370400440532013000 please", "iban"),
    ],
)
def test_secrets_an_outside_review_found_unredacted_are_redacted(text, kind):
    assert dict(redact(text).counts) == {kind: 1}


@pytest.mark.parametrize(
    "text",
    [
        "we use Bearer authentication here",
        "I changed my password to something longer",
        "the build at 1772359200000 ms, order 1234567890123456",
        "docs/ReleaseNotes/Version2/ChangeLogEntries",
        "AAAA AAAA AAAA AAAA AAAA AAAA",  # groups of capitals without a digit: no setup key (nor one the shortcut sees)
    ],
)
def test_words_timestamps_and_paths_near_those_shapes_are_kept(text):
    assert redact(text).text == text == redact_every_rule(text).text


@pytest.mark.parametrize("text", [
    "my social  security number is 123-45-6789", "social\tsecurity 123-45-6789", "seed\twords: apple banana cherry dog",
    "the pass\tcode is Zq81mmx4", "PASS CODE: Zq81mmx4", "pwd=Zq81mmx4", "card 4111 1111-1111 1111 ok",
])
def test_key_words_split_by_any_blanks_still_reach_their_rule(text):
    assert redact(text) == redact_every_rule(text) and redact(text).counts


# --- issue 22: secrets found by context and shape (tests/secretclasses.py; figures: tests/bench/secrets_report.py)


@pytest.mark.parametrize("seed", range(3))
def test_every_train_form_of_every_class_leaves_no_secret_whole_and_the_last_guard_refuses_it(seed):
    for case in cases(seed):
        if case.split != "train":
            continue
        redacted = redact(case.text).text
        assert not any(secret in redacted or "".join(secret.split()) in "".join(redacted.split())
                       for secret in case.secrets if len(secret) >= 8), (case.form, redacted)
        assert refusal(case.text) is not None, case.form
        assert redact(redacted) == Redacted(redacted, ()), case.form


@pytest.mark.parametrize("seed", range(3))
def test_look_alikes_are_kept(seed):
    """Train and the first held-out look-alikes; the later held-out sets are measured (tests/bench/secrets_report.py),
    as the issue allows one false positive in 36."""
    looks = [look for look in lookalikes(seed) if look.split in ("train", "held-out")]
    changed = [look.form for look in looks if redact(look.text).counts]
    assert changed == []
    refused = [look.form for look in looks if refusal(look.text) is not None]
    assert refused == []


@pytest.mark.parametrize(("text", "kind"), [
    ("ACCOUNT_KEY=Zq8vN3kLm2Pq9Rt5Wx7Yb4Cd", "key-assignment"),
    ("DD_API_KEY=3f2a9c1b7e4d5a6f8b0c2d4e6f8a0b1c", "secret-assignment"),
    ("LICENSE_KEY=QWERTYUIOPASDFGHJKLZ", "key-assignment"),
    ("&sig=tvUyCVt4OHvgRPlqnVcSJDSi6H0IhNTjAOEC3W99Gpo%3D", "key-assignment"),
    ("curl -u admin:Wintergreen.46303 https://ci", "command-line-password"),
    ("mysql -u root -pTornado5896! shop", "command-line-password"),
    ("AccountName=x;AccountKey=1LZ3kXTA+aBPskcj27w1KNV4kB9Vr3CyCULaHt0/pWGHILZm3N5P==;EndpointSuffix=y",
     "key-assignment"),
    ("https://2c0b1308974963deac5add4e4a465ebc@o548046.ingest.sentry.io/846039", "url-credentials"),
    ("Cookie: sessionid=03d79135q4nvrccdkwasaie1oz9o3mvg", "key-assignment"),
    ("The user uses key-84c6a9c161a7ae78b590b14b0f107107 for mail", "vendor-token"),
    ("2FA setup key: S35M KARG YQM7 6QZI", "totp-key"),
    ("I reuse the same password, Banjo.13458, on every site", "password-phrase"),
    ("I set my laptop login to Pelican.51044", "password-phrase"),
    ("mein Passwort ist Pelican.86733", "password-phrase"),
    ("card 4318724531935611, exp 05/29, cvv 431", "card-cvv"),
    ("my social is 277-21-4292", "ssn"),
])
def test_issue_22_shapes_are_redacted(text, kind):
    assert kind in dict(redact(text).counts), redact(text)
    assert redact(text) == redact_every_rule(text)


@pytest.mark.parametrize("text", [
    "my password manager is 1Password", "the key is to practise every day", "max_tokens: 4096, tokens_used=15234",
    "primary_key: id", "KEY_FILE=/etc/ssl/private/server.key", "API_KEY=your-api-key-here", "TOKEN=${GITHUB_TOKEN}",
    "my social is on Saturday at 5 pm", "the CVV is the 3-digit code on the back", "I reuse passwords, which is bad",
    "room 2345 next week and more", "key: fresh ingredients",
])
def test_issue_22_talk_and_config_that_are_no_secrets_are_kept(text):
    assert redact(text) == Redacted(text, ())


def test_a_seed_phrase_needs_its_checksum_or_a_word_that_names_it():
    phrase = "abandon " * 11 + "about"  # the list's test vector: a valid checksum
    assert dict(redact(phrase).counts) == {"seed-phrase": 1}
    shuffled = "about " + "abandon " * 10 + "abandon"
    assert redact(shuffled).counts == ()
    assert dict(redact("my recovery words: " + shuffled).counts) == {"seed-phrase": 1}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["abandon", "ability", "about", "zoo", "Able", "wrong", "1", ".", ",", "\n", "\t",
                                 "  ", "-", "x", "words:"]), min_size=12, max_size=40))
def test_the_seed_phrase_shortcut_holds_beside_marks_capitals_and_digits(pieces):
    text = " ".join(pieces) + " " + "".join(pieces)  # "words:" names a seed phrase, so any run of 12 is one
    assert redact(text) == redact_every_rule(text)


def test_a_seed_phrase_that_ends_a_sentence_is_found_by_the_shortcut():
    text = ("The recovery words are peasant foam differ woman slot candy vehicle amateur speed normal glare element. "
            "Don't lose them")
    assert redact(text) == redact_every_rule(text) and dict(redact(text).counts) == {"seed-phrase": 1}


def _planted_lines(seed: int) -> tuple[bytes, list[str]]:
    """Every train and held-out case of the generator, each in turn in a user turn, an assistant turn, a thinking
    block, a tool call's arguments and a tool result (OpenClaw lines), with the secrets to look for."""
    places = ["user", "assistant", "thinking", "toolCall", "toolResult"]
    lines, secrets = [], []
    for n, case in enumerate(cases(seed)):
        place = places[n % len(places)]
        if place in ("user", "assistant"):
            lines.append(message_line(f"note: {case.text}", role=place))
        elif place == "thinking":
            lines.append(message_line("ok", role="assistant", content=[{"type": "thinking", "thinking": case.text},
                                                                      {"type": "text", "text": "done"}]))
        elif place == "toolCall":
            lines.append(message_line("ok", role="assistant", content=[
                {"type": "toolCall", "id": f"c{n}", "name": "exec", "arguments": {"command": case.text}}]))
        else:
            lines.append(message_line("ok", role="toolResult", toolCallId=f"c{n}", toolName="exec",
                                      content=[{"type": "text", "text": case.text}]))
        secrets.extend(s for s in case.secrets if len(s) >= 8)
    return b"".join(lines), secrets


def test_generated_secrets_reach_no_output_export_or_file_of_the_state_dir(tmp_path, agents):
    """End to end, offline: a dry run's decisions, a run with the rules extractor, the export and every file of
    the state dir (the database read back as text too) hold no generated secret whole, wherever it was planted.
    Only the forms whose secrets redaction catches (train and held-out both) are planted here: what slips is
    measured by tests/bench/secrets_report.py."""
    data, _ = _planted_lines(0)
    planted = cases(0)
    caught = [not any(s in redact(c.text).text for s in c.secrets if len(s) >= 8) for c in planted]
    secrets = [s for c, kept in zip(planted, caught, strict=True) if kept for s in c.secrets if len(s) >= 8]
    slipped = [s.encode() for c, kept in zip(planted, caught, strict=True) if not kept for s in c.secrets]
    path = new_session(agents)
    append(path, b"".join(line for line in data.splitlines(keepends=True) if not any(s in line for s in slipped)))
    state = tmp_path / "state"
    outputs = [distill("--json", "run", "--source", str(agents), "--dry-run", "--show", "all", state_dir=state,
                       check=True).stdout,
               distill("--json", "run", "--source", str(agents), "--extractor", "rules", "--show", "all",
                       state_dir=state, check=True).stdout,
               distill("--json", "beliefs", "export", state_dir=state, check=True).stdout]
    files = [p.read_bytes().decode("utf-8", "replace") for p in state.rglob("*") if p.is_file()]
    with duckdb.connect(str(state / "distill.duckdb"), read_only=True) as con:
        tables = [row[0] for row in con.execute("SELECT table_name FROM information_schema.tables").fetchall()]
        dumped = [str(con.execute(f'SELECT * FROM "{table}"').fetchall()) for table in tables]
    leaked = [s for s in secrets for text in outputs + files + dumped if s in text or s in text.replace("\\n", "\n")]
    assert leaked == []


def test_a_value_after_equals_may_start_with_a_dash_but_a_flag_after_a_blank_is_no_value():
    assert redact("PGPASSWORD=-x7Gq2LmN9pR psql -h db").text == "PGPASSWORD=[REDACTED:key-assignment] psql -h db"
    assert redact("api_token: --verbose").counts == ()
    assert redact("secrets: - first item").counts == ()


# --- a key split across two consecutive messages (redact.split_secret, screen.join_split)


@pytest.mark.parametrize("seed", range(10))
def test_a_key_split_across_two_messages_is_redacted_in_both(seed):
    for pair in split_across_messages(seed):
        if pair.split != "train":
            continue
        split = split_secret(redact(pair.first).text, redact(pair.second).text)
        assert split is not None, pair
        assert pair.pieces[0] not in split.before and pair.pieces[1] not in split.after, split
        assert "[REDACTED:" in split.before and "[REDACTED:" in split.after


def test_consecutive_look_alikes_and_persona_like_turns_are_no_split_key():
    texts = [redact(look.text).text for seed in range(10) for look in lookalikes(seed)]
    texts += ["I went to the shop", "and bought 12 eggs", "commit abc1234", "fixed in Zq8vN3kLm2 too",
              "my password manager is 1Password", "see msg_01unqD7dJY5U0anxUPClYIGs", "ok"]
    joined = [(a, b) for a in texts for b in texts if split_secret(a, b) is not None]
    assert joined == []


def test_a_secret_split_across_turns_leaves_no_piece_in_what_the_pipeline_shows(tmp_path, agents):
    """End to end through the reading and the chunk, in the main process and in scan workers: both turns of each
    split key are shown redacted (with the pieces' words kept), and a turn between them breaks no pair it should
    not (the pair is consecutive)."""
    from distiller import pipeline
    from distiller.config import Settings

    pairs = [pair for pair in split_across_messages(3) if pair.split == "train"]
    for _ in range(3):  # files enough for the workers to take some
        path = new_session(agents)
        append(path, b"".join(message_line(text) for pair in pairs for text in (pair.first, pair.second)))
    for workers in (0, 2):
        shown: list = []
        settings = Settings(state_dir=tmp_path / f"state-{workers}", scan_workers=workers)
        pipeline.run_once(settings, [agents], dry_run=True, show=shown.append)
        texts = [d.text for d in shown]
        assert len(texts) == 3 * 2 * len(pairs)
        for pair in pairs:
            assert not any(piece in text for piece in pair.pieces for text in texts), (pair, texts)
        assert all("[REDACTED:" in text for text in texts)
        # the words before each piece are kept ("here is the key, first half: ", "(2/2) ")
        heads = tuple(text[:text.index(piece)] for pair in pairs for text, piece in zip(
            (pair.first, pair.second), pair.pieces, strict=True))
        assert all(text.startswith(heads[n % len(heads)]) for n, text in enumerate(texts))


# --- round 5: general mechanisms for the held-out-2/3 slips (command lines' credential arguments, passwords said
# with a bounded gap in ~45 languages, markup and name/value pairs, a vendor-free prefix + random body, numbered
# seed lists, unspaced TOTP keys in a 2FA context, user/password pairs)

_ROUND_5_NEAR = ("-u ", "-U ", " -U alice%", "%", "/user:CORP\\bob ", "/pass:", "htpasswd -b ", " add_user ops ",
                 "AUTH ", "net user ", "<password>", "</password>", "<ns:apiKey>", "value: ", "- name: DB_PASSWORD\n",
                 '"name": "token", ', "oauth:", "lsv2_pt_", "AstraCS:", "1. ", "\n2. ", ", ", "authenticator: ",
                 " / ", "admin/", "router", "the code to unlock the laptop is ", "? it's ", " was ", " still ",
                 " (change at login)", "secret", " -storepass ", "parola mea ", " este ", "wifi şifresi ", "GHz")


@settings(max_examples=300, deadline=None)
@given(texts_with_secrets(_ROUND_5_NEAR))
def test_the_needle_shortcut_equals_every_rule_beside_round_5_words(text):
    assert redact(text) == redact_every_rule(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["abandon", "ability", "about", "zoo", "1.", "2)", "10:", ",", ", ", "\n", "\n3. ",
                                 " ", "x", "12", "wallet:"]), min_size=12, max_size=48))
def test_the_seed_phrase_shortcut_holds_for_numbered_and_comma_separated_lists(pieces):
    text = " ".join(pieces) + "\n" + "".join(pieces)
    assert redact(text) == redact_every_rule(text)
    for match in next(rule for rule in _RULES if rule.kind == "seed-phrase").pattern.finditer(text):
        assert _many_blanks(match.group().encode())


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("smbclient //nas/backup -U ops%Tr0ub4dor&3 -c ls", "command-line-password"),
        ("git clone --user deploy:Zq8v!x92LmK https://git.example.com/a.git", "command-line-password"),
        ("cmdkey /generic:srv01 /user:ops /pass:Wint3r!Sun", "command-line-password"),
        ("mosquitto_passwd -b /etc/mosquitto/passwd sensor Kx9#mQ2vL", "command-line-password"),
        ("run htpasswd -nb ops Kx9#mQ2vL and paste the line into the file", "command-line-password"),
        ("echo 'Kx9#mQ2vL' | docker login registry.example.com -u ops --password-stdin", "command-line-password"),
        ("echo 'ops:Kx9#mQ2vL' | sudo chpasswd", "command-line-password"),
        ("كلمة المرور هي Kx9#mQ2vL", "password-phrase"),
        ("scan it: WIFI:T:WPA;S:Guest Net;P:Kx9#mQ2vL;H:false;;", "password-phrase"),
        ("tls.key: " + base64.b64encode(b"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIO3kJ8x9Zq2LmP0vN7tR5wY1aB3cD6eF\n"
                                        b"-----END EC PRIVATE KEY-----\n").decode(), "private-key"),
        ("Private-Lines: 1\nAAAAIKyyUdPG+TjcEe5oTwzIMKqFGEq0//JPWUVSQQCJ4Z2T\nPrivate-MAC: 0a1b", "private-key"),
        ("rabbitmqctl change_password ops Kx9#mQ2vL", "command-line-password"),
        ("redis-cli -h cache AUTH default Kx9#mQ2vL", "command-line-password"),
        ("jarsigner -keystore k.jks -keypass Kx9#mQ2vL app.jar alias", "key-assignment"),
        ("<config><db><Password>Kx9#mQ2vL</Password></db></config>", "key-assignment"),
        ('{"name": "STRIPE_SECRET", "value": "Zq8vX92LmKp3Rt7w"}', "key-assignment"),
        ("env:\n  - name: DB_PASS\n    value: Kx9#mQ2vL", "key-assignment"),
        ("glsa_" + "k3j9x8c7v6b5n4m2q1w0e9r8t7y6u5i4" + " rotated", "vendor-token"),
        ("bot:" + "a8f3k2m9x7q1w5e4r6t0y2u8i3o7p9l1" + " in the bot config", "vendor-token"),
        ("seed words, in order: 1) abandon 2) abandon 3) abandon 4) abandon 5) abandon 6) abandon 7) abandon"
         + " 8) abandon 9) abandon 10) abandon 11) abandon 12) about", "seed-phrase"),
        ("type it into Google Authenticator: JBSWY3DPEHPK3PXPJBSWY3DP", "totp-key"),
        ("das Kennwort, das ich dem Vermieter gab, ist Kx9#mQ2vL", "password-phrase"),
        ("Kennwort für das Büro lautet jetzt Kx9#mQ2vL", "password-phrase"),
        ("mi contraseña de siempre era Kx9#mQ2vL", "password-phrase"),
        ("lykilorðið mitt er Kx9#mQ2vL", "password-phrase"),
        ("the pin to open the garage is 482913", "key-phrase"),
        ("the combination for the bike lock is 0417", "key-phrase"),
        ("the signing secret we share with them is Kx9#mQ2vL7", "key-phrase"),
        ("login for the nas: backup / Kx9#mQ2vL", "password-phrase"),
        ("I pasted Kx9#mQ2vL into the password box", "password-phrase"),
    ],
)
def test_round_5_mechanisms_redact_unseen_phrasings_of_their_classes(text, kind):
    result = redact(text)
    assert kind in dict(result.counts), result.text
    assert redact(text) == redact_every_rule(text)
    assert redact(result.text) == Redacted(result.text, ())


@pytest.mark.parametrize("text", [
    "chatcmpl-" + "AbCdEfGh1234IjKlMnOp5678QrStU", "request id msg_01" + "XyZaBcDeFgHiJkLmNoPqRs", "toolu_01" + "A" * 22,
    "the code review is at 3pm", "the pin is on the map", "my password manager is 1Password", "key points: cost, speed",
    "the token limit is 4096", "pass the salt", "I'll pass Python3 to the script", "pass rate is 98.52%",
    "the secret to good bread is time", "msbuild App.sln /p:Configuration=Release",
    "date -u +%Y-%m-%dT%H:%M:%SZ", "docker run -u 1000:1000 app", "git push -u origin feature/login-2fa",
    "<key>LSMinimumSystemVersion10</key>", "<tokenExpiry>3600s</tokenExpiry>", "image: app:" + "9f86d081" * 5,
    "sign in with Google/GitHub", "the wifi runs at 2.4GHz/5.8GHz", "runas /user:Administrator cmd.exe",
    "echo $TOKEN | docker login -u ops --password-stdin", "cat /etc/passwd | grep root",
    "ca.crt: " + base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKC\n"
                                  b"-----END CERTIFICATE-----\n").decode(),
])
def test_round_5_look_alikes_are_kept(text):
    assert redact(text).text == text


def _turns(value):
    kinds = [c.isdigit() for c in value]
    return sum(a != b for a, b in pairwise(kinds))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["oauth:", "bot_", "lsv2_pt_", "AstraCS:", "acme-live-", "tok.v1."]),
       st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=24, max_size=64).filter(
           lambda v: sum(c.isdigit() for c in v) >= 3 and sum(c.isalpha() for c in v) >= 4 and _turns(v) >= 6),
       st.sampled_from(["", " and redeploy", ", rotated monday", "\n"]))
def test_a_random_body_after_any_name_is_a_token(prefix, body, after):
    """The vendor-free detector: a name, a separator, a body of small letters and digits in a random order (its
    documented shape: 3+ digits, 4+ letters, six turns between them), whatever the vendor."""
    text = f"new key: {prefix}{body}{after}"
    assert body not in redact(text).text
    assert redact(text) == redact_every_rule(text)


# --- no text makes redaction hang: a pattern that can split one run of letters many ways backtracks exponentially
# on a value that fails at its end (a `secret: "…"` of nine words and one digit took minutes before _WORDS was
# rewritten). Texts built from every rule's needles, a separator and one short unit repeated, ended by what makes
# a match fail late; each must be redacted within 2 s (they take microseconds: a limit for a hang, not a speed).

_UNITS = ["a", "ab", "abc", "Ab", "1", "12", " ", "-", "_", ".", ":", "=", '"', "'", "/", "\t", "x1", "é", ",", "(",
          "word", "Word", "%2B", "+", "\n"]


def _backtracking_texts(seed: int, count: int) -> list[str]:
    r = random.Random(seed)
    needles = sorted({needle for rule in _RULES for needle in rule.needles})
    texts = []
    for _ in range(count):
        unit = "".join(r.choice(_UNITS) for _ in range(r.randint(1, 4)))
        texts.append(r.choice(["", "my ", "the ", "export "]) + r.choice(needles)
                     + r.choice([": ", ":", "=", " is ", ' = "', ': "', " ", "='", " -> "])
                     + unit * r.randint(8, 40) + r.choice(["1", "!", "é", "", '"', "' x"]))
    return texts


def _redacted_within(texts: list[str], seconds: float) -> list[str]:
    """The texts redact() did not finish within `seconds` each (an interval timer interrupts it)."""

    def interrupt(signum: int, frame: object) -> None:
        raise TimeoutError

    hung = []
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        for text in texts:
            signal.setitimer(signal.ITIMER_REAL, seconds)
            try:
                redact(text)
            except TimeoutError:
                hung.append(text)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    return hung


def test_no_text_makes_redaction_backtrack_for_ever():
    assert _redacted_within(['her secret: "nobody knows that grandma baked these cookies with 3 eggs and butter"',
                             'mnemonic: "disagree mean spend ramp shallow gl1ide over the lazy dog again"',
                             *_backtracking_texts(0, 3_000)], 2.0) == []


@pytest.mark.slow  # 200,000 texts; CI runs it with the other slow tests
def test_no_text_makes_redaction_backtrack_for_ever_at_length():
    assert _redacted_within(_backtracking_texts(1, 200_000), 2.0) == []


_PLAIN_WORDS = re.compile(r"[A-Za-z][a-z]*(?:[_\-. ]?[A-Za-z][a-z]*)*")  # the plain form: exponential on a late miss


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="aAbZ_-. 1é", max_size=14))
def test_words_shape_matches_the_plain_form(value):
    assert (_WORDS.fullmatch(value) is None) == (_PLAIN_WORDS.fullmatch(value) is None)


# --- round 6: public values held-out-4 found redacted, and the secrets beside them that stay redacted


def test_public_values_stay_and_their_secret_neighbours_do_not():
    kept = [
        "DB_PASSWORD=${DB_PASSWORD:?set it in .env}",  # the shell's message for an unset name
        "golang.org/x/net v0.12.0 h1:vws/uBqXnjbDD456WazD4Pb8iJ4CRsBhHn4ufag4HEM=",
        "x-amz-id-2: FAXE/wiFbU3Lsvgk3a9ZhkHU0oXSmUqBcPh3WClUhSv1EgXTi9mu3MInSvgmv+iaBc+YIMgaKUVk",
        "request_id=Zq8vN3kLm2Pq7Rs4Tu5Vw6Xy7Za8Bc9De0Fg1Hi2",
        '{"kty":"RSA","e":"AQAB","n":"tn-gcea5da8XpLa3IXHBRKtGTsdSlCeCmEFNnbr8z7ilsTUxPhggN-tOtla_dcBB77pGy16pUWF"}',
        ("watch-only wallet from xpub661MyMwAqRbcGhxELjZkZUpb8xEPzf8kd1XQuDXs9mt5gMX8xM1dpasEaAwXrf6D3Dscx17YXrxdK"
        "wDJ44yezvfqcfWrKgUiGcbx9Wg83bg"),
        "send the SOL to st7vBzPmTuf5ZEDbv1qbXyuiQCkJZy9caQpmsKGv3rHV",
        "use the test card 4242 4242 4242 4242 with any future date",
        "Password: (input hidden)",
    ]
    for text in kept:
        assert redact(text).counts == (), text
    taken = [
        "DB_PASSWORD=${DB_PASSWORD:-Zq8vN3kLm2Pq7}",  # a default is a value
        "sessionid=Zq8vN3kLm2Pq7Rs4Tu5Vw6Xy7Za8Bc9De0Fg1Hi2",
        '{"kty":"EC","x":"AAAA","d":"Zq8vN3kLm2Pq7Rs4Tu5Vw6Xy7Za8Bc9De0Fg1Hi2Jk3"}',
        ("root key: xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJ"
        "gk33yuGBxrMPHi"),
        "here it is st7vBzPmTuf5ZEDbv1qbXyuiQCkJZy9caQpmsKGv3rHVx8Kq2",  # no address said
        "my card is 4242 4242 4242 4242",  # a test number said as one's own card
        "Password: (Zq8vN3kLm2",
    ]
    for text in taken:
        assert redact(text).counts != (), text


def test_passwords_said_in_more_languages_and_ways():
    said = ["รหัสผ่านคือ Gravel4692& นะ", "мій пароль від пошти Saffron.73283", "la meva contrasenya és iI_e#P38gzPv",
            "ang password ko sa email ay 7JVamS7b%XAT", "nenosiri langu ni Kestrel_86200", "رمز عبور من Otter-67285 است",
            "forgot to mention, password's 4J8V76Vvhfh-P", "密码是 Zq8vN3kLm2"]
    for text in said:
        assert redact(text).counts != (), text
    kept = ["the password for Server01", "я забув пароль від пошти", "the password's length is 12",
            "the wifi runs at 2.4GHz/5.8GHz", "la meva contrasenya és massa curta", "wifi upstairs Router5G"]
    for text in kept:
        assert redact(text).counts == (), text


def test_national_ids_card_codes_code_lists_and_key_bytes():
    taken = ["my NI number is GZ 99 95 79 D if payroll asks", "my SIN is 559 693 296", "Aadhaar no. 4887 0656 7635",
             "mi DNI es 46499469R", "meu CPF é 489.715.190-29", "mon numéro de sécu c'est 1 63 07 74 202 151 18",
             '{"number": "5341520206738118", "cvc": "694"}', "the three digits on the back are 339",
             "Kreditkarte gültig bis 01/27, Prüfnummer 852", "the activation code for my Pro license is 3S6C-HG1Q-EKR2",
             "GitHub recovery codes (keep them safe):\n3kkin-dgyqh\nju80e-5ppd5\nltnzp-qphj4",
             "my nostr login is nsec12jv6pauahj8lx845ljx604jwakw50x6qn623xe6rq4enjxns9qnuvegz8j",
             "[" + ",".join(str((n * 97 + 13) % 256) for n in range(64)) + "]"]
    for text in taken:
        assert redact(text).counts != (), text
    kept = ["sin 30 degrees is 0.5", "the SIN field is optional", "my passport expires 2031", "CPF: see the form",
            "the three digits on the back are worn off", "recovery codes: regenerate them in settings\nDone\nThanks",
            "[" + ",".join(str(n % 40) for n in range(64)) + "]", "[" + ",".join(["200"] * 32) + "]",
            "the 2024 NI rates rose by 2 percent", "npub1" + "q" * 58]
    for text in kept:
        assert redact(text).counts == (), text


def test_command_lines_and_config_of_other_tools():
    taken = ["echo 'lemontree9210%' | sudo -S systemctl restart nginx", "lftp -u backup,kL80KqMGoys4sV sftp://h.example",
             "xfreerdp /v:10.1.2.3 /u:Administrator /p:TH7T*3cN7*RkHVG6! /cert:ignore",
             "sqlplus scott/Tornado.8279@//db.example.com:1521/ORCLPDB1",
             "$ docker run -d -e WEBHOOK_HMAC=HEFhRjINy6hP5tsATnBHriwwvUhoMipT -p 8080:8080 acme/api:1.4.2",
             "    environment:\n      - BILLING_PORTAL_SEED=Wk0HkKZYP7oFKIzDpJjK3iWSMDXMSzRQ5wlA3ixr\n",
             'variable "db_password" {\n  type      = string\n  default   = "Otter6853*"\n}',
             'config.encryption_key = ENV.fetch("ENCRYPTION_KEY", "dc1fbc0fff0566d56e713bc64ea7c5be631939a7caa3b7b6")',
             "$ cat ~/.pgpass\ndb.internal:5432:app:app_user:jXa5i*bun!",
             ('curl -H "Authorization: ApiKey NGVaSEczZ3NZVU5YQ05rekVwdHg6VFg5cHhibVp4TURzOVB2N0VyQTlpRg==" https://es'
             ".example.com")]
    for text in taken:
        assert redact(text).counts != (), text
    kept = ["ps -u root,www-data", "msbuild app.sln /p:Configuration=Release", "sqlplus /nolog", "conn / as sysdba",
            "echo hello | sudo -s", 'variable "region" {\n  default = "eu-west-1"\n}', "RANDOM_SEED=42",
            'token = ENV.fetch("API_TOKEN", nil)', 'os.getenv("SECRET_KEY", "changeme")', "at 2026:03:02:10:11",
            "Authorization: Negotiate", "xfreerdp /v:host /u:bob /p:"]
    for text in kept:
        assert redact(text).counts == (), text


def test_logins_said_with_their_user_tables_and_key_lists():
    taken = ["try logging in as root with moonpie1846*", "logged in fine with alice@example.com / bluefish9411#",
             "| env | user | password |\n|---|---|---|\n| staging | admin | Pelican9096@ |",
             "| service | api key |\n| --- | --- |\n| mail | Zq8vN3kLm2Pq7Rs4Tu5Vw6Xy |",
             'accounts: ["0xaf683c24d793153442047d209654e9939f6b4d4921b5bdf3de97ee00c1ca6afe"],']
    for text in taken:
        assert redact(text).counts != (), text
    kept = ["connected as bob with TLSv1.3", "logged in as admin with 2FA", "try logging in as root with sudo",
            "| Key | Action |\n|---|---|\n| Ctrl+Shift+S | Save all |",
            "| name | password policy |\n|---|---|\n| staging | rotate90days |",
            "| env | user | password |\n|---|---|---|\n| staging | admin | (in vault) |",
            "cat log | grep -v debug | sort -u"]
    for text in kept:
        assert redact(text).counts == (), text


def test_a_user_flags_password_is_taken_by_its_place_but_not_a_group_or_an_id():
    assert redact("lftp -u backup,bluefish3654 sftp://files.example.net").counts != ()
    assert redact("curl -u bob:hunter2024 https://x.example").counts != ()
    for text in ("ps -u root,www-data", "docker run -u 100000:100000 img", "chown -u deploy:staff1 f",
                 "sudo -u postgres:postgres psql"):
        assert redact(text).counts == (), text


def test_a_value_said_with_no_verb_never_hides_one_said_directly():
    for text in ("Quick note for later: şifrem 7WkdjM5AL1xYW Thanks, that is all.",
                 "Quick note for later: мій пароль від пошти moonpie5783& Thanks, that is all.",
                 "Quick note for later: 密码是 Kestrel_29841 Thanks, that is all."):
        assert redact(text).counts != (), text
