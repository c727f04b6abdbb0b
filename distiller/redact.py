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
import string
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterator

from distiller.textscan import contains_any, finder

PLACEHOLDER = "[REDACTED:{}]"


@dataclass(slots=True)
class Redacted:
    """Not frozen: one is made for every scanned message, and a frozen dataclass sets each field through
    object.__setattr__, several times slower."""

    text: str
    counts: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class _Rule:
    """One kind of secret. `needles` are literal strings of which every span the rule reports contains one
    (searched in the lowercased text when `ignore_case`, whose pattern then folds ASCII case only); a rule without
    needles runs on every text. The shortcut that skips rules is derived from these alone."""

    kind: str
    needles: tuple[str, ...]
    pattern: re.Pattern[str]
    group: int = 0
    accept: Callable[[str], bool] | None = None
    ignore_case: bool = False
    possible: Callable[[bytes], bool] | None = None


def _has_digit(value: str) -> bool:
    return any(c.isdigit() for c in value)


def _looks_random(value: str) -> bool:
    """Random tokens mix cases and digits and spread over many symbols; words, paths and hex hashes do not.

    Paths look random once joined, so only the longest slash-free stretch is judged, unless the value has the
    shape of an AWS secret access key (40 characters of base64, a few of them slashes)."""
    if len(value) == 40 and value.count("/") <= 4 and _mixes_randomly(value, min_digits=1):
        return True
    if "/" in value:
        value = max(value.split("/"), key=len)
    return _mixes_randomly(value)


def _mixes_randomly(value: str, min_digits: int = 2) -> bool:
    if len(value) < 32:
        return False
    uppers = sum(c.isupper() for c in value)
    lowers = sum(c.islower() for c in value)
    digits = sum(c.isdigit() for c in value)
    if uppers < 2 or lowers < 2 or digits < min_digits:
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
    """A token mixes digits, symbols or cases, or is too long to be a word ("Bearer authentication" is not one)."""
    return (_has_digit(value) or any(c in value for c in "._-/+=") or not (value.islower() or value.isupper())
            or len(value) >= 24)


def _card_number(value: str) -> bool:
    """A payment card's 15 or 16 digits pass the Luhn check; 13-digit millisecond timestamps are never taken."""
    digits = value.replace(" ", "").replace("-", "")
    return len(digits) in (15, 16) and digits[0] in "3456" and len(set(digits)) > 1 and _luhn(digits)


def _iban(value: str) -> bool:
    compact = value.replace(" ", "")
    rearranged = compact[4:] + compact[:4]
    return 15 <= len(compact) <= 34 and int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def _changed_password(value: str) -> bool:
    """After "changed my password to", a word is a description ("something longer"); a password mixes kinds."""
    return _password_value(value) and (_has_digit(value) or not value.isalnum()
                                       or not (value.islower() or value.isupper()))


_PLACEHOLDER_VALUES = re.compile(
    r"(?i)^(?:\[REDACTED|\$|%|<|\{|\*{3}|x{3}|\.{3}|your[_-]|changeme$|none$|null$|true$|false$|required$|"
    r"redacted$|example|placeholder|dummy$|secret$|password$|string$|undefined$)"
)


def _password_value(value: str) -> bool:
    return len(value) >= 4 and not _PLACEHOLDER_VALUES.match(value)


def _secret_value(value: str) -> bool:
    return _password_value(value) and (_has_digit(value) or len(value) >= 16)


_ASSIGNMENT_VALUE = r"""(?:"(?!\[REDACTED)([^"\n]{4,200})"|'(?!\[REDACTED)([^'\n]{4,200})'|(?!\[REDACTED)([^\s"'`,;]{4,200}))"""

# Words that follow "the password is" without being one.
_NOT_A_PASSWORD = frozenset("""
a an the not no too very so wrong right correct incorrect invalid valid expired required optional weak strong long
short same different set reset changed saved stored protected encrypted hashed hidden secure safe easy hard simple
complex complicated forgotten lost missing empty blank unknown it that this what here there below above attached
needed mandatory necessary case-sensitive still now also just being in on at for of to my your our their his her
working broken fine ok okay good bad stolen leaked compromised shared written known sent generated
""".split())


