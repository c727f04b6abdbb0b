"""Replace secrets with typed placeholders before text reaches the LLM or the store.

Precision matters as much as recall here: a false positive silently damages knowledge (a git SHA or a UUID in a
belief is useful), so every generic rule demands evidence of randomness or an explicit key name, and the cheap
substring gates keep plain prose off the regex engine.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import re
import string
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache, lru_cache
from itertools import compress, pairwise
from pathlib import Path

from distiller.textscan import anchored, trie

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
    needles runs on every text. `possible` is a shape every match has, asked of the UTF-8 bytes of the whole text
    (of any text: the patterns' classes are ASCII, so a match's bytes are its characters). The shortcut that skips
    rules is derived from these alone."""

    kind: str
    needles: tuple[str, ...]
    pattern: re.Pattern[str]
    group: int = 0
    accept: Callable[[str], bool] | None = None
    ignore_case: bool = False
    possible: Callable[[bytes], bool] | None = None
    check: Callable[[re.Match[str]], bool] | None = None  # judges the whole match: the name, the text around


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
    if "." in value:  # dot-separated parts (a Discord token, an Azure client secret) are judged joined
        parts = value.split(".")
        longest = max(parts, key=len)
        if len(longest) >= 32 and _mixes_randomly(longest):
            return True
        long_parts = [p for p in parts if len(p) >= 8]
        if any(_random_hex(p) for p in parts) and any(len(p) >= 12 and _switches(p) >= 4 and _has_digit(p)
                                                     and not _WORD_PART.fullmatch(p) for p in parts):
            return True  # an id and a hex secret joined (Airtable's "pat…" + "." + 64 hex)
        if len(longest) < 16 or sum(bool(_WORD_PART.fullmatch(p)) for p in long_parts) * 2 >= len(long_parts):
            return False
        value = "".join(parts)
    return _mixes_randomly(value) or _prefixed_hex(value)


# A vendor's short prefix, then 32+ hex digits ("dapi…", "pul-…"): the prefix holds a letter no hex digit is, or
# ends in a separator, so a hash that starts with letters is not taken.
_PREFIXED_HEX = re.compile(r"([A-Za-z]{2,10}?)([_-]?)([0-9a-f]{32,})")
_WORD_PART = re.compile(r"[A-Za-z][a-z]+(?:[A-Z][a-z]+)*[0-9]{0,2}|[a-z0-9]+|[A-Z0-9]+")


def _random_hex(value: str) -> bool:
    """32 or more hex digits with letters and digits among them: a key or a hash, never a word."""
    return len(value) >= 32 and _HEX.fullmatch(value) is not None and _has_digit(value) and not value.isdigit()


_HEX = re.compile(r"[0-9a-f]+|[0-9A-F]+")


def _prefixed_hex(value: str) -> bool:
    match = _PREFIXED_HEX.fullmatch(value)
    if match is None:
        return False
    prefix, separator, body = match.groups()
    if prefix.lower() in _HASH_WORDS:  # "trace-…", "commit-…", "build_…": a hash or an id, named
        return False
    return ((bool(separator) or any(c > "f" for c in prefix.lower())) and _has_digit(body)
            and any(c.isalpha() for c in body))


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


# Card numbers the payment processors publish for tests (Stripe's, Braintree's, Adyen's and PayPal's docs): public
# test data that no issuer gives a real card, quoted in every integration guide ("use the test card 4242 4242…").
_TEST_CARDS = frozenset("""
4242424242424242 4000056655665556 5555555555554444 2223003122003222 5200828282828210 5105105105105100
378282246310005 371449635398431 6011111111111117 6011000990139424 3056930009020004 36227206271667
3566002020360505 6200000000000005 4111111111111111 4012888888881881 4000000000000002 4000000000009995
5431111111111111 4000000000000077 4000000000003220 4000002500003155 4000000000000069 4000000000000127
4000000000000119 4000000000000101 378734493671000 6011000000000004 5425233430109903 2222420000001113
""".split())


def _card_number(value: str) -> bool:
    """A payment card's 15 or 16 digits pass the Luhn check; 13-digit millisecond timestamps are never taken."""
    digits = value.replace(" ", "").replace("-", "")
    return len(digits) in (15, 16) and digits[0] in "3456" and len(set(digits)) > 1 and _luhn(digits)


_TEST_SAID = re.compile(r"(?i)\b(?:test(?:ing)?|sandbox|stripe|docs?|documentation|example)\b")


def _real_card(match: re.Match[str]) -> bool:
    """Not a processor's published test number said as one ("use the test card 4242…"): "my card is 4111…" is
    taken, a test number quoted as a real one costs nothing to redact."""
    digits = match.group().replace(" ", "").replace("-", "")
    return digits not in _TEST_CARDS or _TEST_SAID.search(match.string, max(0, match.start() - 60),
                                                           match.start()) is None


def _iban(value: str) -> bool:
    compact = value.replace(" ", "")
    rearranged = compact[4:] + compact[:4]
    return 15 <= len(compact) <= 34 and int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def _changed_password(value: str) -> bool:
    """After "changed my password to", a word is a description ("something longer"); a password mixes kinds."""
    return _password_value(value) and (_has_digit(value) or not value.isalnum()
                                       or not (value.islower() or value.isupper()))


_PLACEHOLDER_VALUES = re.compile(
    r"(?i)^(?:\[REDACTED|\$|%\w+%$|%\(\w+\)|%[sd]$|<|\{|\*{3}|x{3,}(?![a-wyz0-9])|\.{3}|your[_-]|changeme$|none$|null$|true$|"
    r"false$|required$|\([a-z ]+\)?$|"
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
printed taped located kept listed included given provided displayed shown visible available inside behind underneath
somewhere elsewhere
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


# Other countries' numbers for a person (the US SSN is its own rule): the UK's NI number, Canada's SIN, India's
# Aadhaar, Spain's DNI/NIE, Brazil's CPF, France's NIR, the Netherlands' BSN, Poland's PESEL, Mexico's CURP,
# Australia's TFN, Italy's codice fiscale, Germany's Steuer-ID, the Nordics' personal numbers. Their acronyms
# only in capitals ("SIN", not "sin").
_NATIONAL_ID_NAMES = (
    r"(?-i:NINO|NI(?= (?:number|no))|(?:SIN|NIE|NIF|NSS|NIR)(?=[ \t:#])|DNI|CPF|BSN|TFN|CURP|PESEL|PPSN|AHV)|aadhaa?r|"
    r"national (?:insurance|id(?:entity)?|identification)|social insurance|tax file|"
    r"num[ée]ro de s[ée]cu(?:rit[ée] sociale)?|s[ée]curit[ée] sociale|carte vitale|"
    r"personnummer|personnummeret|f[øo]dselsnummer|henkil[öo]tunnus|burgerservicenummer|codice fiscale|"
    r"steuer-?id(?:entifikationsnummer)?|steueridentifikationsnummer|c[ée]dula|documento de identidad|"
    r"identity card|id card|passport"
)
_NATIONAL_ID_FIRST = "nNsSdDcCbBtTpPaAiIfFvVhH"  # the first letters of the names, to skip to


_SIX_DIGITS = re.compile(r"[0-9](?:[ .]?[0-9]){5}")  # the rule's shape (`possible`): six digits, blanks or dots between


def _national_id(value: str) -> bool:
    """8 to 15 digits (a year, a price, a count are shorter), or the UK's two letters, six digits and a letter; six
    of them in a row, blanks or dots between (what the rule is sought by)."""
    digits = sum(c.isdigit() for c in value)
    return (8 <= digits <= 15 or digits == 6 and value[:2].isalpha() and value[-1].isalpha()) and bool(
        _SIX_DIGITS.search(value))


def _code_list(value: str) -> bool:
    """Codes, not a list of words: two or more hold a digit."""
    return sum(_has_digit(code) for code in value.split()) >= 2


_PGPASS_SHAPE = re.compile(rb":(?:[0-9]{1,5}|\*):[^\s:]+:[^\s:]+:[^\s:]{4,}(?!\S)").search  # its line's shape
_HOST_LINE = re.compile(r"(?a)[ \t]*(?:[\w.-]+|\*)")


def _pgpass_host(match: re.Match[str]) -> bool:
    """A .pgpass line starts with its host (or "*") before the port's colon."""
    text = match.string
    return _HOST_LINE.fullmatch(text, text.rfind("\n", 0, match.start()) + 1, match.start()) is not None


def _key_bytes(value: str) -> bool:
    """32 or 64 numbers, each a byte, of a random key's spread (half of them distinct, one over 127), not a
    histogram of counts."""
    numbers = [int(n) for n in re.findall(r"\d+", value)]
    return (len(numbers) in (32, 64) and max(numbers) <= 255 and max(numbers) > 127
            and len(set(numbers)) * 2 >= len(numbers))


_DIGITS = tuple("0123456789")
_BLANKS = (" ", "\t", "\n")  # a run of words holds one


@cache
def _marking(kept: str, ignored: str) -> tuple[bytes, bytes]:
    """The translation that makes each `kept` byte an "a" and any other a blank, and the bytes it removes."""
    return bytes(97 if chr(code) in kept else 32 for code in range(256)), ignored.encode()


@dataclass(frozen=True, eq=False)
class _Run:
    """A shape every span of a pattern has: `run` is `length` a's, sought in the text's UTF-8 bytes marked by
    `marking` (`ignored` bytes removed, `kept` ones made "a"): that many kept characters in a row, with any of the
    ignored ones between them (not counted). One search in the marked bytes, no split into runs (3 times quicker);
    `_rules_in_play` marks a text once for all the runs of the same characters."""

    marking: tuple[bytes, bytes]
    run: bytes

    def __call__(self, data: bytes) -> bool:
        table, dropped = self.marking
        return data.translate(table, dropped).find(self.run) >= 0


def _run_of(kept: str, length: int, ignored: str = "") -> _Run:
    return _Run(_marking(kept, ignored), b"a" * length)


_CARD_DIGITS = _run_of(string.digits, 15, " -")  # a card number: 15 or 16 digits, a blank or dash between any two
_TOTP_RUN = _run_of(string.ascii_uppercase + string.digits, 24, " ")  # six groups of four base32 capitals
_IBAN_RUN = _run_of(string.ascii_uppercase + string.digits, 12, " ")  # two capitals, two digits, 8+ more, blanks
# Key characters of every kind (base64, URL-safe, vendors' dots, colons and tildes): one run length per text serves
# the random-token, vendor-token and wrapped-key rules.
_KEY_CHARS = string.ascii_letters + string.digits + "+/_-.:~="
_TOKEN_RUN = _run_of(_KEY_CHARS, 32)  # a high-entropy token's 32 characters


def _has_dash(data: bytes) -> bool:
    """A command-line flag has its dash."""
    return data.find(b"-") >= 0


def _assigns(data: bytes) -> bool:
    """An assignment has its `:` or `=`."""
    return data.find(b":") >= 0 or data.find(b"=") >= 0


# --- secrets found by context and shape: a name that says key, secret, token, password… then a value judged by shape

# The words a key's name ends in (its last part, split at _ . - and camelCase), and whole names that end in a key
# word without a separator ("PGPASSWORD", "phpsessid", "accountkey").
_KEY_HEADS = frozenset("""
key secret secrets token password passwords passwd pass pwd pw passphrase passcode credential credentials cred creds
auth authorization sig signature signing sas apikey accesskey secretkey privatekey sessionid sessid sid cookie
salt pepper otp totp jwt bearer mnemonic session hmac seed
""".split())
_JOINED_HEADS = ("password", "passwd", "secret", "token", "passphrase", "credentials", "sessionid", "sessid",
                 "apikey", "accesskey", "secretkey", "privatekey", "accountkey", "signingkey", "masterkey",
                 "licensekey", "authkey", "appkey", "clientkey", "encryptionkey", "sharedaccesskey")
# A part that makes the name say what the key is not: public, a count, a database's key column, a fingerprint.
_NOT_SECRET_PARTS = frozenset("""
public pub publishable cache primary foreign sort partition idempotency fingerprint max min num total count
""".split())
# Trailing parts that say how the value is written, not what it is ("SECRET_B64", "API_KEY_2").
_NAME_SUFFIXES = frozenset("b64 base64 value val raw str hex enc encoded prod dev live test old new data".split())
_PASSWORD_HEADS = frozenset("password passwords passwd pass pwd pw passphrase passcode".split())
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NAME_CHARS = frozenset(string.ascii_letters + string.digits + "_.-")


def _name_parts(name: str) -> list[str]:
    parts = [p.lower() for chunk in re.split(r"[_.\-\s]+", name) for p in _CAMEL.split(chunk) if p]
    while len(parts) > 1 and (parts[-1] in _NAME_SUFFIXES or parts[-1].isdigit()):
        parts.pop()
    return parts


def _key_name(name: str) -> str | None:
    """'password' when a name says it holds a password, 'key' when another secret, else None."""
    parts = _name_parts(name)
    if not parts or _NOT_SECRET_PARTS.intersection(parts):
        return None
    head = parts[-1]
    if head == "id" and len(parts) > 1 and parts[-2] in ("session", "sess"):
        return "key"
    if head not in _KEY_HEADS and not (len(parts) == 1 and head.endswith(_JOINED_HEADS)):
        return None
    return "password" if head in _PASSWORD_HEADS or head.endswith(("password", "passwd")) else "key"


def _name_before(match: re.Match[str], end: int) -> str:
    """The whole name whose end is at `end`: the key word the match starts with, and the name characters before."""
    text = match.string
    start = match.start()
    while start > 0 and text[start - 1] in _NAME_CHARS:
        start -= 1
    return text[start:end].strip("\"' \t")


_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_DATE_LIKE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+Z?)?|[\d.,:_ /+-]+")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}")
# Words joined by nothing (camelCase), "_", "-", "." or a blank. Written so that each character has one way to
# match: a part goes on with a capital or with a joiner and a letter, never with a small letter the run before it
# could have taken. The plain form, `[A-Za-z][a-z]*(?:[_\-. ]?[A-Za-z][a-z]*)*`, matches the same strings but
# tries every split of a run of small letters into parts: on a value that is words but one (a digit in the
# tenth), fullmatch took minutes (tests/test_redact.py holds both to the same answers).
_WORDS = re.compile(r"[A-Za-z][a-z]*(?:(?:[_\-. ][A-Za-z]|[A-Z])[a-z]*)*")
_FILE_SUFFIX = re.compile(r"(?i)\.(?:pem|key|crt|cer|p12|pfx|json|ya?ml|txt|env|conf|cfg|ini|toml|gpg|asc|pub)$")


