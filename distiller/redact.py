"""Replace secrets with typed placeholders before text reaches the LLM or the store.

Precision matters as much as recall here: a false positive silently damages knowledge (a git SHA or a UUID in a
belief is useful), so every generic rule demands evidence of randomness or an explicit key name, and the cheap
substring gates keep plain prose off the regex engine.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterator

from distiller.textscan import contains_any

PLACEHOLDER = "[REDACTED:{}]"


@dataclass(slots=True)
class Redacted:
    """Not frozen: one is made for every scanned message, and a frozen dataclass sets each field through
    object.__setattr__, several times slower."""

    text: str
    counts: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class _Rule:
    kind: str
    gates: tuple[str, ...]
    pattern: re.Pattern[str]
    group: int = 0
    accept: Callable[[str], bool] | None = None
    lowercase_gate: bool = False


def _has_digit(value: str) -> bool:
    return any(c.isdigit() for c in value)


def _looks_random(value: str) -> bool:
    """Random tokens mix cases and digits and spread over many symbols; words, paths and hex hashes do not.

    Paths look random once joined, so only the longest slash-free stretch is judged."""
    if "/" in value:
        value = max(value.split("/"), key=len)
    if len(value) < 32:
        return False
    uppers = sum(c.isupper() for c in value)
    lowers = sum(c.islower() for c in value)
    digits = sum(c.isdigit() for c in value)
    if uppers < 2 or lowers < 2 or digits < 2:
        return False
    counts = Counter(value)
    entropy = -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())
    return entropy >= 4.3


def _is_basic_credential(value: str) -> bool:
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded and decoded.isascii()


def _bearer_token(value: str) -> bool:
    return _has_digit(value) or any(c in value for c in "._-/+=")


_PLACEHOLDER_VALUES = re.compile(
    r"(?i)^(?:\[REDACTED|\$|%|<|\{|\*{3}|x{3}|\.{3}|your[_-]|changeme$|none$|null$|true$|false$|required$|"
    r"redacted$|example|placeholder|dummy$|secret$|password$|string$|undefined$)"
)


def _password_value(value: str) -> bool:
    return len(value) >= 4 and not _PLACEHOLDER_VALUES.match(value)


def _secret_value(value: str) -> bool:
    return _password_value(value) and (_has_digit(value) or len(value) >= 16)


_ASSIGNMENT_VALUE = r"""(?:"(?!\[REDACTED)([^"\n]{4,200})"|'(?!\[REDACTED)([^'\n]{4,200})'|(?!\[REDACTED)([^\s"'`,;]{4,200}))"""

# Ordered from most to least specific: a span claimed by an earlier rule is never re-labelled by a later one.
_RULES: tuple[_Rule, ...] = (
    _Rule(
        "private-key",
        ("-----BEGIN",),
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s:,-]*)"
        ),
    ),
    _Rule("anthropic-key", ("sk-ant-",), re.compile(r"(?<![\w-])sk-ant-[A-Za-z0-9_-]{20,}")),
    _Rule("openrouter-key", ("sk-or-",), re.compile(r"(?<![\w-])sk-or-v\d-[A-Za-z0-9]{32,}")),
    _Rule(
        "openai-key",
        ("sk-",),
        re.compile(r"(?<![\w-])sk-(?!ant-|or-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
        accept=lambda v: _has_digit(v) and any(c.isalpha() for c in v[3:]),
    ),
    _Rule(
        "aws-access-key-id",
        ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA", "APKA", "ABIA", "ACCA"),
        re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA|APKA|ABIA|ACCA)[A-Z0-9]{16}\b"),
    ),
    _Rule(
        "aws-secret-key",
        ("secret",),
        re.compile(
            r"(?i)aws[_-]?secret(?:[_-]?access)?[_-]?key[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
        ),
        group=1,
        lowercase_gate=True,
    ),
    _Rule(
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b"),
    ),
    _Rule(
        "gitlab-token",
        ("gl",),
        re.compile(r"\bgl(?:pat|dt|rt|cbt|ptt|ft|soat|oas)-[A-Za-z0-9_-]{20,}"),
    ),
    _Rule(
        "slack-token",
        ("xox", "hooks.slack.com"),
        re.compile(
            r"\bxox[abposre]-[A-Za-z0-9-]{10,}|https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+"
        ),
    ),
    _Rule("google-api-key", ("AIza",), re.compile(r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])")),
    _Rule(
        "stripe-key",
        ("sk_", "rk_", "whsec_"),
        re.compile(r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}|\bwhsec_[0-9A-Za-z]{24,}"),
    ),
    _Rule("npm-token", ("npm_",), re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    _Rule("huggingface-token", ("hf_",), re.compile(r"\bhf_[A-Za-z]{34}\b")),
    _Rule(
        "jwt",
        ("eyJ",),
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    ),
    _Rule(
        "url-credentials",
        ("://",),
        re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s:/@\[\]]{1,100}:(?!\[REDACTED)([^\s@/\[\]]{1,200})@"),
        group=1,
    ),
    _Rule(
        "auth-header",
        ("earer", "EARER"),
        re.compile(r"(?i)\bbearer[ \t]+([A-Za-z0-9._~+/-]{16,}=*)"),
        group=1,
        accept=_bearer_token,
    ),
    _Rule(
        "auth-header",
        ("asic", "ASIC"),
        re.compile(r"(?i)\bbasic[ \t]+([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])"),
        group=1,
        accept=_is_basic_credential,
    ),
    _Rule(
        "password-assignment",
        ("pass", "pwd"),
        re.compile(r"(?i)(?<![A-Za-z])(?:password|passwd|passphrase|pwd)[\"']?[ \t]*[:=][ \t]*" + _ASSIGNMENT_VALUE),
        accept=_password_value,
        lowercase_gate=True,
    ),
    _Rule(
        "secret-assignment",
        ("secret", "token", "key", "credential"),
        re.compile(
            r"(?i)(?<![A-Za-z])(?:client[_-]?secret|secret(?:[_-]?key)?|(?:access|auth|api|refresh|bot)?[_-]?token|"
            r"api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?)[\"']?[ \t]*[:=][ \t]*" + _ASSIGNMENT_VALUE
        ),
        accept=_secret_value,
        lowercase_gate=True,
    ),
)