def _phrase_password(value: str) -> bool:
    return value.casefold() not in _NOT_A_PASSWORD and _password_value(value)


def _security_answer(value: str) -> bool:
    """An answer, not a word about it ("the security answer is wrong")."""
    return value.split()[0].casefold() not in _NOT_A_PASSWORD


# Words of prose around a passphrase ("it is stored in my manager"), which a passphrase of random words lacks.
_PROSE_WORDS = frozenset("""
a an the in on at of for to my your our is it and or with from by as that this me i you he she we they us them his
her its their be are was were have has had do does did not no so but if when than then there here
""".split())


def _passphrase(value: str) -> bool:
    """Several words: a passphrase or a wallet's seed words, unless it reads as a description of one."""
    words = value.casefold().split()
    if len(words) < 2 or not _password_value(value):
        return False
    if words[0] not in _NOT_A_PASSWORD and not _PROSE_WORDS.intersection(words):
        return True
    return len(words) >= 4 and not _PROSE_WORDS.intersection(words)


def _social_security_number(value: str) -> bool:
    digits = value.replace("-", "").replace(" ", "")
    return digits[:3] not in ("000", "666") and digits[3:5] != "00" and digits[5:] != "0000"


_DIGITS = tuple("0123456789")


def _run_of(kept: str, length: int, ignored: str = "") -> Callable[[bytes], bool]:
    """Whether an ASCII text's bytes hold `length` characters of `kept` in a row, with any of `ignored` between
    them (not counted): a shape every span of a pattern has. `kept` holds no blank, which splits the runs."""
    table = bytes(code if chr(code) in kept else 32 for code in range(256))
    dropped = ignored.encode()

    def holds(data: bytes) -> bool:
        return max(map(len, data.translate(table, dropped).split()), default=0) >= length

    return holds


_CARD_DIGITS = _run_of(string.digits, 15, " -")  # a card number: 15 or 16 digits, a blank or dash between any two
_IBAN_RUN = _run_of(string.ascii_uppercase + string.digits, 12, " ")  # two capitals, two digits, 8+ more, blanks
_TOKEN_RUN = _run_of(string.ascii_letters + string.digits + "+/_-", 32)  # a high-entropy token's 32 characters


def _assigns(data: bytes) -> bool:
    """An assignment has its `:` or `=`."""
    return b":" in data or b"=" in data


