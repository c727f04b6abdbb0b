"""Hypothesis strategies for texts that carry secrets of every redaction rule, in prose that brushes against the
rules' needles (key words in any case, lookalike Unicode letters, markers of the clean stage)."""

from __future__ import annotations

import base64
import random
import re
import string

from hypothesis import strategies as st
from secretclasses import FORMS, PROMOTED

ALNUM = string.ascii_letters + string.digits


def _chars(alphabet: str, low: int, high: int) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=low, max_size=high)


def _any_case(word: str) -> st.SearchStrategy[str]:
    return st.lists(st.booleans(), min_size=len(word), max_size=len(word)).map(
        lambda flips: "".join(c.upper() if f else c.lower() for c, f in zip(word, flips, strict=True))
    )


def _with_one(alphabet: str, required: str, low: int, high: int) -> st.SearchStrategy[str]:
    """A string of alphabet with at least one character of required somewhere."""
    return st.tuples(_chars(alphabet, low - 1, high - 1), st.sampled_from(required), st.integers(0, high)).map(
        lambda t: t[0][: t[2]] + t[1] + t[0][t[2]:]
    )


def _with_digit(alphabet: str, low: int, high: int) -> st.SearchStrategy[str]:
    return _with_one(alphabet, string.digits, low, high)


def _no_placeholder(value: str) -> bool:
    """Not a value the redactor takes for a placeholder by design (`XXX…`, as in "api_key: XXX00000")."""
    return not value.lower().startswith("xxx")


def _basic(pair: tuple[str, str]) -> str:
    return base64.b64encode(f"{pair[0]}:{pair[1]}".encode()).decode().rstrip("=")


def _with_luhn_digit(body: str) -> str:
    """The card number body plus its check digit, in groups of four."""
    total = sum(d if i % 2 else (d * 2 - 9 if d > 4 else d * 2) for i, d in enumerate(map(int, reversed(body))))
    number = body + str(-total % 10)
    return " ".join(number[i:i + 4] for i in range(0, len(number), 4))


def _german_iban(bban: str) -> str:
    return f"DE{98 - int(bban + '131400') % 97:02d}{bban}"  # D=13, E=14, check digits 00 while computing