def _base64_like(value: str) -> bool:
    """Base64 that happens to start with a slash rather than a path: padding or '+', or a part of 16 or more
    characters that mixes cases and digits without a dot."""
    return ("+" in value or value.endswith("=") or any(
        len(part) >= 16 and "." not in part and _has_digit(part) and not (part.islower() or part.isupper())
        for part in value.split("/")))


def _secret_shape(value: str, password: bool) -> bool:
    """A value that can be a secret: not a placeholder, a path, a URL, an e-mail address, a number, a date or a
    word. A password may be any such string of 4 or more characters that is no placeholder; any other key needs
    8 or more characters that mix letters with digits, or mix cases past a run of words, or are capitals only
    (16 or more). URL-encoded values are judged decoded (`%2B…` is a value, not a placeholder)."""
    value = value.strip()
    if _PERCENT.search(value):
        value = urllib.parse.unquote(value)
    if len(value) < 4 or _PLACEHOLDER_VALUES.match(value) or "${" in value or "{{" in value:
        return False
    if "://" in value or _FILE_SUFFIX.search(value) or (value.startswith(("/", "./", "../", "~/"))
                                                         and not _base64_like(value)):
        return False
    if _EMAIL.fullmatch(value) or len(set(value)) == 1:
        return False
    if password:
        return value.casefold() not in _NOT_A_PASSWORD
    if len(value) < 8 or _DATE_LIKE.fullmatch(value):
        return False
    letters = sum(c.isalpha() for c in value)
    digits = sum(c.isdigit() for c in value)
    if letters >= 2 and digits >= 2:
        return True
    if value.isupper() and len(value) >= 16 and value.isalnum():  # capitals in one run (and a digit or so)
        return True
    if _WORDS.fullmatch(value):
        return False
    return letters >= 2 and sum(c.isupper() for c in value) >= 2 and sum(c.islower() for c in value) >= 2


def _name_start(match: re.Match[str]) -> int:
    """Where the name that ends in the match's name group starts (the group may start at its key word)."""
    start = match.start("name")
    while start and match.string[start - 1] in _NAME_CHARS:
        start -= 1
    return start


def _named_secret(match: re.Match[str]) -> bool:
    """An assignment whose name says key, secret, token, password… (its last part) and whose value has a
    secret's shape."""
    value = match.group(match.lastindex or 0)
    if value.startswith("?") and match.string.endswith("${", 0, _name_start(match)):
        return False  # the shell's ${NAME:?message}: the message shown when NAME is unset, no value
    kind = _key_name(_name_before(match, match.end("name")))
    return kind is not None and _secret_shape(value, kind == "password")


def _element_secret(match: re.Match[str]) -> bool:
    """A markup element whose name says password, key, secret, token… (`<password>X</password>`,
    `<ApiKey>X</ApiKey>`, `<ns:secret>`: the part after a namespace) around a value of a secret's shape."""
    name = match.group("name").rpartition(":")[2]
    kind = _key_name(name) if name.lower() != "key" else None  # a property list's <key> holds a name
    return kind is not None and _secret_shape(match.group(match.lastindex or 0), kind == "password")


# The name of a name/value pair before its value: `<add key="ApiSecret" value="…"/>`, Kubernetes' `- name:
# DB_PASSWORD` over `value: …`, `{"name": "token", "value": "…"}`, Terraform's `variable "db_password"` over its
# `default = "…"`.
_PAIR_NAME = re.compile(r"(?i)(?:\b(?:key|name)[\"']?[ \t]*(?:=>|[:=])[ \t]*[\"']?|\bvariable[ \t]+[\"'])"
                        r"([\w.-]{1,60})[\"']?")


def _pair_secret(match: re.Match[str]) -> bool:
    """The value of a name/value pair whose name (within the 120 characters before, the nearest) says secret."""
    text = match.string
    names = _PAIR_NAME.findall(text, max(0, match.start() - 120), match.start())
    kind = _key_name(names[-1]) if names else None
    return kind is not None and _secret_shape(match.group(match.lastindex or 0), kind == "password")


def _flag_secret(match: re.Match[str]) -> bool:
    name = match.group("name")
    kind = _key_name(name) or _pass_flag(name)
    return kind is not None and _secret_shape(match.group(match.lastindex or 0), kind == "password")


# Words that end in "pass" and say no password.
_NOT_PASS = ("bypass", "compass", "surpass", "trespass", "overpass", "underpass", "multipass", "firstpass", "onepass",
             "twopass", "singlepass", "secondpass", "nopass")


def _pass_flag(name: str) -> str | None:
    """'password' for a command's flag whose name ends in "pass" ("-storepass", "-keypass", "--db-pass",
    "-passin"/"-passout" are openssl's sources, whose value says "pass:X"), else None."""
    joined = name.lower().replace("-", "").replace("_", "")
    return "password" if joined.endswith("pass") and not joined.endswith(_NOT_PASS) else None


def _flag_user_password(match: re.Match[str]) -> bool:
    """The password of a user flag's `user%pass` or `user:pass`, or of Windows' `/user:NAME pass`: shaped like
    one (`_flag_password`), not a uid:gid or a placeholder."""
    return _flag_password(match.group(match.lastindex or 0))


def _user_pair_password(match: re.Match[str]) -> bool:
    """After a user flag's name and ":", "%" or ",", the password by its place: shaped like a flag's
    (`_flag_password`), or a word and digits ("bluefish3654": 4 letters, 2 digits, 8 characters; not a group
    "staff1", nor a uid:gid)."""
    value = match.group(match.lastindex or 0)
    letters = sum(c.isalpha() for c in value)
    return _flag_password(value) or (_password_value(value) and len(value) >= 8 and letters >= 4
                                     and len(value) - letters >= 2 and "/" not in value)


def _batch_flags(match: re.Match[str]) -> bool:
    """A `…passwd` tool in batch mode (`-b` among its flags: htpasswd, mosquitto_passwd) takes the password as its
    third argument, or its second with `-n` (no file: the line is printed)."""
    return "b" in match.group("flags").replace("-", "") and _flag_password(match.group(match.lastindex or 0))


def _strong_password(value: str) -> bool:
    """A password named without "is" ("the password X", "password, X,"): 6 or more characters with a digit, a
    symbol or mixed cases, so that "the password manager" or "passwords, which" are not taken; and no code's
    shape: a file name ("main.py"), a dotted name without digits ("self.config"), a call, a flag, a bracket first,
    a URL, an e-mail address or a version number."""
    return (len(value) >= 6 and _password_value(value) and value.casefold() not in _NOT_A_PASSWORD
            and (_has_digit(value) or not value.isalnum() or not (value.islower() or value.isupper()
                                                                   or value.istitle()))
            and _CODE_SHAPE.fullmatch(value) is None and not _FILE_SUFFIX.search(value))


# Code, not a password: a file name with a source or data extension, names joined by dots without a digit
# ("self.config", "os.path"), a call, a flag, a bracket or a quote first, a decimal, a percentage or a quantity
# ("98.52%", "5.8GHz"), a URL, an address, a version.
_CODE_SHAPE = re.compile(
    r"(?i)[\w.-]+\.(?:py|js|ts|tsx|jsx|go|rs|rb|java|kt|c|h|cc|cpp|hpp|cs|php|sh|md|html?|css|scss|sql|csv|log|lock|"
    r"xml|svg|png|jpe?g|gif|pdf|zip|gz|tgz|tar|exe|dll|so|dylib|wasm|ipynb|rst|out|bak|tmp|docx?|xlsx?)"
    r"|[A-Za-z_]+(?:\.[A-Za-z_]+)+|[\w.]+\(.*\)?|[(\[{<].*|(?-i:-{1,2}[a-z][a-z0-9-]*)(?:=.*)?|\d+(?:[.,]\d+)+%?|\d+(?:[.,]\d+)*(?:%|[kmgtµ]?(?:hz|bps|b|s|m|g|w|v|px|em|pt))|\w+://.*|[^@\s]+@[\w-]+\.[\w.-]+|v?\d+(?:\.\d+)+"
)


# Words before "pass X" that make it a login's password, not the verb ("pass Python3 to it").
_LOGIN_BEFORE = re.compile(r"(?i)\b(?:login|log[ -]?in|user(?:name)?|account|acct|ssid|network)\b[^\n]{0,40}\Z")


# Words after the word for password that make the phrase about something else ("my password manager is
# 1Password", "the password policy is …").
_ABOUT_PASSWORDS = frozenset("""
manager managers vault vaults app apps generator generators reset resets hint hints policy policies strength length
rotation requirement requirements rule rules field fields box prompt expiry history hash hashes file files
""".split())


_NETWORK = re.compile(r"(?i)wi-?fi|wlan")


def _said_password(match: re.Match[str]) -> bool:
    """No word of the gap makes the phrase about something else (`_ABOUT_PASSWORDS`); and "pass X" and "pw X",
    with no verb between, only after a login's name ("login ops, pass X")."""
    bare = match.groupdict().get("bare")
    if bare is not None and _NETWORK.fullmatch(match.group("noun")):
        return False
    gap = match.group("gap") or bare
    if gap and not _ABOUT_PASSWORDS.isdisjoint(re.sub(r"\([^)]*\)", " ", gap).lower().split()):
        return False
    if match.group("direct") is None or match.group("noun").lower() not in ("pass", "pw", "pws"):
        return True
    return _LOGIN_BEFORE.search(match.string, max(0, match.start() - 60), match.start()) is not None


# Words near "key", "secret", "token" that make it something else than a credential: a database's or a cache's
# key, a hash, an id, a count or a limit, a figure of speech ("the key points are", "the secret is out").
_NOT_A_CREDENTIAL = frozenset("""
public pub publishable cache primary foreign sort partition composite unique idempotency fingerprint hash hashes id ids
commit sha digest checksum limit limits count counts max min size length expiry ttl type types name names format file
path usage budget budgets points point difference differences thing things takeaway takeaways insight insights factor
factors question questions word words ingredient ingredients ssh gpg pgp host signing-key-id map lookup
""".split())
# What a code or a PIN opens: without one of these words between, "the code … is X" is source code or a status.
_LOCKED_THINGS = frozenset("""
unlock unlocks unlocking open opens opening access enter entry door doors gate gates safe lock locks locker laptop
phone computer pc tablet ipad iphone alarm garage building house home apartment flat room office wifi wi-fi router vault
bike padlock screen sim card atm bank account voicemail mailbox storage unit
""".split())


def _said_secret(match: re.Match[str]) -> bool:
    """A key, secret, token or seed said in words ("the key from the wallet, it's X", "the shared account's secret
    is X"): 12 or more characters of a secret's shape (a secret: or 8 of a password's), no word around that makes it a database key, a hash, a limit
    or a figure of speech (`_NOT_A_CREDENTIAL`). A code, combination or PIN: only with what it opens between
    ("the code to unlock the laptop is X"), a number of 4 to 12 digits or a value shaped like a password."""
    noun = match.group("noun").lower().rstrip("s")
    text = match.string
    words = set(re.sub(r"\([^)]*\)", " ", match.group("gap")).lower().split())
    before = set(text[max(0, match.start() - 24):match.start()].lower().replace("'s", " ").split()[-2:])
    value = match.group(match.lastindex or 0)
    if noun in ("code", "combination", "pin"):
        return not _LOCKED_THINGS.isdisjoint(words | before) and (
            (value.isdigit() and 4 <= len(value) <= 12) or _strong_password(value))
    if not _NOT_A_CREDENTIAL.isdisjoint(words | before) or _CODE_SHAPE.fullmatch(value) is not None:
        return False
    if noun == "secret" and len(value) >= 8 and _strong_password(value):  # a shared secret is often a password
        return True
    return len(value) >= 12 and _secret_shape(value, False)


# A login's words in the line around a "user / password" pair.
_LOGIN_WORDS = re.compile(r"(?i)\b(?:creds?|credentials?|login|log(?:ged|ging)?[ -]in|logon|sign(?:ed|ing)?[ -]?in|"
                          r"username|admin|wi-?fi|wlan|"
                          r"router|ssid|vpn)\b")  # each holds a needle of the rule: "sername", "outer", "pn"…
_PAIR_USER = re.compile(r"(?:^|(?<=[\s:(\[,]))[\w.@+-]{2,40}[ \t]?\Z")