_RANDOM_TOKEN = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{32,}={0,2}")
_HIGH_ENTROPY = "high-entropy"


def _value_group(rule: _Rule, match: re.Match[str]) -> int:
    if rule.group:
        return rule.group
    if match.re.groups >= 3 and rule.kind.endswith("assignment"):
        return next(g for g in (1, 2, 3) if match.group(g) is not None)
    return 0


_DIGIT = re.compile(r"[0-9]")


def _digit_tokens(text: str) -> list[str]:
    """Tokens split at spaces and newlines, 12 characters or more, with a digit: where nearly every secret lives.

    A C-level split and length test leave the digit search to the few long tokens (most texts have none)."""
    if not _DIGIT.search(text):
        return []
    tokens = text.replace("\n", " ").split(" ")
    if max(map(len, tokens)) < 12:
        return []
    return [token for token in tokens if len(token) >= 12 and _DIGIT.search(token)]


_LOWERCASE_GATES = tuple(gate for rule in _RULES if rule.lowercase_gate for gate in rule.gates)


def _rules_in_play(text: str, tokens: list[str]) -> tuple[_Rule, ...]:
    """The rules whose gate appears, tested on the few long tokens and the rare key words instead of all of text.

    Without long tokens, "-----", "@" or "hf_", only the key-word rules can be in play: one look for any of their
    words settles most texts."""
    blob = " ".join(tokens)
    lowered = text.lower() if ("=" in text or ":" in text) else ""
    if not (blob or "-----" in text or "@" in text or "hf_" in text) and not (
        lowered and contains_any(lowered, _LOWERCASE_GATES)
    ):
        return ()
    in_play = []
    for rule in _RULES:
        if rule.lowercase_gate:
            haystack = lowered
        elif rule.kind == "private-key":
            haystack = text if "-----" in text else ""
        elif rule.kind == "url-credentials":
            haystack = text if "@" in text else ""
        elif rule.kind == "auth-header" or rule.kind == "huggingface-token":
            haystack = text if blob or "hf_" in text else ""
        else:
            haystack = blob
        if haystack and contains_any(haystack, rule.gates):
            in_play.append(rule)
    return tuple(in_play)


def _maybe_random(tokens: list[str]) -> bool:
    return any(
        _looks_random(match.group()) for token in tokens if len(token) >= 32 for match in _RANDOM_TOKEN.finditer(token)
    )


def _spans(text: str) -> Iterator[tuple[int, int, str]]:
    """Every secret span in text, specific rules first, never two spans over the same characters."""
    taken: list[tuple[int, int]] = []

    def free(start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e in taken)

    tokens = _digit_tokens(text)
    if not tokens and not ("=" in text or ":" in text or "@" in text or "-----" in text or "hf_" in text):
        return
    for rule in _rules_in_play(text, tokens):
        for match in rule.pattern.finditer(text):
            group = _value_group(rule, match)
            value = match.group(group)
            if rule.accept is not None and not rule.accept(value):
                continue
            start, end = match.span(group)
            if free(start, end):
                taken.append((start, end))
                yield start, end, rule.kind
    if _maybe_random(tokens):
        for match in _RANDOM_TOKEN.finditer(text):
            start, end = match.span()
            if _looks_random(match.group()) and free(start, end):
                taken.append((start, end))
                yield start, end, _HIGH_ENTROPY


def redact(text: str) -> Redacted:
    spans = sorted(_spans(text))
    if not spans:
        return Redacted(text, ())
    pieces: list[str] = []
    cursor = 0
    for start, end, kind in spans:
        pieces.append(text[cursor:start])
        pieces.append(PLACEHOLDER.format(kind))
        cursor = end
    pieces.append(text[cursor:])
    counts = Counter(kind for _, _, kind in spans)
    return Redacted("".join(pieces), tuple(sorted(counts.items())))


def find_secret(text: str) -> str | None:
    """The type of the earliest secret in text: the store's last guard refuses a belief that still carries one."""
    first = min(_spans(text), default=None)
    return first[2] if first else None