# One strategy per rule of distiller.redact, named by the kind it should produce.
SECRETS: dict[str, st.SearchStrategy[str]] = {
    "private-key": _chars(ALNUM + "+/", 20, 80).map(
        lambda body: f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"),
    "anthropic-key": _chars(ALNUM + "_-", 20, 60).map(lambda v: "sk-ant-api03-" + v),
    "openrouter-key": _chars(ALNUM, 32, 64).map(lambda v: "sk-or-v1-" + v),
    "openai-key": _with_digit(ALNUM, 20, 48).map(lambda v: "sk-proj-" + v),
    "aws-access-key-id": _chars(string.ascii_uppercase + string.digits, 16, 16).map(lambda v: "AKIA" + v),
    "aws-secret-key": st.tuples(_any_case("aws_secret_access_key"), _chars(ALNUM + "/+", 40, 40)).map(
        lambda t: f"{t[0]} = {t[1]}"),
    "github-token": _chars(ALNUM, 36, 50).map(lambda v: "ghp_" + v),
    "gitlab-token": _chars(ALNUM + "_-", 20, 40).map(lambda v: "glpat-" + v),
    "slack-token": _chars(ALNUM + "-", 10, 40).map(lambda v: "xoxb-" + v),
    "google-api-key": _chars(ALNUM + "_-", 35, 35).map(lambda v: "AIza" + v),
    "stripe-key": st.tuples(st.sampled_from(["sk_live_", "sk_test_", "rk_live_"]), _chars(ALNUM, 16, 40)).map(
        "".join),
    "npm-token": _chars(ALNUM, 36, 36).map(lambda v: "npm_" + v),
    "huggingface-token": _chars(string.ascii_letters, 34, 34).map(lambda v: "hf_" + v),
    "jwt": st.tuples(*[_chars(ALNUM + "_-", 8, 30)] * 3).map(lambda t: f"eyJ{t[0]}.eyJ{t[1]}.{t[2]}"),
    "url-credentials": st.tuples(st.sampled_from(["postgres", "mysql", "redis", "https", "amqp"]),
                                 _chars(string.ascii_lowercase, 0, 10), _chars(ALNUM + "!$%@", 4, 20)).map(
        lambda t: f"{t[0]}://{t[1]}:{t[2]}@db.example.net:5432/app"),
    "auth-header": st.one_of(
        st.tuples(_any_case("bearer"), _with_one(string.ascii_letters + "._-", "._-", 16, 48)).map(
            lambda t: f"{t[0]} {t[1]}"),
        st.tuples(_any_case("bearer"), _with_one(string.ascii_letters, string.ascii_uppercase, 15, 47)).map(
            lambda t: f"{t[0]} a{t[1]}"),  # letters only, mixed case
        st.tuples(_any_case("basic"), st.tuples(_chars(ALNUM, 3, 10), _chars(ALNUM, 4, 16)).map(_basic)).map(
            lambda t: f"{t[0]} {t[1]}"),
    ),
    "password-assignment": st.tuples(st.sampled_from(["password", "pwd", "pw"]).flatmap(_any_case),
                                     _with_digit(ALNUM, 6, 20).filter(_no_placeholder)).map(
        lambda t: f"{t[0]}={t[1]}"),
    "secret-assignment": st.tuples(_any_case("api_key"), _with_digit(ALNUM, 8, 30).filter(_no_placeholder)).map(
        lambda t: f"{t[0]}: {t[1]}"),
    "pin": st.tuples(_any_case("pin"), _chars(string.digits, 4, 8)).map(lambda t: f"the {t[0]} is {t[1]}"),
    "password-phrase": st.one_of(
        st.tuples(_any_case("password"), st.sampled_from(["vpn", "wifi", "bank account"]),
                  _with_digit(ALNUM + "!#", 6, 16)).map(lambda t: f"my {t[0]} for the {t[1]} is {t[2]}"),
        st.tuples(_any_case("changed my password"), _with_digit(ALNUM + "!#", 6, 16)).map(
            lambda t: f"I {t[0]} to {t[1]} today"),
        st.tuples(st.sampled_from(["wachtwoord", "Hasło", "LÖSENORD", "adgangskode", "Пароль", "κωδικός", "パスワード",
                                   "şifre", "mật khẩu", "HASŁO"]),
                  st.sampled_from([" is ", " to ", " är ", ": ", "=", " — ", "\tjest\t"]),
                  _with_digit(ALNUM + "!#", 6, 16)).map(lambda t: f"mijn {t[0]}{t[1]}{t[2]}"),
        st.tuples(_with_digit(ALNUM + "!#", 6, 16), st.sampled_from([" as ", "  as  "]),
                  _any_case("the password")).map(lambda t: f"log in with {t[0]}{t[1]}{t[2]}"),
    ),
    "passphrase": st.one_of(
        st.tuples(_any_case("passphrase"), st.lists(_chars(string.ascii_lowercase, 3, 9), min_size=3, max_size=6)).map(
            lambda t: f"my {t[0]} is {' '.join('x' + w for w in t[1])}"),
        st.tuples(_any_case("seed phrase"), st.lists(_chars(string.ascii_lowercase, 3, 8), min_size=12,
                                                      max_size=12)).map(
            lambda t: f"the wallet {t[0]}: {' '.join('z' + w for w in t[1])}"),
    ),
    "ssn": st.tuples(_any_case("ssn"), _chars("12345", 3, 3), _chars("123456789", 2, 2), _chars("123456789", 4, 4)
                     ).map(lambda t: f"my {t[0]} is {t[1]}-{t[2]}-{t[3]}"),
    "access-code": st.tuples(st.sampled_from(["door", "alarm", "gate", "garage", "Wifi", "recovery"]),
                             _any_case("code"), _with_digit(string.digits + "#*", 4, 10)).map(
        lambda t: f"the {t[0]} {t[1]} is {t[2]}"),
    "card-number": st.tuples(st.sampled_from("3456"), _chars(string.digits, 14, 14)).map(
        lambda t: _with_luhn_digit(t[0] + t[1])),
    "iban": _chars(string.digits, 18, 18).map(_german_iban),
    "high-entropy": st.tuples(st.permutations(string.ascii_uppercase), st.permutations(string.ascii_lowercase),
                              st.permutations(string.digits)).map(
        lambda t: "".join(a + b + c for a, b, c in zip(t[0][:11], t[1][:11], t[2][:10] + ["Z"], strict=True))[:32]),
}



def _flag_kinds(text: str) -> bool:
    """The value after -a or -w holds three kinds of character among capitals, small letters, digits and symbols,
    or two with a symbol."""
    value = re.search(r" -[aw] (\S+)", text).group(1)
    symbol = any(c in "*@^!?#%+=$&~" for c in value)  # not "_", "-" or ".": names hold them (some_name, x86-64)
    kinds = any(c.isupper() for c in value) + any(c.islower() for c in value) + any(c.isdigit() for c in value) + symbol
    return kinds >= 3 or (kinds == 2 and symbol)


def _form(cls: str, name: str) -> st.SearchStrategy[str]:
    """The text of one form of tests/secretclasses.py, from a drawn seed."""
    draw = next(draw for form, _, draw in FORMS[cls] if form == name)
    return st.integers(0, 2**32 - 1).map(lambda seed: draw(random.Random(seed))[0])


# A secret and a code said in words are the key-phrase rule's, not a password's.
_SAID_KEYS = ("the shared account's secret is X btw", "the code to unlock the laptop is X")

# The rules of issue 22 (context and shape), each from the train forms it was written for.
SECRETS.update({
    # The vendors' tokens found by shape (PROMOTED) are high-entropy ones; the listed ones are sought where a digit
    # is (redact._VENDOR_TOKENS): a random part with none (1 Docker token in 100) is a known miss unless named.
    # Twitch's lower-case body is judged by its shape (redact._prefixed_token): tests/test_redact.py draws those.
    "vendor-token": st.one_of(*[_form("vendor-prefix", name) for name, split, _ in FORMS["vendor-prefix"]
                                if split == "train" and name not in PROMOTED and name != "twitch oauth:"]).filter(
        lambda t: any(c.isdigit() for c in t)),
    "key-assignment": st.one_of(_form("no-space-assignment", "ENV=value"),
                                _form("caps-key-context", "LICENSE_KEY=CAPS"),
                                _form("command-line", "PGPASSWORD= psql"),
                                _form("env-unlisted", "MAILER_PASS"), _form("session-cookie", "Set-Cookie PHPSESSID"),
                                _form("password-words", "login: jdoe / pass: X")),
    "command-line-password": st.one_of(*[_form("command-line", name) for name in (
        "curl -u user:pass", "mysql -pSECRET", "sshpass -p", "docker login -p")], *[
        # after a flag and a blank a dash starts the next flag: a password that starts with one is not sought there;
        # and after -a or -w (all, width to other commands) a password needs three kinds of character, or a symbol
        # (`_flag_password`): capitals and digits alone ("3WJCTBYCQF4") are a known miss, not sought here
        _form("command-line", name).filter(lambda t: not re.search(r" -[aw] -", t) and _flag_kinds(t))
        for name in ("redis-cli -a", "ldapsearch -w")]),
    "key-phrase": st.one_of(_form("ethereum-key", "prose metamask key"), _form("ethereum-key", "wallet key: 0x"),
                            _form("ethereum-key", "prose key no 0x"),
                            *[_form("password-words", name) for name in _SAID_KEYS]),
    "card-cvv": _form("card-cvv", "CVV: before exp"),
    "seed-phrase": _form("seed-phrase", "bare 24 in a fence"),
    "totp-key": st.one_of(_form("totp-seed", "setup key spaced caps"),
                          _form("totp-seed", "authenticator secret lower"),
                          # unnamed, a key is sought where a digit is (`_spaced_base32`)
                          _form("totp-seed", "bare spaced groups").filter(lambda t: any(c in t for c in "234567"))),
    "wrapped-key": st.one_of(_form("wrapped-key", "base64 wrapped at 24"),
                             _form("wrapped-key", "api key wrapped at 20 after name")),
})
SECRETS["url-credentials"] = st.one_of(SECRETS["url-credentials"], _form("dsn-user-key", "Sentry DSN"))
SECRETS["password-phrase"] = st.one_of(SECRETS["password-phrase"], *[
    _form(cls, name) for cls in ("password-words", "password-other-language") for name, split, _ in FORMS[cls]
    if split == "train" and name not in ("login: jdoe / pass: X", *_SAID_KEYS)])
SECRETS["ssn"] = st.one_of(SECRETS["ssn"], _form("ssn-words", "my social is"), _form("ssn-words", "soc sec #"))
SECRETS["high-entropy"] = st.one_of(SECRETS["high-entropy"], *[_form("vendor-prefix", name) for name in sorted(
    PROMOTED) if any(form == name for form, _, _ in FORMS["vendor-prefix"])])  # vendors' tokens found by shape
SECRETS["key-assignment"] = st.one_of(SECRETS["key-assignment"], _form("session-cookie", "_gitlab_session"))

# Prose that brushes against the needles and the clean stage's markers without being a secret by itself.
_NEAR = ["sk-", "sk_", "AIza", "Bearer", "BASIC", "pass", "PIN", "pin", "key", "token", "secret", "://", "@",
         "-----", "eyJ", "hf_", "xox", "gl", "=", ":", "ſ", "K", "ı", "İ", "<", "[", "HEARTBEAT", "System:", "\n",
         "\t", " is ", "42", "the ", "password", "for the vpn", "phrase", "seed words", "code", "ssn", "pw", " -p", " -a",
         "\t-w ", "wifi", " → ", " — ", "şifre", "is my ", "soc sec", "ABCD 2345 ", "~", "."]
# What the clean stage removes or splits on, for the texts its shortcut is tested on.
CLEAN_MARKERS = ["[Queued messages while agent was busy]\n\n---\nQueued #1\n", "[WebChat 2026-03-01 10:00] ",
                 "[Mon 2026-03-01 10:00 UTC] ", "<relevant-memories>I like tea</relevant-memories>", "<think>x</think>",
                 "[[reply_to_current]] ", "Read HEARTBEAT.md", "System: [2026-03-01] done\n", "NO_REPLY",
                 "[media attached: a.png]\n", "<media:image>", "MEDIA: ./a.png\n", "\r\n", "\n\n\n\n",
                 "Conversation info (untrusted metadata):\n```json\n{}\n```\n", "[message_id: 12]\n", "<@123> "]


def prose(extra: tuple[str, ...] = ()) -> st.SearchStrategy[str]:
    return st.lists(st.one_of(st.sampled_from(_NEAR + list(extra)), _chars(string.ascii_letters + " .,", 0, 12)),
                    max_size=8).map("".join)


@st.composite
def texts_with_secrets(draw: st.DrawFn, extra: tuple[str, ...] = ()) -> str:
    """Prose with one to three secrets, at least one of a rule drawn uniformly; `extra` adds words to the prose."""
    kinds = draw(st.lists(st.sampled_from(sorted(SECRETS)), min_size=1, max_size=3))
    pieces = [draw(prose(extra))]
    for kind in kinds:
        pieces.append(draw(st.sampled_from([" ", "\n", "\t", " (", ": ", "\"", ""])))
        pieces.append(draw(SECRETS[kind]))
        pieces.append(draw(st.sampled_from([" ", "\n", ".", ")", "\"", ""])))
        pieces.append(draw(prose(extra)))
    return "".join(pieces)