def _login_pair(match: re.Match[str]) -> bool:
    """"admin / X", "HomeNet5G / X": a user's or a network's name alone before the slash (no path's part), a
    login's word in the line outside the pair (`_LOGIN_WORDS`, within 60 characters before or 40 after), and a
    value shaped like a password: with a digit or a symbol other than ":", or letters of both cases in a random
    order ("Google/GitHub", "/user:Administrator" are not)."""
    text = match.string
    slash = match.start()
    if _PAIR_USER.search(text, max(0, slash - 42), slash) is None:
        return False
    line_start = text.rfind("\n", 0, slash) + 1
    line_end = text.find("\n", match.end())
    line_end = len(text) if line_end < 0 else line_end
    user_start = text.rfind(" ", 0, slash - 1) + 1  # the pair itself says nothing ("feature/login-2fa")
    around = text[max(line_start, slash - 60):max(line_start, user_start)] + " " + text[match.end():min(
        line_end, match.end() + 40)]
    value = match.group(1)
    return (_LOGIN_WORDS.search(around) is not None and _strong_password(value) and ":" not in value
            and (not value.isalpha() or not _WORD_PART.fullmatch(value) and _switches(value) >= 4))


# A protocol or an algorithm and its version, after "connected as bob with": TLSv1.3, HTTP2, AES256.
_PROTOCOL = re.compile(r"[A-Z]{2,}v?\d+(?:\.\d+)*")
_SECRET_HEADER = re.compile(r"(?i)(?:[\w ]+[ _-])?(?:(?P<password>password|passwd|pass|pw|pwd|passphrase|passcode)|"
                            r"(?P<pin>pin)|secret|token|api[ _-]?key|secret[ _-]?key|access[ _-]?key|credentials?)")
_TABLE_RULE = re.compile(r"[ \t]*\|?(?:[ \t]*:?-{3,}:? ?\|)+[ \t]*:?-*:?[ \t]*")  # "|---|", "| :--- |"


def _secret_column(match: re.Match[str]) -> bool:
    """A data cell of a markdown table (a line of cells below a header and its |---| line) whose column's header
    says password, secret, token, API key or PIN, shaped like what it says (a keyboard's "Key" column is none)."""
    text = match.string
    line_start = text.rfind("\n", 0, match.start()) + 1
    if not text.startswith("|", line_start) and not text[line_start:match.start()].lstrip().startswith("|"):
        return False
    column = text.count("|", line_start, match.start() + 1)
    # up the table: data lines, then the |---| line, then the header
    end = line_start - 1
    while end > 0:
        start = text.rfind("\n", 0, end) + 1
        line = text[start:end]
        if _TABLE_RULE.fullmatch(line):
            header_end = start - 1
            if header_end <= 0:
                return False
            header = text[text.rfind("\n", 0, header_end) + 1:header_end]
            cells = header.split("|")
            named = _SECRET_HEADER.fullmatch(cells[column].strip()) if column < len(cells) else None
            value = match.group(1)
            if named is None:
                return False
            if named.group("pin"):
                return value.isdigit()
            return _secret_shape(value, named.group("password") is not None)
        if not line.lstrip().startswith("|"):
            return False
        end = start - 1
    return False


def _spaced_base32(value: str) -> bool:
    """Groups of a key, not words in capitals: a digit (the rule is sought where digits are: 24 random base32
    characters hold none of 2-7 one time in 150, 32 one time in 770), 8 letters, and at most one group a common
    English word (the BIP-39 list)."""
    groups = value.lower().split()
    return (_has_digit(value) and sum(group in _BIP39 for group in groups) <= 1
            and sum(c.isalpha() for c in value) >= 8)


_FLAG_SYMBOLS = frozenset("!#$%&*?@^~+=")


def _flag_password(value: str) -> bool:
    """After a password flag letter (-p, -a, -w mean other things to other commands: a port, all, a width): 6 or
    more characters with a letter, of three kinds among capitals, small letters, digits and symbols, or of two
    when one is a symbol; no path or file ("python3.11", "x86_64", "build2" and ports are none of these)."""
    if not _password_value(value) or "/" in value or "\\" in value or _FILE_SUFFIX.search(value):
        return False
    if not any(c.isalpha() for c in value):
        return False
    symbol = not _FLAG_SYMBOLS.isdisjoint(value)
    kinds = (any(c.isupper() for c in value) + any(c.islower() for c in value) + _has_digit(value) + symbol)
    if kinds >= 3 or (kinds == 2 and symbol):
        return True
    return len(value) >= 10 and not _WORD_PART.fullmatch(value) and _switches(value) >= 4


def _switches(value: str) -> int:
    """How often a random string turns between capitals, small letters and digits ("DfvscLOGMd": 3 times;
    "ubuntu2204" once)."""
    kinds = [c.isdigit() * 2 + c.isupper() for c in value if c.isalnum()]
    return sum(a != b for a, b in pairwise(kinds))


def _dsn_user_key(value: str) -> bool:
    """A URL's user part that is a key (a Sentry DSN's 32 hex): 16+ characters of letters and digits mixed."""
    return sum(c.isdigit() for c in value) >= 2 and sum(c.isalpha() for c in value) >= 2


# Four to eight groups of four base32 characters of one case: an authenticator's setup key, typed by hand.
# Named, it may be shown unspaced: 16 to 64 of one case, with a digit (`_totp_key`).
_TOTP_GROUPS = (r"(?<![\w-])((?-i:[A-Z2-7]{4}(?:[ -][A-Z2-7]{4}){3,7}|[a-z2-7]{4}(?:[ -][a-z2-7]{4}){3,7}|"
                r"[A-Z2-7]{16,64}|[a-z2-7]{16,64}))(?![\w-])")


def _totp_key(value: str) -> bool:
    """Groups with six letters or more; unspaced, a digit too (16 capitals in a row may be a word in capitals)."""
    return sum(c.isalpha() for c in value) >= 6 and (" " in value or "-" in value or _has_digit(value))


_BIP39 = frozenset((Path(__file__).with_name("bip39_english.txt")).read_text(encoding="ascii").split())
_BIP39_BYTES = frozenset(word.encode() for word in _BIP39)
_BIP39_INDEX = {word: n for n, word in enumerate(sorted(_BIP39))}


_Trie = dict[str, "_Trie"]


def _bip39_trie(words: frozenset[str]) -> str:
    """One regex branch per letter, as a trie: the engine follows a word letter by letter instead of trying 2,048
    alternatives."""
    trie: _Trie = {}
    for word in sorted(words):
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def branch(node: _Trie) -> str:
        alternatives = [char + branch(child) for char, child in sorted(node.items()) if char]
        if not alternatives:
            return ""
        body = "(?:" + "|".join(alternatives) + ")"
        return body + "?" if "" in node else body

    return branch(trie)


_SEED_WORD = "(?:" + _bip39_trie(_BIP39) + ")(?![A-Za-z])"
_SEED_CONTEXT = re.compile(r"(?i)seed|recovery|mnemonic|phrase|wallet|words|backup|ledger|metamask|trezor")