_HIGH_ENTROPY = "high-entropy"
_PHRASE_LEAD = r"(?:\s+(?:for|to|on|of|at)\s+(?:the\s+|my\s+|our\s+|your\s+)?[\w.@-]{1,40}(?:\s+[\w.@-]{1,40})?)?"
_PHRASE_VERB = r"\s*(?:\s(?:is|was|are|is\s+now|is\s+still|will\s+be)(?:\s*[:=])?\s|[:=])\s*[\"'`]?"

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
    _Rule("openrouter-key", ("sk-or-v",), re.compile(r"(?<![\w-])sk-or-v\d-[A-Za-z0-9]{32,}")),
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
            r"(?ai)aws[_-]?secret(?:[_-]?access)?[_-]?key[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
        ),
        group=1,
        ignore_case=True,
    ),
    _Rule(
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b"),
    ),
    _Rule(
        "gitlab-token",
        ("glpat-", "gldt-", "glrt-", "glcbt-", "glptt-", "glft-", "glsoat-", "gloas-"),
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
        ("sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"),
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
        re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s:/@\[\]]{0,100}:(?!\[REDACTED)([^\s/\[\]]{1,200})"
                   r"@(?![^\s/]*@)"),  # the password runs to the last @ before the host: it may hold @ itself
        group=1,
    ),
    _Rule(
        "auth-header",
        ("bearer",),
        re.compile(r"(?ai)\bbearer[ \t]+([A-Za-z0-9._~+/-]{16,}=*)"),
        group=1,
        accept=_bearer_token,
        ignore_case=True,
    ),
    _Rule(
        "auth-header",
        ("basic",),
        re.compile(r"(?ai)\bbasic[ \t]+([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])"),
        group=1,
        accept=_is_basic_credential,
        ignore_case=True,
    ),
    _Rule(
        "passphrase",
        ("password", "passwd", "phrase", "mnemonic", "seed"),
        re.compile(
            r"(?ai)\b(?:pass[ \t]*phrase|password|passwd|(?:seed|recovery|secret|wallet|mnemonic)[ \t]+phrase|mnemonic|"
            r"seed[ \t]+words)"
            + _PHRASE_LEAD + _PHRASE_VERB
            + r"(?!\[REDACTED)([^\s\"'`.,;:!?()\[\]{}<>][^\n\"'`.,;:!?()\[\]{}<>]{1,300}[^\s\"'`.,;:!?()\[\]{}<>])"
        ),
        group=1,
        accept=_passphrase,
        ignore_case=True,
    ),
    _Rule(
        "password-assignment",
        ("passw", "passp", "pw"),
        re.compile(r"(?ai)(?<![A-Za-z])(?:password|passwd|passphrase|pwd|pw)[\"']?[ \t]*[:=][ \t]*" + _ASSIGNMENT_VALUE),
        accept=_password_value,
        ignore_case=True,
        possible=_assigns,
    ),
    _Rule(
        "secret-assignment",
        ("secret", "token", "key", "credential"),
        re.compile(
            r"(?ai)(?<![A-Za-z])(?:client[_-]?secret|secret(?:[_-]?key)?|(?:access|auth|api|refresh|bot)?[_-]?token|"
            r"api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?)[\"']?[ \t]*[:=][ \t]*" + _ASSIGNMENT_VALUE
        ),
        accept=_secret_value,
        ignore_case=True,
    ),
    _Rule(
        "pin",
        ("pin",),
        re.compile(r"(?ai)\bpin(?:[ \t]+(?:code|number))?" + _PHRASE_LEAD + _PHRASE_VERB + r"(\d{3,12})(?!\w)"),
        group=1,
        ignore_case=True,
    ),
    _Rule(
        "ssn",
        ("ssn", "social"),
        re.compile(r"(?ai)\b(?:ssn|social[ \t]+(?:security|insurance)(?:[ \t]+(?:number|no\.?|#))?)[^\d\n]{0,24}?"
                   r"(?<!\d)(\d{3}[- ]?\d{2}[- ]?\d{4})(?![\d-])"),
        group=1,
        accept=_social_security_number,
        ignore_case=True,
    ),
    _Rule(
        "access-code",
        ("code",),
        re.compile(
            r"(?ai)\b(?:door|alarm|gate|garage|safe|lock|locker|entry|building|keypad|security|access|wi-?fi|"
            r"recovery|backup|verification|2fa|one-time)[ \t]+codes?" + _PHRASE_LEAD + _PHRASE_VERB
            + r"(?!\[REDACTED)([A-Za-z0-9#*-]{2,39}[A-Za-z0-9#*])(?![\w-])"
        ),
        group=1,
        accept=_has_digit,
        ignore_case=True,
    ),
    _Rule(
        "security-answer",
        ("maiden", "security", "secret"),
        re.compile(
            r"(?ai)\b(?:(?:(?:my|his|her|their|your)[ \t]+)?(?:mother|mom|mum)(?:['’]s)?[ \t]+maiden[ \t]+name|"
            r"(?:security|secret)[ \t]+(?:question[ \t]+)?answers?|"
            r"answer[ \t]+(?:to|for)[ \t]+(?:my|the|our|a)[ \t]+(?:security|secret)[ \t]+question"
            r"(?:[ \t]+[\w'’-]{1,20}){0,6}?)" + _PHRASE_VERB
            + r"(?!\[REDACTED)([^\W\d_][\w'’-]{1,39}(?:[ \t][A-Z][\w'’-]{1,39})?)"
        ),
        group=1,
        accept=_security_answer,
        ignore_case=True,
    ),
    _Rule(
        "password-phrase",
        ("passw", "passc", "passp", "pass ", "pass\t"),
        re.compile(
            r"(?ai)\b(?:password|passcode|passphrase|passwd|pass[ \t]+code)" + _PHRASE_LEAD + _PHRASE_VERB
            + r"(?!\[REDACTED)([^\s\"'`]{2,63}[^\s\"'`.,;:!?)\]])"
        ),
        group=1,
        accept=_phrase_password,
        ignore_case=True,
    ),
    _Rule(
        "password-phrase",
        ("passw", "passc", "passp"),
        re.compile(
            r"(?ai)\b(?:changed|set|reset|updated|switched)[ \t]+(?:my[ \t]+|the[ \t]+|our[ \t]+)?"
            r"(?:password|passcode|passphrase|passwd)(?:[ \t]+(?:for|on|of|at)[ \t]+[\w.@-]{1,40})?[ \t]+to[ \t]+"
            r"[\"'`]?(?!\[REDACTED)([^\s\"'`]{3,63}[^\s\"'`.,;:!?)\]])"
        ),
        group=1,
        accept=_changed_password,
        ignore_case=True,
    ),
    _Rule("card-number", _DIGITS, re.compile(r"(?<![0-9-])[0-9](?:[ -]?[0-9]){14,15}(?![0-9-])"), accept=_card_number,
          possible=_CARD_DIGITS),
    _Rule("iban", _DIGITS, re.compile(r"(?a)\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b"), accept=_iban,
          possible=_IBAN_RUN),
    _Rule(_HIGH_ENTROPY, _DIGITS, re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{32,}={0,2}"),
          accept=_looks_random, possible=_TOKEN_RUN),
)