def _bip39_checksum(words: list[str]) -> bool:
    bits = "".join(format(_BIP39_INDEX[w], "011b") for w in words)
    cut = len(bits) * 32 // 33
    entropy = int(bits[:cut], 2).to_bytes(cut // 8, "big")
    return format(hashlib.sha256(entropy).digest()[0], "08b")[: len(bits) - cut] == bits[cut:]


def _seed_phrase(match: re.Match[str]) -> bool:
    """Twelve or more words of the BIP-39 list in a row: a wallet's recovery phrase when the first or the last 12,
    15, 18, 21 or 24 of them carry the list's checksum (a real phrase does; a list of words by chance, 1 time in
    16), or when the text names seed, recovery, wallet, words… before them."""
    words = _SEED_LETTERS.findall(match.group())  # the words, without a numbered list's numbers
    if _SEED_CONTEXT.search(match.string, max(0, match.start() - 80), match.start()):
        return True
    return any(_bip39_checksum(window) for n in (12, 15, 18, 21, 24) if n <= len(words)
               for window in (words[:n], words[-n:]))


_SEED_LETTERS = re.compile(r"[a-z]+")
# What may stand between two seed words: blanks, and a numbered or comma-separated list's digits and marks.
_BETWEEN_WORDS = frozenset(b" \t\n,.):0123456789")
# Lower-case letters and what may stand between words made "a", anything else a bar: a run of words is a run of "a".
_IN_A_RUN = bytes(97 if 97 <= code <= 122 or code in _BETWEEN_WORDS else 124 for code in range(256))
# Lower-case letters kept, what may stand between words a blank, anything else a bar (which ends a run of words).
_WORD_MARKS = bytes(code if 97 <= code <= 122 else 32 if code in _BETWEEN_WORDS else 124 for code in range(256))


_WORDS_RUN = b"a" * 47


def _many_blanks(data: bytes) -> bool:
    """Twelve words of the list in a row, split by blanks, commas or a list's numbers (a necessary condition of the
    rule's pattern). A run lies within one stretch of lower-case letters and those (anything else ends it), of 47
    characters or more (twelve
    words of three letters and their blanks): those stretches are found by `translate` and `split`, and only their
    words are looked up."""
    if len(data) < 47 or data.translate(_IN_A_RUN).find(_WORDS_RUN) < 0:
        return False
    stretches = data.translate(_WORD_MARKS).split(b"|")
    for stretch in compress(stretches, map((46).__lt__, map(len, stretches))):
        words = stretch.split()
        if sum(map(_BIP39_BYTES.__contains__, words)) < 12:
            continue
        run = 0
        for word in words:
            run = run + 1 if word in _BIP39_BYTES else 0
            if run == 12:
                return True
    return False


def _readable_base64(value: str) -> bool:
    """Base64 of ordinary text (letters, blanks, punctuation) rather than of random bytes."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    if len(decoded) < 12:
        return False
    text = sum(32 <= b < 127 or b in (9, 10, 13) for b in decoded)
    letters = sum(65 <= b <= 90 or 97 <= b <= 122 or b == 32 for b in decoded)
    return text >= 0.95 * len(decoded) and letters >= 0.7 * len(decoded)


# What comes right before a public value of a random look: an integrity hash, an SSH public key or fingerprint,
# a content id, a document id in a link.
_PUBLIC_BEFORE = re.compile(
    r"(?i)(?:sha(?:1|256|384|512)[-:]|md5:|(?<![\w-])h1:|"  # Go's module hashes (go.sum's "h1:")
    # a header or field that names an id (a request's, a trace's, an object's: "x-amz-id-2:", "request_id=")
    r"(?<![\w-])(?:x-amz-id-2|x-amz-cf-id|(?:[\w-]*[_-])?(?:request|trace|span|correlation|message|transaction|event|"
    r"build|commit|object|etag)[_-]?id)[\"']?[ \t]*[:=][ \t]*[\"']?|ssh-(?:ed25519|rsa|dss)[ \t]+|ecdsa-sha2-nistp\d+[ \t]+|"
    r"ipfs:/*|/ipfs/|google\.com/(?:file/)?d?/?|public[_-]?key(?:[\"']?[ \t]*[:=][ \t]*[\"']?|>[ \t]*)|pk_(?:live|test)_)$"
)
# Ids of a known shape name a request, a message or an object, and grant nothing: OpenAI's completions, responses,
# runs and files; Anthropic's messages and tool calls; Stripe's objects (their secrets are sk_/rk_/whsec_).
_ID_PREFIXES = ("chatcmpl-", "cmpl-", "resp_", "msg_", "toolu_", "srvtoolu_", "req_", "call_", "run_", "asst_",
                "thread_", "file-", "batch_", "ftjob-", "step_", "cus_", "in_", "pi_", "ch_", "evt_", "sub_", "prod_",
                "price_", "txn_", "acct_", "cs_live_", "cs_test_", "seti_", "src_", "card_", "po_", "tr_", "re_",
                "ii_", "il_", "si_", "py_", "pm_", "inv_")
# An extended public key (BIP-32's xpub, SLIP-132's ypub/zpub and their testnet forms) is public by name: it
# derives a wallet's addresses, not its keys, and is handed to watch-only wallets by design (its xprv is secret).
_PUBLIC_SHAPES = re.compile(r"sha(?:1|256|384|512)-|Qm[1-9A-HJ-NP-Za-km-z]{44}$|AAAA[BCE]3|pk_(?:live|test)_|"
                            r"[xyztuvXYZUV]pub[1-9A-HJ-NP-Za-km-z]{100,}$|"
                            + "|".join(map(re.escape, _ID_PREFIXES)))


def _inside_public_block(text: str, start: int) -> bool:
    """Within a PGP public key block or a certificate (a BEGIN line before, no END since)."""
    begin = text.rfind("-----BEGIN ", 0, start)
    if begin < 0 or "-----END" in text[begin:start]:
        return False
    header = text[begin:text.find("-----", begin + 11) + 5]
    return "PRIVATE" not in header


def _random_token(match: re.Match[str]) -> bool:
    """A long random token, unless it is base64 of plain text or a public value (see _PUBLIC_BEFORE)."""
    value = match.group()
    start = match.start()
    text = match.string
    if (_PUBLIC_SHAPES.match(value) and "_secret_" not in value) or _PUBLIC_BEFORE.search(
            text, max(0, start - 40), start):  # a payment intent's client secret is "pi_…_secret_…"
        return False
    if "/" in value:  # a path: its longest part is what looks random, and what comes before it says what it is
        value = max(value.split("/"), key=len)
        start = text.index(value, start)
        if _PUBLIC_SHAPES.match(value) or _PUBLIC_BEFORE.search(text, max(0, start - 40), start):
            return False
    if _inside_public_block(text, start) or _public_jwk_member(text, start, match.end()):
        return False
    return not _readable_base64(value) and not _address_paid_to(text, start, value)


# A JSON Web Key's public members: RSA's modulus and exponent, an EC key's point ("n", "e", "x", "y"); its private
# ones ("d", "p", "q", "dp", "dq", "qi", a symmetric "k") stay secret.
_JWK_PUBLIC_MEMBER = re.compile(r"\"(?:n|e|x|y)\"[ \t]*:[ \t]*\"$")


def _public_jwk_member(text: str, start: int, end: int) -> bool:
    return (_JWK_PUBLIC_MEMBER.search(text, max(0, start - 12), start) is not None
            and ('"kty"' in text[max(0, start - 2000):start] or '"kty"' in text[end:end + 2000]))


_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_B58_SET = frozenset(_B58)
# What says the value is where money goes: "send the SOL to X", "paid 2 ETH to X", "deposit address: X".
_PAID_TO = re.compile(r"(?i)(?:\b(?:send|sent|sending|pay|paid|paying|transfer|transferred|airdrop|airdropped|"
                      r"deposit|deposited|withdraw|withdrew|tip|tipped)\b[^\n]{0,40}[ \t]to|\baddress(?:es)?\b[ \t]*"
                      r"(?:is|:|=)?)[ \t]*[\"'`]?$")


def _address_paid_to(text: str, start: int, value: str) -> bool:
    """A value in base58 of an address's length (a Solana address, an ed25519 public key: 32 to 44 characters)
    where money is sent to it: an address is public. A keypair (87 or 88 characters) never is."""
    return (32 <= len(value) <= 44 and _B58_SET.issuperset(value)
            and _PAID_TO.search(text, max(0, start - 60), start) is not None)


# A token's name before its random body: 2 to 12 letters and digits, a letter first, in up to three parts
# ("oauth:", "lsv2_pt_", "AstraCS:"), standing alone.
_TOKEN_PREFIX = re.compile(r"(?<![A-Za-z0-9_.:/+~=%-])[A-Za-z][A-Za-z0-9]{1,11}(?:[_.:-][A-Za-z0-9]{1,11}){0,2}\Z")
# Prefixes that name a hash, a commit or an id, whose hex or random body is public.
_HASH_WORDS = frozenset("""
sha sha1 sha224 sha256 sha384 sha512 md5 blake2b blake2s blake3 crc crc32 xxh64 hash digest checksum sum commit rev
revision ref oid object tree blob build etag id uuid guid request req trace span txid tx block ipfs cid content
version ver image tag
""".split())
_BODY_PART = re.compile(r"[A-Za-z0-9]+")


def _prefixed_token(match: re.Match[str]) -> bool:
    """A random body after a name and a separator, the shape most vendors give a token, whatever the vendor: 32+
    hex digits after "_" or "-", or a part of 24+ small letters (or capitals) and digits, 3 digits or more and six
    turns between letters and digits (random ones of 30 fail this 1.6 times in 100; "ubuntu2204jammyamd64lts1"
    turns 5 times), or 24+ of mixed cases and 2+ digits with six turns (shorter than the random-token rule's 32:
    the name says token). Not after a hash's or an id's name, nor a public value's."""
    text = match.string
    start = match.start()
    prefix = _TOKEN_PREFIX.search(text, max(0, start - 40), start)
    if prefix is None:
        return False
    name = prefix.group()
    words = [w.lower() for w in re.split(r"[_.:-]", name)]
    if _HASH_WORDS.intersection(words) or _PUBLIC_SHAPES.match(name + text[start]) or _PUBLIC_BEFORE.search(
            text, max(0, prefix.start() - 40), prefix.start()) or _public_jwk_member(text, prefix.start(), start):
        return False
    body = match.group("body")
    for found in _BODY_PART.finditer(body):
        # hex alone after ":" or "." is an image's tag or a hash's label ("app:9f86d0…"); after "_" or "-", a
        # vendor's key ("lsv2_pt_…"): the separator is the match's first character or the body's before the part
        before = match.group()[0] if found.start() == 0 else body[found.start() - 1]
        part = found.group()
        if _random_hex(part):
            if before in "_-":
                return True
            continue
        if len(part) < 24 or _HEX.fullmatch(part) or _WORD_PART.fullmatch(part) and not _has_digit(part):
            continue
        letters = sum(c.isalpha() for c in part)
        digits = len(part) - letters
        if (part.islower() or part.isupper()) and letters >= 4 and digits >= 3 and _switches(part) >= 6:
            return True
        if (not (part.islower() or part.isupper()) and digits >= 2 and _switches(part) >= 6
                and not _WORD_PART.fullmatch(part)):
            return True
    return False


def _encoded_private_key(value: str) -> bool:
    """Base64 of a PEM private key (kubeconfig's `client-key-data`, a secret's `tls.key`): "-----BEGIN" encoded,
    and "PRIVATE KEY" in what the first 120 characters decode to."""
    head = value[:120]
    try:
        decoded = base64.b64decode(head[: len(head) // 4 * 4], validate=True)
    except (binascii.Error, ValueError):
        return False
    return b"PRIVATE KEY" in decoded


def _wifi_password(value: str) -> bool:
    """A Wi-Fi QR code's `P:` field: not empty, not a placeholder."""
    return _password_value(value.replace("\\;", ";"))


def _wrapped_key(value: str) -> bool:
    """Lines of key characters only, which joined make a random token or 32+ hex digits with letters."""
    joined = "".join(value.split())
    if len(joined) < 32:
        return False
    if re.fullmatch(r"[0-9a-fA-F]+", joined):
        return _has_digit(joined) and any(c.isalpha() for c in joined)
    return _mixes_randomly(joined) and not _readable_base64(joined)  # slashes and all: no path is wrapped so


_KEY_LINE_RUN = _run_of(_KEY_CHARS, 16)  # a wrapped key's line


# The card's code in other words: "the three digits on the back", "card verification value", German's
# Prüfnummer, French's cryptogramme.
_CVV_NAMES = (r"(?:the[ \t]+)?(?:three|3|four|4)[ \t-]+digits?[ \t]+(?:code[ \t]+)?on the back|"
              r"card (?:verification|security)[ \t]+(?:code|value|number)|(?:karten)?prüf(?:nummer|ziffer|code)|"
              r"cryptogramme(?:[ \t]+visuel)?")
_CVV_WORDS = ("cvv", "cvc", "csc", "cvn", "on the back", "card verification", "card security", "prüf", "cryptogramme")


# Vendors' own prefixes, as data: (the prefix, the token's pattern). From gitleaks' and trufflehog's published
# rules; the generic rules below catch what this list lacks when a name or shape says key. The rule is sought where
# a digit and a run of 24 token characters are (its needles would be as common as the digits); the prefixes also
# feed the last guard's check for a known prefix followed by key characters.
_VENDOR_TOKENS: tuple[tuple[str, str], ...] = (
    ("key-", r"key-[0-9a-f]{32}"),  # Mailgun
    ("_v1_", r"do[opr]_v1_[0-9a-f]{64}"),  # DigitalOcean
    ("shpat_", r"shpat_[0-9a-fA-F]{32}"),  # Shopify
    ("shpca_", r"shpca_[0-9a-fA-F]{32}"),
    ("shppa_", r"shppa_[0-9a-fA-F]{32}"),
    ("shpss_", r"shpss_[0-9a-fA-F]{32}"),
    ("PMAK-", r"PMAK-[0-9a-f]{24}-[0-9a-f]{34}"),  # Postman
    ("AGE-SECRET-KEY-1", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),  # age
    ("SK", r"SK[0-9a-fA-F]{32}"),  # Twilio API key
    ("SG.", r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),  # SendGrid
    ("sq0atp-", r"sq0atp-[A-Za-z0-9_-]{22}"),  # Square
    ("HRKU-", r"HRKU-[A-Za-z0-9_-]{58,}"),  # Heroku
    ("pypi-", r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}"),  # PyPI
    ("dckr_", r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{27,}"),  # Docker Hub
    ("lin_api_", r"lin_api_[A-Za-z0-9]{40}"),  # Linear
    ("hvs.", r"hvs\.[A-Za-z0-9_-]{24,}"),  # Vault
    ("hvb.", r"hvb\.[A-Za-z0-9_-]{24,}"),
    ("NR", r"NR(?:AK|II|JS)-[A-Z0-9]{27}"),  # New Relic
    ("xapp-", r"xapp-[0-9]-[A-Z0-9]+-[0-9]+-[a-z0-9]{32,}"),  # Slack app token
    ("ya29.", r"ya29\.[A-Za-z0-9_-]{30,}"),  # Google OAuth access token
    ("LTAI", r"LTAI[A-Za-z0-9]{20}"),  # Alibaba
    ("tskey-", r"tskey-[a-z]+-[A-Za-z0-9]{10,}-[A-Za-z0-9]{20,}"),  # Tailscale
    ("figd_", r"figd_[A-Za-z0-9_-]{40}"),  # Figma
    ("glc_", r"glc_[A-Za-z0-9+/]{32,}={0,2}"),  # Grafana Cloud
    ("dt0c01.", r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}"),  # Dynatrace
    ("FLWSECK", r"FLWSECK(?:_TEST)?-[0-9a-f]{32}-X"),  # Flutterwave
    ("sl.", r"sl\.[A-Za-z0-9_-]{130,}"),  # Dropbox
    ("rubygems_", r"rubygems_[0-9a-f]{48}"),  # RubyGems
    ("pscale_", r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{32,}"),  # PlanetScale
    ("phx_", r"phx_[A-Za-z0-9]{43}"),  # PostHog personal key
    ("sbp_", r"sbp_[0-9a-f]{40}"),  # Supabase
    ("rdme_", r"rdme_[a-z0-9]{70}"),  # ReadMe
    ("bkua_", r"bkua_[a-z0-9]{40}"),  # Buildkite
    ("EAA", r"EAA[A-Za-z0-9]{90,}"),  # Facebook / Meta access token
    ("shippo_", r"shippo_(?:live|test)_[0-9a-f]{40}"),  # Shippo
    ("EZAK", r"EZ[AT]K[0-9a-zA-Z]{54}"),  # EasyPost
    ("CFPAT-", r"CFPAT-[A-Za-z0-9_-]{43}"),  # Contentful
    ("nsec1", r"nsec1[qpzry9x8gf2tvdw0s3jn54khce6mua7l]{58}"),  # Nostr's private key (bech32; its npub is public)
)

def _vendor_pattern(tokens: tuple[tuple[str, str], ...]) -> str:
    """One alternation of the tokens' patterns, grouped by their first letter ("s(?:hpat_…|q0atp-…)") so that the
    engine skips to those letters and tries one group there, not every pattern (2 times quicker). Each token
    stands alone (no key character before or after it)."""
    groups: dict[str, list[str]] = {}
    for _, body in tokens:
        groups.setdefault(body[0], []).append(body[1:])
    alternatives = [f"{first}(?<![A-Za-z0-9_.-]{first})(?:{'|'.join(rests)})" for first, rests in groups.items()]
    return "(?:" + "|".join(alternatives) + r")(?![A-Za-z0-9_-])"



_VALUE = (r"(?:\"(?!\[REDACTED)([^\"\n]{4,300})\"|'(?!\[REDACTED)([^'\n]{4,300})'|"
          r"(?!\[REDACTED)(?!-)([^\s\"'`,;&<>(){}\[\]|]{4,300}))")
# After `=` or `:` a value may start with a dash (`PGPASSWORD=-x7…`); after a flag and a blank, a dash starts the
# next flag, and a dash and a blank a list item.
_ASSIGNED_VALUE = _VALUE.replace("(?!-)", r"(?!-[-\s])")
# The key words a name ends in (before suffixes such as _B64): stems that may run on ("tokens", "sessionid"), and
# short words that end where a letter does not follow ("pass=", not "passed"; "sig=", not "design"), whose needles
# are the word with each character the patterns allow after it.
_KEY_STEMS_ANY = ("key", "secret", "token", "passw", "passphrase", "passcode", "pwd", "sess", "cookie", "signature",
                  "signing", "authorization", "credential", "pepper", "jwt", "bearer", "mnemonic", "hmac")
_KEY_WORDS_ALONE = ("pass", "pw", "auth", "cred", "creds", "sig", "sid", "salt", "otp", "seed")
_KEY_STEMS = _KEY_STEMS_ANY + tuple(word + char for word in _KEY_WORDS_ALONE for char in "0123456789_.-\"' \t:=")
_KEY_NAME = "(?:" + trie(_KEY_STEMS_ANY) + "|" + trie(_KEY_WORDS_ALONE) + "(?![a-z]))"
# What every value `_strong_password` takes holds: a character no letter, or a small letter then a capital, or two
# capitals (so that a lazy gap runs on past "password to unlock" to the verb that says the value).
_MAY_BE_STRONG = r"(?-i:(?=[^\s\"'`]*[^A-Za-z\s\"'`]|[^\s\"'`]*[a-z][^\s\"'`]*[A-Z]|[^\s\"'`]*[A-Z][^\s\"'`]*[A-Z]))"
_STRONG_VALUE = r"(?!\[REDACTED)([^\s\"'`]{5,62}[^\s\"'`.,;:!?)\]])"


# "Password" in other languages, as written (an ASCII letter's case is folded, the others' are listed), and the
# words that say "is" after it: the value must still look like a password (`_strong_password`), so "hasło jest
# długie" is prose. A language no list here names is covered when it writes ":" or "=".
# Each is the word's stem, before the endings inflected languages add ("salasana-ni", "jelsz-avam", "şifre-m",
# "lösenord-et"): up to six letters may follow it (`_INFLECTION`), and where an ending says "my" the language
# writes no verb ("şifrem X"), so the value may follow the word directly. Wi-fi and WLAN name a network's password.
_PASSWORD_WORDS = (
    "wachtwoord", "has[łŁl]", "l[öÖo]senord", "adgangskode", "passord", "salasan", "hesl", "[şŞs]ifre", "parol",
    "jelsz", "palavra-passe", "contrasenya", "kata sandi", "kata laluan", "m[ậẬa]t kh[ẩẨa]u", "[пП]арол",
    "[κΚ]ωδικ", "パスワード", "暗証番号", "密码", "密碼", "비밀번호", "סיסמ", "كلمة المرور", "पासवर्ड", "lozink",
    "gesl", "salasõn", "slaptažod", "contrase[ñÑn]", "clave", "passwort", "kennwort", "mot de passe", "mdp", "senha",
    "lykilor", "wagwoord", "cyfrinair", "pasfhocal", "fjal[ëËe]kalim", "pasahitz", "contrasinal", "pasvort",
    "nenosiri", "[лЛ]озинк", "รหัสผ่าน", "رمز عبور", "كلمة السر", "كلمة مرور", "암호", "口令", "পাসওয়ার্ড",
    "கடவுச்சொல்", "wi-?fi", "wlan",
)
# English words, whole (no inflection but a plural: "passage", "passenger" are no password; "pass" has none).
_PASSWORD_WORDS_EN = ("password", "passwd", "passcode", "passphrase", "pwd", "pw")
# What may follow the word (a blank, ":", "=", a question mark, a comma, a dash, a parenthesis): "pass" is a
# needle only with one of them after it, so "passes" and "passed" do not bring the rule into play.
_AFTER_PASS = " \t:=?,—–-("
_PASSWORD_WORDS_NEEDLES = (
    "wachtwoord", "hasł", "hasl", "lösenord", "losenord", "adgangskode", "passord", "salasan", "hesl", "şifre",
    "sifre", "parol", "jelsz", "palavra-passe", "contrasenya", "kata sandi", "kata laluan", "mật khẩu",
    "mat khau", "mật khau", "mat khẩu", "парол", "κωδικ", "パスワード", "暗証番号", "密码", "密碼",
    "비밀번호", "סיסמ", "كلمة المرور", "पासवर्ड", "lozink", "gesl", "salasõn", "slaptažod", "wifi", "wi-fi", "wlan",
    "contrase", "clave", "passwort", "kennwort", "mot de passe", "mdp", "senha", "lykilor", "wagwoord",
    "cyfrinair", "pasfhocal", "kalim", "pasahitz", "contrasinal", "pasvort", "siri", "лозинк",
    "รหัสผ่าน", "رمز عبور", "كلمة السر", "كلمة مرور", "암호", "口令", "পাসওয়ার্ড", "கடவுச்சொல்",
)


def _first_letters(word: str) -> str:
    """The letters a word of `_PASSWORD_WORDS` may start with, both cases: the class it opens with, or its first
    ("nenosiri" was sought only at the "s" of its needle "siri", so never found)."""
    first = word[1:word.index("]")] if word.startswith("[") else word[0]
    return first + first.upper()


_INFLECTION = r"(?u:[^\W\d_]){0,6}"  # letters of any script, within the rules' ASCII mode
_COPULAS = ("is", "es", "est", "ist", "lautet", "è", "é", "to", "jest", "är", "er", "on", "je", "este", "adalah",
            "ialah", "là", "это", "είναι", "olur", "ir", "yra", "van", "al", "was", "are", "were", "c'est", "era",
            "foi", "était", "war", "var", "oli", "było", "bylo", "был", "была", "була", "е", "heißt", "sono", "são",
            "هي", "هو", "היא", "הוא", "คือ", "ni", "yw", "és", "ay")
# Between the word for password and its value, up to six words or a parenthesis of any but an end of sentence
# ("the password i gave the landlord was X", "parola mea de la email este X", "temporary password (change at
# login): X", a clause between commas), then ":" or "=", a verb, a dash or an arrow, or a question answered
# ("password? it's X"), and an adverb ("is still X", "lautet jetzt X").
_GAP = r"(?:[ \t]*(?:\([^()\n]{1,40}\)|,?[ \t]+[^\s:=\[.!?;(),]{1,20}),?){0,6}?"
# Scripts written without blanks join "is" to the word ("รหัสผ่านคือ X", "密码是 X"), and English's "'s" joins it
# too ("password's X").
_JOINED_COPULAS = ("คือ", "是", "は", "['’]s")
_SAYS = (r"(?:[ \t]*[:=]|(?:[ \t]+(?:[—–→-]|" + "|".join(_COPULAS) + r")|" + "|".join(_JOINED_COPULAS) + r")(?=[ \t])"
         r"|[ \t]*[?:,—–-][ \t]*(?:it['’]?s|it[ \t]+is|it[ \t]+was|that['’]?s)(?=[ \t]))"
         r"(?:[ \t]+(?:still|now|just|actually|probably|currently|always|simply|literally|jetzt|noch|nun|immer|"
         r"ahora|todavía|aún|maintenant|toujours|ancora|ora|adesso|agora|ainda|nu|nog|teraz|nadal|şimdi|hala|"
         r"сейчас|теперь|всё|ещё))?")

_SAID_VALUE = (r"(?:(?P<gap>" + _GAP + ")" + _SAYS + r"|(?P<direct>(?=[ \t]+[^\s:=\[]+(?!\S))))[ \t]*[\"'`]?"
               + _MAY_BE_STRONG + _STRONG_VALUE)
# Languages that say "is" with no verb (Ukrainian, Russian, Arabic: "мій пароль від пошти X") or put it last
# (Persian "رمز عبور من X است", Hindi "… X है"): after the word for password and a gap, a value that ends the line
# or a clause ("X (as discussed)", "X, …") or stands before that last verb. Only for the words of other languages: English's "the password for Server01"
# names a server, and a network's name alone is no word for its password ("the wifi runs at 2.4GHz/5.8GHz").
_LAST_VERBS = ("است", "هست", "है", "हैं", "da", "dir", "dır", "です", "입니다", "นะ", "ครับ", "ค่ะ")
# Tried after the other two (a value that ends the gap must not hide one said directly: "şifrem X Thanks"); its
# gap is of words of letters, so that the value is the first word that is not one.
_SAID_VALUE_BARE = (r"(?:(?P<gap>" + _GAP + ")" + _SAYS + r"|(?P<direct>(?=[ \t]+[^\s:=\[]+(?!\S)))"
                    r"|(?P<bare>(?:[ \t]+(?u:[^\W\d_]){1,20}){1,4})(?=[ \t]+[^\s:=\[]+(?:[ \t]+(?:"
                    + "|".join(_LAST_VERBS) + r")(?![^\W\d_])|[ \t]*(?:\n|$|[(,;.!?])|[ \t]+(?-i:[A-ZА-ЯЁ]))))"
                    r"[ \t]*[\"'`]?" + _MAY_BE_STRONG + _STRONG_VALUE)

_HIGH_ENTROPY = "high-entropy"
_PHRASE_LEAD = r"(?:\s+(?:for|to|on|of|at)\s+(?:the\s+|my\s+|our\s+|your\s+)?[\w.@-]{1,40}(?:\s+[\w.@-]{1,40})?)?"
_PHRASE_VERB = r"\s*(?:\s(?:is|was|are|is\s+now|is\s+still|will\s+be)(?:\s*[:=])?\s|[:=])\s*[\"'`]?"
# The verb, or an arrow or a long dash in its place ("admin password → X", "wallet key — 0x…").
_PHRASE_SEPARATOR = _PHRASE_VERB.replace("|[:=])", "|=>|->|[:=—–→⇒])")

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
    _Rule(  # a PEM private key in base64 ("-----BEGIN" encoded is "LS0tLS1CRUdJTi")
        "private-key",
        ("LS0tLS1CRUdJTi",),
        re.compile(r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{40,}={0,2}"),
        accept=_encoded_private_key,
    ),
    _Rule(  # a PuTTY key file's private lines
        "private-key",
        ("Private-Lines:",),
        re.compile(r"Private-Lines:[ \t]*[0-9]+[ \t]*\r?\n[ \t]*([A-Za-z0-9+/=]{8,}(?:[ \t]*\r?\n[ \t]*[A-Za-z0-9+/=]{8,})*)"),
        group=1,
    ),
    _Rule(  # a Wi-Fi QR code's payload: WIFI:T:WPA;S:name;P:password;;
        "password-phrase",
        ("wifi:",),
        re.compile(r"(?ai)\bWIFI:(?:[^;\n]*;){0,6}?P:(?!\[REDACTED)((?:\\.|[^;\\\n]){4,128});"),
        group=1,
        accept=_wifi_password,
        ignore_case=True,
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
    _Rule(  # every token of the list has a digit (its prefix or, all but never, its random part) and 24+ characters
        "vendor-token",
        _DIGITS,
        re.compile(_vendor_pattern(_VENDOR_TOKENS)),
        accept=_has_digit,
        possible=_run_of(_KEY_CHARS, 24),
    ),
    # Tokens led by digits or hex, sought by the literal within them (grouped above, they were tried at every digit).
    _Rule("vendor-token", (":AA",),  # Telegram bot
          re.compile(r"(?<![A-Za-z0-9_.-])[0-9]{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])")),
    _Rule("vendor-token", ("-us",),  # Mailchimp
          re.compile(r"(?<![A-Za-z0-9_.-])[0-9a-f]{32}-us[0-9]{1,2}(?![A-Za-z0-9_-])")),
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
        "url-credentials",
        ("://",),
        re.compile(r"(?<=[a-zA-Z0-9+.-])://([A-Za-z0-9_-]{16,128})@"),  # after a scheme; "://" first, to skip to
        group=1,
        accept=_dsn_user_key,
    ),
    _Rule(
        "command-line-password",
        ("curl", "mysql", "sshpass", "login"),  # sought in the lower-cased text, as words of letters are
        re.compile(
            r"\bcurl\b[^\n|;&]*?[ \t](?:-u|--user)[ \t]*[\"']?[^\s:\"']+:(?!\[REDACTED)([^\s\"']+)"
            r"|\bmysql(?:dump|admin|sh)?\b[^\n|;&]*?[ \t]-p[\"']?(?!\[REDACTED)([^\s\"']+)"
            r"|\bsshpass\b[^\n|;&]*?[ \t]-p[ \t]*(?:'(?!\[REDACTED)([^'\n]+)'|\"(?!\[REDACTED)([^\"\n]+)\""
            r"|(?!\[REDACTED)([^\s'\"]+))"
            r"|\b(?:docker|podman|buildah|helm|oras|skopeo)\b[^\n|;&]*?\blogin\b[^\n|;&]*?[ \t]-p[ \t]+[\"']?"
            r"(?!\[REDACTED)([^\s\"']+)"
        ),
        accept=_password_value,
        ignore_case=True,
    ),
    _Rule(  # any command: a password flag letter (-p, -P attached or not; -a, -w) and a value no port, path or word
        "command-line-password",
        ("-p", "-P", "-a", "-w"),
        re.compile(r"-(?<=[ \t]-)(?:[pP][ \t]*|[aw][ \t]+)[\"']?(?!\[REDACTED)(?![-\"'])"  # "-" first: skipped to
                   r"([^\s\"'`;|<>(){}\[\]]{6,128})"),
        group=1,
        accept=_flag_password,
    ),
    # The credential arguments of a command line: a user flag's `user%pass` or `user:pass` (smbclient, curl, wget,
    # git…), Windows' `/user:NAME pass` and `/pass:X`, a `…passwd` tool's last argument in batch mode, and the
    # positional password after a subcommand that creates a user or sets a password (rabbitmqctl add_user ops X,
    # net user bob X, redis AUTH X). Long flags that name a secret (`--db-password`, `-storepass`) are the
    # key-assignment flag rule's.
    # Needles that heed case here: sought by the anchored search, which already skips to "-".
    _Rule(
        "command-line-password",
        ("-u", "-U", "--cred", "-auth"),
        re.compile(r"(?a)-(?<![\w-]-)(?:[uU][ \t]*|-(?:user(?:name)?|creds?|credentials?|auth|basic-auth)(?:=|[ \t]+))"
                   r"[\"']?\w[\w.@\\-]{0,63}[:%,](?!//)(?!\[REDACTED)([^\s\"']{4,128})"),
        check=_user_pair_password,
    ),
    _Rule(  # needles the index already holds ("pass:", "passw", "pwd") or one under a letter it skips to ("ser:")
        "command-line-password",
        ("ser:", "pass:", "passw", "pwd", "/u:"),
        # /p: only after a /u: (FreeRDP's "/u:NAME /p:X"; msbuild's /p: sets a property)
        re.compile(r"(?ai)/(?<![\w/:]/)(?:user:[^\s/]{1,64}[ \t]+(?![/-])|(?:pass(?:word)?|pwd):[\"']?|"
                   r"u:[^\s/]{1,64}(?:[ \t]+/[a-z-]+(?::\S*)?)*?[ \t]+/p:[\"']?)"
                   r"(?!\[REDACTED)([^\s\"']{4,128})"),
        ignore_case=True,
        check=_flag_user_password,
    ),
    _Rule(
        "command-line-password",
        ("passwd",),
        # its arguments: a file (none with -n, which prints the line), a user, the password
        re.compile(r"(?ai)passwd(?:\.exe)?(?=(?:[ \t]+-[a-z]+)*?[ \t]+-[a-z]*n[a-z]*(?![a-z])(?P<n>))?"
                   r"(?P<flags>(?:[ \t]+-[a-z]+)+)[ \t]+(?(n)|[^\s-][^\s;|&]*[ \t]+)[^\s-][^\s;|&]*[ \t]+"
                   r"[\"']?(?!\[REDACTED)([^\s\"'`;|]{4,128})"),
        ignore_case=True,
        check=_batch_flags,
    ),
    _Rule(
        "command-line-password",
        ("add_user", "adduser", "add-user", "seradd", "create_user", "createuser", "create-user",
         "change_password", "changepassword", "change-password", "set_password", "setpassword", "set-password",
         "ser add", "ser create", "t user", "auth ", "auth\t"),  # "ser add", "t user": letters the index skips to
        re.compile(r"(?ai)\b(?:add[_-]?user|useradd|create[_-]?user|change[_-]?password|set[_-]?password|"
                   r"user (?:add|create)|net user|(?-i:AUTH))"
                   r"(?:[ \t]+--?[\w-]+(?:=\S+)?)*[ \t]+(?:[^\s\"'`;|&-][^\s;|&]{0,63}[ \t]+)?"
                   r"[\"']?(?!\[REDACTED)([^\s\"'`;|]{4,128})"),
        ignore_case=True,
        check=_flag_user_password,
    ),
    _Rule(  # Oracle's tools (SQL*Plus, Data Pump, SQL*Loader): user/password@database
        "command-line-password",
        # each needle starts with a letter the needle index already skips to ("pdp" in expdp, impdp)
        ("sqlplus", "pdp", "sqlldr"),
        re.compile(r"(?ai)\b(?:sqlplus|expdp|impdp|sqlldr)(?:[ \t]+-[a-z]+)*[ \t]+[\"']?"
                   r"[\w$#.-]{1,64}/(?!\[REDACTED)([^\s/@\"']{4,128})@"),
        ignore_case=True,
        check=_flag_user_password,
    ),
    _Rule(  # a password piped into a command that reads it from its input (`echo X | docker login
        # --password-stdin`, `echo 'bob:X' | chpasswd`, `printf X | passwd --stdin bob`)
        "command-line-password",
        ("stdin", "passwd", "sudo"),
        re.compile(r"(?ai)\b(?:echo|printf)[ \t]+(?:-[a-z]+[ \t]+)*[\"']?(?:[\w.@-]{1,64}:)?(?!\[REDACTED)"
                   r"([^\s\"'`|;&]{4,128})[\"']?[ \t]*\|[ \t]*[^\n|;&]{0,80}?(?:password-stdin|--stdin|passwd|"
                   r"\bsudo(?:[ \t]+-[a-zA-Z]+)*?[ \t]+-[a-zA-Z]*(?-i:S))\b"),
        ignore_case=True,
        check=_flag_user_password,
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
    _Rule(  # any other scheme of an Authorization header: ApiKey, Token, SSWS, sso-key, HMAC…
        "auth-header",
        ("authorization",),
        re.compile(r"(?ai)authorization[\"']?[ \t]*[:=][ \t]*[\"']?[A-Za-z][\w-]{1,20}[ \t]+"
                   r"(?!\[REDACTED)([A-Za-z0-9+/_.~:-]{12,}=*)"),
        group=1,
        accept=_secret_value,  # an encoded "id:key" reads as text, and is the credential
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
        "key-assignment",
        _KEY_STEMS,
        re.compile(r"(?ai)(?=[" + "".join(sorted({stem[0] for stem in _KEY_STEMS})) + r"])"  # a first letter to skip to
                   r"(?P<name>" + _KEY_NAME + r"[a-z0-9_.-]{0,30}?)[\"']?[ \t]*(?:=>|:=|[:=])[ \t]*" + _ASSIGNED_VALUE),
        ignore_case=True,
        possible=_assigns,
        check=_named_secret,
    ),
    _Rule(
        "key-assignment",
        _KEY_STEMS,
        re.compile(r"(?ai)-(?<![\w-]-)-?(?P<name>[a-z0-9-]{0,20}" + _KEY_NAME + r"[a-z0-9-]{0,20})"
                   r"(?:=|[ \t]+)" + _VALUE),
        ignore_case=True,
        possible=_has_dash,
        check=_flag_secret,
    ),
    _Rule(  # a call's default for a variable named for a secret: ENV.fetch("API_KEY", "…"), os.getenv("TOKEN", "…")
        "key-assignment",
        _KEY_STEMS,
        re.compile(r"(?ai)(?<=[(,])[ \t]*[\"'](?P<name>[a-z0-9_.-]{0,30}?" + _KEY_NAME + r"[a-z0-9_.-]{0,30}?)[\"'][ \t]*,"
                   r"[ \t]*(?:\"(?!\[REDACTED)([^\"\n]{4,300})\"|'(?!\[REDACTED)([^'\n]{4,300})')[ \t]*\)"),
        ignore_case=True,
        check=_named_secret,
    ),
    _Rule(  # a .pgpass line: host:port:database:user:password
        "password-assignment",
        (*_DIGITS, ":*:"),  # its port's digits or "*" (not ":": a character of its own costs every text a search)
        # ":" first: the engine skips to it, and the host before it is checked (`_pgpass_host`)
        re.compile(r"(?a):(?:\d{1,5}|\*):(?:[\w.-]+|\*):(?:[\w.@-]+|\*):(?!\[REDACTED)([^\s:]{4,128})(?!\S)"),
        group=1,
        accept=lambda v: _password_value(v) and not v.isdigit(),
        possible=lambda data: data.count(b":") >= 4 and _PGPASS_SHAPE(data) is not None,
        check=_pgpass_host,
    ),
    _Rule(  # markup: an element named for a secret around its value
        "key-assignment",
        ("</",),
        # the name holds a key word (`_key_name` takes no other): the engine leaves other tags at once
        re.compile(r"<(?=[\w.:-]{0,40}?(?i:key|secret|token|pass|pw|cred|auth|sig|sas|sess|sid|cookie|salt|pepper|otp|"
                   r"jwt|bearer|mnemonic))(?P<name>[A-Za-z_][\w.:-]{0,40})(?:[ \t][^<>\n]{0,200})?>[ \t]*(?!\[REDACTED)"
                   r"([^<>\s][^<>\n]{2,298}[^<>\s])[ \t]*</(?P=name)>"),
        check=_element_secret,
    ),
    _Rule(  # a name/value pair: the value, named by the pair's name
        "key-assignment",
        # not "v" nor "d", letters the needle index would skip to for this rule alone; "default" with what may follow
        # it before its value (a bare "default" is in every OpenClaw envelope: "telegram[default]")
        ("alue", *("ault" + char for char in " \t\"':=")),
        re.compile(r"(?ai)(?=[vVdD])(?<![A-Za-z])(?:value|default)[\"']?[ \t]*(?:=>|[:=])[ \t]*" + _ASSIGNED_VALUE),
        ignore_case=True,
        possible=_assigns,
        check=_pair_secret,
    ),
    _Rule(
        "key-phrase",
        ("key", "token", "secret"),
        re.compile(
            r"(?ai)\b(?:private|secret|api|access|auth|wallet|signing|license|master|account|app|bot|session|"
            r"encryption|recovery)[ \t]+(?:key|token|secret)s?" + _PHRASE_LEAD + _PHRASE_SEPARATOR
            + r"(?!\[REDACTED)([^\s\"'`,;]{7,299}[^\s\"'`.,;:!?)\]])"
        ),
        group=1,
        accept=lambda v: _secret_shape(v, False),
        ignore_case=True,
    ),
    _Rule(
        "card-cvv",
        _CVV_WORDS,
        re.compile(r"(?ai)\b(?:cvv2?|cvc2?|csc|cvn|" + _CVV_NAMES + r")\b[\"']?[ \t]*(?:[:=#-]|is|was|are|code)?[ \t]*"
                   r"(?:(?:is|are)[ \t]+)?[\"']?(\d{3,4})(?!\d)"),
        group=1,
        ignore_case=True,
    ),
    _Rule(
        "pin",
        ("pin",),
        re.compile(r"(?ai)\bpin(?:[ \t]+(?:code|number))?" + _PHRASE_LEAD + _PHRASE_SEPARATOR + r"(\d{3,12})(?!\w)"),
        group=1,
        ignore_case=True,
    ),
    _Rule(
        "ssn",
        ("ssn", "soc"),
        re.compile(r"(?ai)\b(?:ssn|soc\.?[ \t]*sec(?:urity|\.)?|social(?:[ \t]+(?:security|insurance))?(?:[ \t]+(?:number|no\.?|#))?)[^\d\n]{0,24}?"
                   r"(?<!\d)(\d{3}[- ]?\d{2}[- ]?\d{4})(?![\d-])"),
        group=1,
        accept=_social_security_number,
        ignore_case=True,
    ),
    _Rule(  # another country's number for a person, said with its name, in the shape that country writes it
        "national-id",
        _DIGITS,  # sought where six digits are in a row (blanks or dots between; a date has none): names are many
        
        re.compile(r"(?ai)(?=[" + _NATIONAL_ID_FIRST + r"])\b(?:" + _NATIONAL_ID_NAMES + r")(?:[ \t]+(?:number|no\.?|num(?:ber|[ée]ro)?|nr\.?|#))?"
                   r"\b[^\d\n]{0,24}?(?<![\w.-])((?-i:[A-Z]{2})?[ \t]?\d+(?:[ ./-]\d+){0,7}(?:[ \t]?(?-i:[A-Z]))?)"
                   r"(?![\w-])"),
        group=1,
        accept=_national_id,
        possible=_run_of(string.digits, 6, " ."),
    ),
    _Rule(  # a list of one-time recovery codes under its title, one a line ("GitHub recovery codes:\nab12c-…")
        "access-code",
        ("codes",),
        re.compile(r"(?ai)\b(?:recovery|backup|2fa|mfa|one-time|emergency|scratch)[ \t]+codes\b[^\n]{0,80}"
                   r"((?:\n[ \t]*(?:[-*•][ \t]*|\d{1,2}[.)][ \t]+)?[A-Za-z0-9]{4,12}(?:[- ][A-Za-z0-9]{4,12})?[ \t]*)"
                   r"{2,32})"),
        group=1,
        accept=_code_list,
        ignore_case=True,
    ),
    _Rule(  # a key as a JSON array of its bytes (a Solana keypair's 64, a raw 32-byte key)
        "private-key",
        _DIGITS,  # not "[": a character of its own costs every text a search
        re.compile(r"\[[ \t\n]*\d{1,3}(?:[ \t]*,[ \t\n]*\d{1,3}){31,63}[ \t\n]*\]"),
        accept=_key_bytes,
        possible=lambda data: data.count(b",") >= 31,  # 32 numbers and their commas
    ),
    _Rule(
        "access-code",
        ("code",),
        re.compile(
            r"(?ai)\b(?:door|alarm|gate|garage|safe|lock|locker|entry|building|keypad|security|access|wi-?fi|"
            r"recovery|backup|verification|2fa|one-time|activation|license|licence|product|serial|registration|"
            r"redeem|redemption|unlock)[ \t]+codes?" + _PHRASE_LEAD + _PHRASE_SEPARATOR
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
        ("passw", "passc", "passp", "pass ", "pass\t", "pw", "key"),
        re.compile(
            r"(?ai)\b(?:password|passcode|passphrase|passwd|pass[ \t]+code|pwd?|(?:wi-?fi|network|wpa2?|wlan)[ \t]+key)"
            + _PHRASE_LEAD + _PHRASE_SEPARATOR
            # a word that ends in a colon and a blank is the next key of a mapping (YAML's `password:` over a
            # `valueFrom:` block), not the password
            + r"(?!\[REDACTED)(?![^\s\"'`]*:(?:\s|$))([^\s\"'`]{2,63}[^\s\"'`.,;:!?)\]])"
        ),
        group=1,
        accept=_phrase_password,
        ignore_case=True,
    ),
    _Rule(
        "password-phrase",
        ("passw", "passc", "passp", "pw", "login"),
        re.compile(
            r"(?ai)\b(?:changed|set|reset|updated|switched)[ \t]+(?:my[ \t]+|the[ \t]+|our[ \t]+)?"
            r"(?:[\w-]{1,20}[ \t]+){0,2}?(?:password|passcode|passphrase|passwd|pwd?|login)"
            r"(?:[ \t]+(?:for|on|of|at)[ \t]+[\w.@-]{1,40})?[ \t]+to[ \t]+"
            r"[\"'`]?(?!\[REDACTED)([^\s\"'`]{3,63}[^\s\"'`.,;:!?)\]])"
        ),
        group=1,
        accept=_changed_password,
        ignore_case=True,
    ),
    _Rule(
        "password-phrase",
        ("passw", "passc", "passp", "pw"),
        re.compile(r"(?ai)\b(?:(?:the|my|a|same|with|using|use|new|old)[ \t]+(?:same[ \t]+|new[ \t]+|old[ \t]+)?)?"
                   r"(?:password|passcode|passphrase|pwd?)[ \t]+[\"'`]?" + _STRONG_VALUE),
        group=1,
        accept=_strong_password,
        ignore_case=True,
    ),
    _Rule(
        "password-phrase",
        ("passw", "passc", "passp", "pw"),
        re.compile(r"(?ai)\b(?:password|passcode|passphrase|pwd?)[ \t]*([,(])[ \t]*[\"'`]?"
                   r"(?!\[REDACTED)([^\s\"'`,()]{6,63})[\"'`]?[ \t]*(?(1),|\))"),
        group=2,
        accept=_strong_password,
        ignore_case=True,
    ),
    # The word for password in ~45 languages, a bounded gap, what says "is", the value: English first, sought at
    # its "p" (a rule of its own: its needles are common, and the engine skips to that letter), then the others.
    _Rule(
        "password-phrase",
        ("passw", "passc", "passp", "pw", *("pass" + char for char in _AFTER_PASS)),
        re.compile(r"(?ai)(?=[pP])(?<![A-Za-z])(?P<noun>(?:(?:" + "|".join(_PASSWORD_WORDS_EN) + r")s?|pass)"
                   r"(?![A-Za-z]))"
                   + _SAID_VALUE),
        group=4,
        accept=_strong_password,
        ignore_case=True,
        check=_said_password,
    ),
    _Rule(
        "password-phrase",
        _PASSWORD_WORDS_NEEDLES,
        re.compile(r"(?ai)(?=[" + "".join(sorted({c for w in _PASSWORD_WORDS for c in _first_letters(w)}))
                   + r"])(?<![A-Za-z])(?P<noun>(?:(?:wi-?fi|wlan)[ \t-]?)?(?:" + "|".join(_PASSWORD_WORDS) + r")"
                   + _INFLECTION + ")" + _SAID_VALUE_BARE),
        group=5,
        accept=_strong_password,
        ignore_case=True,
        check=_said_password,
    ),
    _Rule(  # a user's (or a network's) name, a slash, a password: "creds are admin / X", "admin/X for the router"
        "password-phrase",
        # "sername", "outer": each needle starts with a letter the needle index already skips to
        ("cred", "login", "log in", "log-in", "logon", "sign in", "sign-in", "signin", "sername", "admin", "wifi",
         "gged in", "gging in",
         "wi-fi", "wlan", "outer", "ssid", "pn"),
        re.compile(r"(?a)/(?:(?<=[\w.@+-] /)|(?<=[\w.@+-]/))[ \t]?[\"'`]?(?!\[REDACTED)"
                   r"([^\s/\"'`]{5,62}[^\s/\"'`.,;:!?)\]])(?![^\s.,;:!?)\]\"'`])"),
        group=1,
        ignore_case=True,
        check=_login_pair,
    ),
    _Rule(  # a login as a user with its password: "try logging in as root with X", "ssh as deploy using X"
        "password-phrase",
        # needles under letters the index skips to already, few under "s" and "c" (each costs every text)
        ("login", "logon", "log in", "log on", "log-in", "log-on", "logged in", "logged on", "logging in",
         "logging on", "logs in", "logs on", "signin", "sign in", "authenticat"),
        re.compile(r"(?ai)(?=[lsaLSA])\b(?:log(?:in|on| in| on|-in|-on)|log(?:ged|ging|s) (?:in|on)|"
                   r"sign(?:in| in)|authenticat(?:e|ed|es|ing))(?:[ \t]+(?:to|into|on)[ \t]+[\w.@:/-]{1,60})?"
                   r"[ \t]+as[ \t]+[\w.@\\-]{1,64}[ \t]+(?:with|using)[ \t]+"
                   r"(?:(?:the[ \t]+)?(?:password|passphrase|pw|pass)[ \t]+)?[\"'`]?(?!\[REDACTED)"
                   r"([^\s\"'`]{5,62}[^\s\"'`.,;:!?)\]])"),
        group=1,
        accept=lambda v: _strong_password(v) and not _PROTOCOL.fullmatch(v),
        ignore_case=True,
    ),
    _Rule(  # a cell of a markdown table in a column headed password, secret, token, key or PIN
        "password-phrase",
        # the table's |---| line, which `_secret_column` demands, holds one (`_TABLE_RULE`): the one rule whose needle
        # is in the text it reports in, not in the cell ("|" of its own cost every text a search, +2 %)
        ("-|", ":|", "- |", ": |"),
        re.compile(r"\|[ \t]*(?!\[REDACTED)([^|\s](?:[^|\n]{0,98}[^|\s])?)[ \t]*(?=\|)"),
        group=1,
        accept=_password_value,
        check=_secret_column,
    ),
    _Rule(  # a list of private keys in a config: hardhat's `accounts: ["0x…"]`, a signers list
        "ethereum-private-key",
        ("accounts", "privatekeys", "private_keys"),
        re.compile(r"(?ai)(?=[apAP])\b(?:accounts|private_?keys)[\"']?[ \t]*[:=][ \t]*\[[ \t\n]*[\"'](?:0x)?"
                   r"([0-9a-f]{64})[\"']"),
        group=1,
        ignore_case=True,
    ),
    _Rule(  # the value first: "X as my password", "typed X into the password field"
        "password-phrase",
        ("passw", "passc", "passp", "pin", "login"),  # not " as ": a blank first would be tried at every blank
        re.compile(r"(?ai)(?<![^\s\"'`(])[\"'`]?(?!\[REDACTED)([^\s\"'`]{6,63})[\"'`]?[ \t]* (?:as|into|in) [ \t]*"
                   r"(?:the|my|your|our|a|his|her|their)[ \t]+(?:new[ \t]+|login[ \t]+|account[ \t]+)?"
                   r"(?:password|passcode|passphrase|passwd|pin|login)\b"
                   r"(?![ \t]+(?:managers?|vaults?|apps?|generators?|policy|policies|files?|hints?)\b)"),
        group=1,
        accept=_strong_password,
        ignore_case=True,
    ),
    _Rule(  # the value first: "X is my password", "X, that's the root password", "X — it's the wifi pw"
        "password-phrase",
        ("passw", "passc", "passp", "pw"),
        re.compile(r"(?ai)(?<![^\s\"'`(])[\"'`]?(?!\[REDACTED)([^\s\"'`]{6,63})[\"'`]?[ \t]*(?:[,:—–-][ \t]*)?"
                   r"(?:(?:is|was)|(?:that|it|this)(?:['’]s|[ \t]+(?:is|was)))[ \t]+(?:my|the|our|your|his|her|their)"
                   r"[ \t]+(?:[\w'’-]{1,20}[ \t]+){0,2}?(?:password|passcode|passphrase|passwd|pwd|pw)\b"),
        group=1,
        accept=_strong_password,
        ignore_case=True,
    ),
    _Rule(
        "seed-phrase",
        (*_BLANKS, ","),
        re.compile(r"(?<![A-Za-z])" + _SEED_WORD + r"(?:(?:[ \t]+|[ \t]*[\n,][ \t]*)(?:[0-9]{1,2}[.):][ \t]*)?"
                   + _SEED_WORD + "){11,23}"),  # blanks, a comma or a line between words; a list's numbers
        possible=_many_blanks,
        check=_seed_phrase,
    ),
    _Rule(
        "totp-key",
        ("2fa", "mfa", "otp", "authenticator", "setup key", "two-factor"),
        re.compile(r"(?ai)\b(?:2fa|mfa|t?otp|authenticator|setup key|two-factor)\b[^\n]{0,40}?" + _TOTP_GROUPS),
        group=1,
        accept=_totp_key,
        ignore_case=True,
    ),
    _Rule(  # unnamed: six to eight groups of four capitals of base32, as shown to be typed
        "totp-key",
        _DIGITS,
        re.compile(r"(?<![\w-])[A-Z2-7]{4}(?: [A-Z2-7]{4}){5,7}(?![\w-])"),
        accept=_spaced_base32,
        possible=_TOTP_RUN,
    ),
    _Rule(  # lines of key characters: sought where a line ends and 16 of them are in a row
        "wrapped-key",
        ("\n",),
        re.compile(r"(?m)^[ \t]*[A-Za-z0-9+/=_-]{16,100}[ \t]*(?:\n[ \t]*[A-Za-z0-9+/=_-]{16,100}[ \t]*)+$"),
        accept=_wrapped_key,
        possible=_KEY_LINE_RUN,
        check=lambda match: not _inside_public_block(match.string, match.start()),
    ),
    _Rule("card-number", _DIGITS, re.compile(r"(?<![0-9A-Za-z-])[0-9](?:[ -]?[0-9]){14,15}(?![0-9A-Za-z-])"),
          accept=_card_number,
          possible=_CARD_DIGITS,
          check=_real_card),
    # A capital first, the word's start checked after it: the engine skips to capitals (\b first, it tried every
    # position).
    _Rule("iban", _DIGITS, re.compile(r"(?a)[A-Z](?<!\w[A-Z])[A-Z][0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b"),
          accept=_iban,
          possible=_IBAN_RUN),
    _Rule(_HIGH_ENTROPY, _DIGITS,
          re.compile(r"(?<![A-Za-z0-9+/=_~.-])[A-Za-z0-9+/_~-][A-Za-z0-9+/_~.-]{30,}[A-Za-z0-9+/_~-]={0,2}"),
          accept=_looks_random, possible=_TOKEN_RUN, check=_random_token),
    # After the random-token rule: what it took stays its. Sought at the separator after the name (`_prefixed_token`
    # reads the name back), where a digit and a run of 24 token characters are.
    _Rule("vendor-token", _DIGITS,
          re.compile(r"[_.:-](?P<body>[A-Za-z0-9]{23,}(?:[_.:-][A-Za-z0-9]{4,})*)(?![A-Za-z0-9_.:/+~=-])"),
          group=1, possible=_run_of(_KEY_CHARS, 24), check=_prefixed_token),
    # After those, whose kinds are the more telling for a random value.
    _Rule(  # a key, secret, token, seed, code or PIN said in words, with a bounded gap (`_said_secret`)
        "key-phrase",
        ("key", "secret", "token", "seed", "code", "combination", "pin"),
        re.compile(r"(?ai)(?=[kstcp])(?<![A-Za-z0-9_-])(?P<noun>keys?|secrets?|tokens?|seeds?|codes?|combination|pins?)"
                   r"(?![A-Za-z0-9_-])(?P<gap>" + _GAP + ")" + _SAYS
                   + r"[ \t]*[\"'`]?(?!\[REDACTED)" + _MAY_BE_STRONG + r"([^\s\"'`,;]{3,298}[^\s\"'`.,;:!?)\]])"),
        group=3,
        ignore_case=True,
        check=_said_secret,
    ),
)


def _value_group(rule: _Rule, match: re.Match[str]) -> int:
    """The rule's group, or else the last group that took part (a quoted or a bare value), or the whole match."""
    return rule.group or match.lastindex or 0


# --- the needle shortcut: which rules' needles a text holds
#
# Each rule is a bit; every needle maps to the bits of the rules that list it, and a text's rules are the union of
# the bits of the needles it holds: exactly the rules with a needle in it, as a search per rule finds them. Each
# kind of needle is first sought by one search for any of them (most texts hold none: 97 % of the messages of the
# synthetic corpus), and only a hit pays for finding which:
# - needles of rules that ignore case, in the lower-cased text: one trie (`textscan.trie`, which keeps a needle
#   only when no shorter one starts it), searched again after each hit; a needle that a shorter one starts
#   ("password" after "passw") is checked where that one is found;
# - the other ASCII needles: one pattern of their anchors (`textscan.anchored`: the first character that is no
#   small letter, rarer in prose), each followed by what its needles hold after it and looked behind for what they
#   hold before ("-(?<=sk-)ant-"); then each group whose anchor the text holds, needle by needle;
# - needles of one character (the digits, the blanks, the line end): one translation of the UTF-8 bytes marks each
#   set of them with its class, one search per class;
# - needles beyond ASCII, only in a text that is not ASCII (an ASCII text holds none, lower-cased or not).
# Then the shapes (`possible`): the bytes are marked once per kind of run, however many rules ask for one. Before,
# by families of needles, then rule by rule, a log excerpt of 400 characters whose "-" let 22 rules search their own
# needles cost 28 µs, and the synthetic corpus 80,800 machine instructions a message (callgrind; 71,500 now).
# Bytes are searched by `find`: in CPython 3.11 `in` first tries the operand as an integer, and raises and clears
# an error each time (170 ns against 85 for a text of 70 bytes).

_Group = tuple[str, int, tuple[tuple[str, int], ...]]  # an anchor, its needles' bits, each needle and its bits


def _rule_bits(ignore_case: bool, ascii: bool) -> dict[str, int]:
    """Every needle of the rules that search the text so (lower-cased or not) and of that kind (ASCII or not), and
    the bits of the rules that list it."""
    bits: dict[str, int] = {}
    for index, rule in enumerate(_RULES):
        if rule.ignore_case != ignore_case:
            continue
        for needle in rule.needles:
            if needle.isascii() == ascii:
                bits[needle] = bits.get(needle, 0) | 1 << index
    return bits


def _union(masks: Iterable[int]) -> int:
    total = 0
    for mask in masks:
        total |= mask
    return total


def _groups(bits: dict[str, int]) -> tuple[_Group, ...]:
    return tuple((anchor, _union(bits[n] for n in group), tuple((n, bits[n]) for n in group))
                 for anchor, group in anchored(tuple(bits)))


def _at_anchors(groups: tuple[_Group, ...]) -> re.Pattern[str]:
    """One search for any needle of the groups, each sought at its anchor: the engine skips to the anchors."""
    alternatives = []
    for anchor, _, needles in groups:
        rests = []
        for needle, _ in needles:
            head, _, rest = needle.partition(anchor)
            rests.append((f"(?<={re.escape(head + anchor)})" if head else "") + re.escape(rest))
        alternatives.append(re.escape(anchor) + ("(?:" + "|".join(rests) + ")" if rests != [""] else ""))
    return re.compile("|".join(alternatives))


def _word_trie(bits: dict[str, int]) -> tuple[re.Pattern[str], dict[str, tuple[int, tuple[tuple[str, int], ...]]]]:
    """The trie of the needles and, for each needle it finds, its own bits and the longer needles it starts, with
    theirs."""
    pattern = re.compile(trie(tuple(bits)))
    hits: dict[str, tuple[int, tuple[tuple[str, int], ...]]] = {}
    for needle in sorted(bits, key=len):
        head = next((h for h in hits if needle.startswith(h)), None)
        if head is None:
            hits[needle] = (bits[needle], ())
        else:
            own, longer = hits[head]
            hits[head] = (own, (*longer, (needle, bits[needle])))
    return pattern, hits


_FOLDED = _rule_bits(True, True)
_FOLDED_TRIE, _FOLDED_HITS = _word_trie(_FOLDED)
_FOLDED_BITS = _union(_FOLDED.values())
_CASED = _rule_bits(False, True)
# Needles of one character by their rules' bits, each set a class: "0", "1"… in the bytes marked by _SINGLE_TABLE.
_SINGLE_SETS = tuple(dict.fromkeys(bits for needle, bits in _CASED.items() if len(needle) == 1))
_SINGLE_CLASSES = tuple((bytes([48 + n]), bits) for n, bits in enumerate(_SINGLE_SETS))
_SINGLE_TABLE = bytes(next((48 + n for n, bits in enumerate(_SINGLE_SETS) if _CASED.get(chr(code)) == bits), 32)
                      if code < 128 else 32 for code in range(256))
_CASED_GROUPS = _groups({needle: bits for needle, bits in _CASED.items() if len(needle) > 1})
_CASED_SEARCH = _at_anchors(_CASED_GROUPS).search
_CASED_BITS = _union(bits for _, bits, _ in _CASED_GROUPS)


def _by_first(groups: tuple[_Group, ...]) -> dict[str, list[tuple[str, tuple[tuple[str, int, int], ...]]]]:
    """The groups by their anchor's first character: (anchor, (needle, where the anchor is in it, bits))."""
    found: dict[str, list[tuple[str, tuple[tuple[str, int, int], ...]]]] = {}
    for anchor, _, needles in groups:
        found.setdefault(anchor[0], []).append(
            (anchor, tuple((needle, needle.index(anchor), bits) for needle, bits in needles)))
    return found


_CASED_AT = _by_first(_CASED_GROUPS)
_BEYOND_CASED = _groups(_rule_bits(False, False))
_BEYOND_FOLDED = _groups(_rule_bits(True, False))
_NEEDLELESS = _union(1 << index for index, rule in enumerate(_RULES) if not rule.needles)


def _in_groups(text: str, groups: tuple[_Group, ...], mask: int) -> int:
    """`mask` with the bits of every needle of the groups that text holds."""
    for anchor, group_bits, needles in groups:
        if group_bits & ~mask and anchor in text:
            for needle, bits in needles:
                if bits & ~mask and needle in text:
                    mask |= bits
    return mask


def _cased_in(text: str, found: re.Match[str] | None, mask: int) -> int:
    """`mask` with the bits of every ASCII needle of two characters or more of the rules that heed case that text
    holds, `found` the search's first hit: each needle looked for around the anchors the search finds."""
    search = _CASED_SEARCH
    while found is not None:
        start = found.start()
        for anchor, needles in _CASED_AT[text[start]]:
            if text.startswith(anchor, start):
                for needle, offset, bits in needles:
                    if bits & ~mask and start >= offset and text.startswith(needle, start - offset):
                        mask |= bits
        if not _CASED_BITS & ~mask:
            break
        found = search(text, start + 1)
    return mask


def _folded_in(lowered: str, found: re.Match[str] | None, mask: int) -> int:
    """`mask` with the bits of every ASCII needle of the rules that ignore case that the lower-cased text holds,
    `found` the trie's first hit."""
    search = _FOLDED_TRIE.search
    while found is not None:
        start = found.start()
        own, longer = _FOLDED_HITS[found.group()]
        mask |= own
        for needle, bits in longer:
            if bits & ~mask and lowered.startswith(needle, start):
                mask |= bits
        if not _FOLDED_BITS & ~mask:
            break
        found = search(lowered, start + 1)
    return mask


_Plan = tuple[tuple[tuple[bytes, bytes], ...], tuple[tuple[_Rule, int, bytes, Callable[[bytes], bool] | None], ...]]


@lru_cache(maxsize=4096)  # a mask per set of needles a text holds: few in practice, bounded all the same
def _plan(mask: int) -> _Plan:
    """The rules of those bits, in order, and how to ask each its shape: the markings their runs need (each made once
    per text), and per rule the index of its marking and its run, or -1 and its shape check (or None)."""
    markings: list[tuple[bytes, bytes]] = []
    steps: list[tuple[_Rule, int, bytes, Callable[[bytes], bool] | None]] = []
    for index, rule in enumerate(_RULES):
        if not mask >> index & 1:
            continue
        possible = rule.possible
        if isinstance(possible, _Run):
            if possible.marking not in markings:
                markings.append(possible.marking)
            steps.append((rule, markings.index(possible.marking), possible.run, None))
        else:
            steps.append((rule, -1, b"", possible))
    return tuple(markings), tuple(steps)


def _rules_in_play(text: str) -> tuple[_Rule, ...]:
    """The rules with a needle in text (sought in the lower-cased text when the rule ignores case), or none at all,
    and whose shape the text may hold (`possible`, asked of its UTF-8 bytes): the others cannot report a span."""
    data = text.encode()
    lowered = text.lower()
    mask = _NEEDLELESS
    found = _FOLDED_TRIE.search(lowered)
    if found is not None:
        mask = _folded_in(lowered, found, mask)
    found = _CASED_SEARCH(text)
    if found is not None:
        mask = _cased_in(text, found, mask)
    classes = data.translate(_SINGLE_TABLE)
    for char_class, bits in _SINGLE_CLASSES:
        if classes.find(char_class) >= 0:
            mask |= bits
    if len(data) != len(text):  # not ASCII
        mask = _in_groups(lowered, _BEYOND_FOLDED, _in_groups(text, _BEYOND_CASED, mask))
    if not mask:
        return ()
    markings, steps = _plan(mask)
    marked = [data.translate(table, dropped) for table, dropped in markings]
    return tuple([rule for rule, marking, run, possible in steps
                  if (marked[marking].find(run) >= 0 if marking >= 0 else possible is None or possible(data))])


def _spans(text: str, rules: tuple[_Rule, ...]) -> Iterator[tuple[int, int, str]]:
    """Every secret span the rules find in text, earlier rules first, never two spans over the same characters."""
    taken: list[tuple[int, int]] = []

    def free(start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e in taken)

    for rule in rules:
        for match in rule.pattern.finditer(text):
            group = _value_group(rule, match)
            value = match.group(group)
            if "[REDACTED:" in value:  # what it held of a secret is gone: redacting again changes nothing
                continue
            if rule.accept is not None and not rule.accept(value):
                continue
            if rule.check is not None and not rule.check(match):
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
# Vendor prefixes long or odd enough that 8 key characters after one mean a key (not "key-", "SK", "EAA": words).
_GUARDED_PREFIXES = ("dop_v1_", "doo_v1_", "dor_v1_", "shpat_", "shpca_", "shppa_", "shpss_", "PMAK-",
                     "AGE-SECRET-KEY-1", "SG.", "sq0atp-", "HRKU-", "pypi-AgEI", "dckr_pat_", "dckr_oat_", "lin_api_",
                     "hvs.", "hvb.", "NRAK-", "xapp-", "ya29.", "tskey-", "figd_", "glc_", "dt0c01.", "FLWSECK",
                     "rubygems_", "pscale_", "phx_", "sbp_", "rdme_", "bkua_", "shippo_", "CFPAT-")
_KEY_PREFIX = re.compile(
    r"(?<![A-Za-z0-9])(?:sk-ant-|sk-or-|sk-proj-|sk-|sk_live_|sk_test_|rk_live_|rk_test_|whsec_|gh[pousr]_|"
    r"github_pat_|gl(?:pat|dt|rt|cbt|ptt|ft|soat|oas)-|xox[abposre]-|AIza|AKIA|ASIA|npm_|hf_|eyJ|"
    + "|".join(map(re.escape, _GUARDED_PREFIXES)) + r")[A-Za-z0-9_-]{8,}"
)
_CREDENTIAL_WORDS = (r"(?:pin|pin code|pin number|passwords?|passcodes?|passphrases?|passwd|cvv|cvc|cvv2|"
                     r"security code|(?:bank |credit |debit )?card(?: number)?|account(?: number)?|routing number|"
                     r"sort code|iban|social security number|ssn|tax id|passport number)")
_CREDENTIAL_FACT = re.compile(
    r"(?ai)\b" + _CREDENTIAL_WORDS + r"\b"
    r"(?![ \t]+(?:managers?|vaults?|apps?|generators?|resets?|hints?|policy|policies|strength|length|rotation)\b)"
    r"[^.;\n]{0,40}?(?:\bis\b|\bwas\b|\bare\b|:|=|\bof\b|\bending in\b)"
    r"\s*[\"'`]?(?=[^\s\"'`]*\d)[^\s\"'`]{3,}"
)
_DIGIT_RUN = re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])")  # not a run inside a hex id
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
        if _luhn(digits) and len(set(digits)) > 1 and not (
                digits in _TEST_CARDS and _TEST_SAID.search(text, max(0, match.start() - 60), match.start())):
            return "card-number"  # a processor's published test number said as one is public (`_real_card`)
    if _IBAN.search(text):
        return "account-number"
    return None


# --- a key split across two consecutive messages ("first half: ghp_…" / "and the rest: …")

SPLIT_HEAD = 40  # a key's second piece starts within the first 40 characters of the next message
SPLIT_CONTEXT = 80  # the characters before the first piece that give the rules a name ("api key: …")
_PIECE_CHARS = frozenset(string.ascii_letters + string.digits + "+/_~=-")
_PIECE = re.compile(r"[A-Za-z0-9+/_~=-]{4,}")
# A flag, a vendor's prefix, 0x and hex: a token's start, not the rest of one.
_TOKEN_START = re.compile(r"-|0x[0-9a-fA-F]+\Z|[A-Za-z]{2,10}[_-]")
_PIECE_STRING = "".join(sorted(_PIECE_CHARS))
_CLOSERS = " \t\r\n.,;:!?)}\"'`"  # not "]", which ends a redaction
_REDACTION_END = re.compile(r"\[REDACTED:([a-z0-9-]+)\Z")


def _key_piece(run: str) -> bool:
    """A piece of a random key: 12 to 47 characters with capitals, small letters, and digits or four turns of case
    (hex, capitals and digits, lower case and digits are hashes, tracking numbers, addresses, which end and start
    messages alone), no word ("1Password") nor words joined ("Google/GitHub")."""
    return (12 <= len(run) < 48 and any(c.isupper() for c in run) and any(c.islower() for c in run)
            and not all(_WORD_PART.fullmatch(part) for part in _PIECE_JOINS.split(run) if part)  # "Google/GitHub"
            and (_has_digit(run) or _switches(run) >= 4))


_PIECE_JOINS = re.compile(r"[+/_~=-]")


def _head_piece(text: str) -> tuple[int, int] | None:
    """The span of the first run of key characters that starts within the head of a text (the words before it say
    "and the rest:"), when it is a key's piece and no token's start."""
    for match in _PIECE.finditer(text, 0, SPLIT_HEAD + 48):
        if match.start() >= SPLIT_HEAD:
            return None
        run = match.group()
        if run.isalpha() and (run.islower() or run.isupper() or run.istitle()):  # a word
            continue
        start = match.start()
        if run.startswith("-") and not _FLAG_WORD.fullmatch(run):  # a key's rest, cut before a dash
            start += len(run) - len(run.lstrip("-"))
            run = run.lstrip("-")
        if (_TOKEN_START.match(run) or not _key_piece(run)
                or _PUBLIC_BEFORE.search(text, max(0, match.start() - 40), match.start())
                or _address_paid_to(text, match.start(), run) or _public_jwk_member(text, match.start(), match.end())):
            return None
        return start, match.end()
    return None


# A flag: a dash or two and a word of small letters and digits ("--verbose", "-rf"), or a letter and one more.
_FLAG_WORD = re.compile(r"-{1,2}[a-z][a-z0-9-]*|-{1,2}[a-z][A-Z0-9]")


@dataclass(frozen=True, slots=True)
class Split:
    """A secret found across two texts: the texts with its pieces replaced, and its kind."""

    before: str
    after: str
    kind: str


def split_secret(before: str, after: str) -> Split | None:
    """A secret whose first piece ends `before` and whose second starts within the first 40 characters of `after`
    (two consecutive messages of one session), or None. The pieces (12 to 47 key characters, capitals, small
    letters and digits; the second no flag, no vendor's prefix, which start a token, and no public value) are
    joined, after the end of `before`
    for context, and the rules judge the join: a span across the seam is a key, and both pieces are redacted. When
    `before` ends in a redaction, its piece was found alone: a random piece in the head of `after` is its rest.

    Only the last 80 + 48 characters of `before` and the first 88 of `after` are looked at, and the rules run only
    when `before` ends in a key piece and `after` starts with one (most texts end in a word or a mark)."""
    if not before or not after:
        return None
    # The end of `before` in string methods (a message each, no rule, no regex): the closing marks, then the run
    # of key characters before them.
    window = before[-100:]
    offset = len(before) - len(window)
    closed = window.rstrip(_CLOSERS)
    if closed.endswith("]"):  # a redaction: a piece found alone, whose rest may start the next message
        redaction = _REDACTION_END.search(closed, max(0, len(closed) - 40), len(closed) - 1)
        head = _head_piece(after) if redaction is not None else None
        if redaction is None or head is None:
            return None
        kind = redaction.group(1)
        return Split(before, after[:head[0]] + PLACEHOLDER.format(kind) + after[head[1]:], kind)
    run = len(closed) - len(closed.rstrip(_PIECE_STRING))
    if not 12 <= run < 32 or not _key_piece(closed[-run:]):  # a run of 32 or more was judged alone
        return None
    tail = (offset + len(closed) - run, offset + len(closed))
    head = _head_piece(after)
    if head is None:
        return None
    context_start = max(0, tail[0] - SPLIT_CONTEXT)
    seam = tail[1] - context_start
    probe = before[context_start:tail[1]] + after[head[0]:head[1]]
    for start, end, kind in _spans(probe, _rules_in_play(probe)):
        if start < seam < end:
            marker = PLACEHOLDER.format(kind)
            return Split(before[:tail[0]] + marker + before[tail[1]:], after[:head[0]] + marker + after[head[1]:],
                         kind)
    return None