def _family(rule: _Rule) -> tuple[bool, bool]:
    """Rules whose needles are sought alike (in the text or lower-cased; the digits, which most texts hold, apart):
    a text without any needle of a family skips all its rules at once."""
    return rule.ignore_case, rule.needles == _DIGITS


_FAMILIES = tuple(dict.fromkeys(_family(rule) for rule in _RULES if rule.needles))
_FAMILY_NEEDLES = tuple(
    (family[0], tuple(dict.fromkeys(n for rule in _RULES if rule.needles and _family(rule) == family
                                    for n in rule.needles)))
    for family in _FAMILIES
)
_FAMILY_BITS = tuple(
    (1 << n, ignore_case, finder(needles)) for n, (ignore_case, needles) in enumerate(_FAMILY_NEEDLES)
)
_ALWAYS = any(not rule.needles for rule in _RULES)


@lru_cache(maxsize=None)
def _candidates(families: int) -> tuple[tuple[_Rule, bool], ...]:
    """The rules of those families (bit n for family n) and every rule without needles, in order, each with whether
    its own needles must still be sought (not when they are all its family's)."""
    chosen = []
    for rule in _RULES:
        if not rule.needles:
            chosen.append((rule, False))
            continue
        family = _FAMILIES.index(_family(rule))
        if families >> family & 1:
            chosen.append((rule, tuple(dict.fromkeys(rule.needles)) != _FAMILY_NEEDLES[family][1]))
    return tuple(chosen)


def _value_group(rule: _Rule, match: re.Match[str]) -> int:
    if rule.group:
        return rule.group
    if match.re.groups >= 3 and rule.kind.endswith("assignment"):
        return next(g for g in (1, 2, 3) if match.group(g) is not None)
    return 0


def _rules_in_play(text: str) -> tuple[_Rule, ...]:
    """The rules whose needles occur in text and whose shape it may hold: the others cannot report a span."""
    lowered = text.lower()
    families = 0
    for bit, ignore_case, found in _FAMILY_BITS:
        if found(lowered if ignore_case else text):
            families |= bit
    if not families and not _ALWAYS:
        return ()
    data = text.encode() if text.isascii() else None
    in_play = []
    for rule, seek in _candidates(families):
        if seek and not contains_any(lowered if rule.ignore_case else text, rule.needles):
            continue
        if data is None or rule.possible is None or rule.possible(data):
            in_play.append(rule)
    return tuple(in_play)


def _spans(text: str, rules: tuple[_Rule, ...]) -> Iterator[tuple[int, int, str]]:
    """Every secret span the rules find in text, earlier rules first, never two spans over the same characters."""
    taken: list[tuple[int, int]] = []

    def free(start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e in taken)

    for rule in rules:
        for match in rule.pattern.finditer(text):
            group = _value_group(rule, match)
            value = match.group(group)
            if rule.accept is not None and not rule.accept(value):
                continue
            start, end = match.span(group)
            if free(start, end):
                taken.append((start, end))
                yield start, end, rule.kind


def _redacted(text: str, rules: tuple[_Rule, ...]) -> Redacted:
    spans = sorted(_spans(text, rules))
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


def redact_every_rule(text: str) -> Redacted:
    """`redact` without the needle shortcut: the plain path it is proven equal to."""
    return _redacted(text, _RULES)


def redact(text: str) -> Redacted:
    rules = _rules_in_play(text)
    return _redacted(text, rules) if rules else Redacted(text, ())


def find_secret(text: str) -> str | None:
    """The type of the earliest secret in text: the rules in play find every span all the rules find (the needle
    shortcut's property test)."""
    first = min(_spans(text, _rules_in_play(text)), default=None)
    return first[2] if first else None


# The last guard is stricter than redaction: a belief is short, so refusing one that merely looks like it carries a
# credential costs little, where redacting a message that looks like one would damage what it says.
_MARKER = re.compile(r"(?i)\[\s*REDACTED|\bREDACTED\s*:")
_KEY_PREFIX = re.compile(
    r"(?<![A-Za-z0-9])(?:sk-ant-|sk-or-|sk-proj-|sk-|sk_live_|sk_test_|rk_live_|rk_test_|whsec_|gh[pousr]_|"
    r"github_pat_|gl(?:pat|dt|rt|cbt|ptt|ft|soat|oas)-|xox[abposre]-|AIza|AKIA|ASIA|npm_|hf_|eyJ)[A-Za-z0-9_-]{8,}"
)
_CREDENTIAL_WORDS = (r"(?:pin|pin code|pin number|passwords?|passcodes?|passphrases?|passwd|cvv|cvc|cvv2|"
                     r"security code|(?:bank |credit |debit )?card(?: number)?|account(?: number)?|routing number|"
                     r"sort code|iban|social security number|ssn|tax id|passport number)")
_CREDENTIAL_FACT = re.compile(
    r"(?ai)\b" + _CREDENTIAL_WORDS + r"\b[^.;\n]{0,40}?(?:\bis\b|\bwas\b|\bare\b|:|=|\bof\b|\bending in\b)"
    r"\s*[\"'`]?(?=[^\s\"'`]*\d)[^\s\"'`]{3,}"
)
_DIGIT_RUN = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){3,7}(?: ?[A-Z0-9]{1,4})?\b")


def _luhn(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char) * (2 if index % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


def refusal(text: str) -> str | None:
    """Why the store must refuse a belief with this text (statement or quote), or None: a secret any rule finds
    (every rule tried), a redaction marker (a belief about a redacted thing is no belief), a known key prefix with
    eight or more key characters, a credential stated in plain words, or a card or IBAN number."""
    if _MARKER.search(text):
        return "redaction-marker"
    secret = find_secret(text)
    if secret is not None:
        return secret
    if _KEY_PREFIX.search(text):
        return "key-prefix"
    if _CREDENTIAL_FACT.search(text):
        return "credential"
    for match in _DIGIT_RUN.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if _luhn(digits) and len(set(digits)) > 1:
            return "card-number"
    if _IBAN.search(text):
        return "account-number"
    return None
