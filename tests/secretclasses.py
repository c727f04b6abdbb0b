"""A generator of secrets by class, in the phrasings people and tools write them, and of harmless look-alikes.

Each class of issue 22's section 3 has several *forms* (a phrasing, a command, a vendor's format), each marked
`train` (the rules were written looking at these) or held-out (never looked at while writing the rules: the
figures for them say how the rules generalise): `held-out`, `held-out-2` and `held-out-3`, each set written before
the round of rules that followed it (a held-out form whose slip got a rule became a train form), and `held-out-4`,
written from outside by someone who never read the rules, and `held-out-5`, a second such set (the two blocks at
the end of this file, each drawn from streams of its own and listed last). Every call draws
fresh values from its seed: nothing here is a fixed example to tune on.

    cases(seed)       -> [Case]        one case per form, values fresh per seed
    lookalikes(seed)  -> [Lookalike]   texts holding no secret, of the shapes secrets are confused with

A Case's `secrets` are the values that must not survive whole; `text` is what a message would hold. `invisible`
plants a zero-width character inside the first secret (canonical screening removes it before redaction: the
report measures both the raw text and the canonical one).
"""

from __future__ import annotations

import base64
import hashlib
import random
import string
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B32 = string.ascii_uppercase + "234567"
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
BIP39 = (Path(__file__).resolve().parents[1] / "distiller" / "bip39_english.txt").read_text().split()
INVISIBLE = ("\u200b", "\u200c", "\u200d", "\u2060", "\u00ad", "\ufeff", "\u202e")


@dataclass(frozen=True)
class Case:
    cls: str
    form: str
    split: str  # train | held-out | held-out-2 | held-out-3 | held-out-4 | held-out-5
    text: str
    secrets: tuple[str, ...]


@dataclass(frozen=True)
class Lookalike:
    form: str
    split: str
    text: str


def token(r: random.Random, n: int, alphabet: str = ALNUM) -> str:
    """n characters of alphabet; for ALNUM and n >= 8, two or more each of capitals, small letters and digits."""
    while True:
        value = "".join(r.choice(alphabet) for _ in range(n))
        if alphabet != ALNUM or n < 8 or (sum(c.isupper() for c in value) >= 2 and sum(c.islower() for c in value) >= 2
                                 and sum(c.isdigit() for c in value) >= 2):
            return value


def hexstr(r: random.Random, n: int) -> str:
    while True:
        value = token(r, n, HEX)
        if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            return value


def password(r: random.Random) -> str:
    """What people pick: a word with digits and a symbol, or a random string."""
    words = ["sunflower", "Marmalade", "bluefish", "Tornado", "quietriver", "Pelican", "copperleaf", "Banjo",
             "wintergreen", "Kestrel", "lemontree", "Gravel", "moonpie", "Saffron", "tangerine", "Otter"]
    kind = r.randrange(3)
    if kind == 0:
        return r.choice(words) + str(r.randrange(10, 9999)) + r.choice("!#$%&*?@")
    if kind == 1:
        return r.choice(words).capitalize() + r.choice(".-_") + str(r.randrange(100, 99999))
    return token(r, r.randrange(10, 18), ALNUM + "!#%*+-_")


def b64(r: random.Random, nbytes: int) -> str:
    return base64.b64encode(r.randbytes(nbytes)).decode()


def mnemonic(r: random.Random, words: int) -> str:
    """A BIP-39 mnemonic with a valid checksum, as wallets make them."""
    entropy = r.randbytes(words * 4 // 3)
    bits = bin(int.from_bytes(entropy, "big"))[2:].zfill(len(entropy) * 8)
    bits += bin(hashlib.sha256(entropy).digest()[0])[2:].zfill(8)[: len(entropy) * 8 // 32]
    return " ".join(BIP39[int(bits[i:i + 11], 2)] for i in range(0, len(bits), 11))


def luhn_complete(body: str) -> str:
    total = 0
    for i, d in enumerate(map(int, reversed(body))):
        v = d * 2 if i % 2 == 0 else d
        total += v - 9 if v > 9 else v
    return body + str(-total % 10)


Form = tuple[str, str, Callable[[random.Random], tuple[str, tuple[str, ...]]]]  # name, split, draw


def _one(text: str, *secrets: str) -> tuple[str, tuple[str, ...]]:
    return text, secrets


T, H, H2, H3, H4, H5 = "train", "held-out", "held-out-2", "held-out-3", "held-out-4", "held-out-5"
SPLITS = (T, H, H2, H3, H4, H5)
# Held-out forms that slipped in round 2 and had rules written for them in round 3: train since (the others marked
# "held-out until round 3" in place).
PROMOTED = frozenset({"discord bot", "databricks dapi", "pulumi pul-", "azure ad Q~", "user name alice, password X",
                      "X is my password", "my router's admin password → X", "il codice del wifi è X",
                      "salasanani on X", "şifrem X", "a jelszavam X",
                      "airtable pat."})  # held-out-2 until round 5 (found by shape: a high-entropy token)
# Held-out-2 and held-out-3 forms that slipped in round 4 and had general mechanisms written for them in round 5:
# train since (the others marked "held-out-N until round 5" in place).
PROMOTED_5 = frozenset({
    "twitch oauth:", "creds are admin / X", "my gmail pass is still X", "password? it's X", "the passphrase I chose: X",
    "wifi: HomeNet5G / X", "the password i gave the landlord was X", "parola mea de la email este X",  # held-out-2
    "datastax AstraCS:", "langsmith lsv2_pt_", "rabbitmqctl add_user", "remember: admin/X for the router",  # held-out-3
    "I typed X into the password field and it worked", "temporary password (change at login): X",
    "the shared account's secret is X btw", "login ops, pass X", "the code to unlock the laptop is X",
    "wifi şifresi X"})


# Forms of held-out-3 made train: they still draw from held-out-3's stream, so that no other value changes.
DRAWN_AS_H3 = {"xml <password> element", "PuTTY key private lines"}
# Held-out-4 forms (and look-alikes) that slipped in round 5 and had general mechanisms written for them in round 6:
# train since ("held-out-4 until round 6"). They still draw from held-out-4's streams, in held-out-4's place among
# the cases, so that no value and no case's index moves.
PROMOTED_6 = frozenset({
    "docker run -e NAME=value", "ruby ENV.fetch default hex", "activation code 4x4 in prose", "echo | sudo -S",
    "lftp -u user,pass", "xfreerdp /p:", "docker-compose environment list", "sqlplus user/pass@",
    "hcl variable default", ".pgpass line", "hardhat accounts array", "2FA recovery codes list",
    "| env | user | password |\n|---|---|---|\n| staging | admin | X |", "try logging in as root with X",
    "forgot to mention, password's X", "logged in fine with alice@example.com / X", "รหัสผ่านคือ X นะ",
    "мій пароль від пошти X", "la meva contrasenya és X", "ang password ko sa email ay X", "nenosiri langu ni X",
    "رمز عبور من X است", "json payment cvc", "three digits on the back", "German Prüfnummer",
    "Authorization: ApiKey base64", "nostr nsec", "solana keypair json array", "UK NI number", "Canadian SIN",
    "Aadhaar", "Spanish DNI", "Brazilian CPF", "French NIR",
    # look-alikes
    "${VAR} reference", "go.sum line", "RSA JWK public", "bitcoin xpub", "solana address", "password error message",
    "stripe test card from docs", "x-amz-id-2"})  # held-out-4 until round 6


def _drawn_as_h4(name: str, split: str) -> bool:
    return split == H4 or name in PROMOTED_6


def _split(name: str, split: str) -> str:
    if name in PROMOTED or name in PROMOTED_5:
        if split == H3:
            DRAWN_AS_H3.add(name)
        return T
    return split


def _forms() -> dict[str, list[Form]]:
    f: dict[str, list[Form]] = {}

    def add(cls: str, name: str, split: str):
        def wrap(draw):
            f.setdefault(cls, []).append((name, split, draw))
            return draw
        return wrap

    # --- a value right after = or : with no space
    @add("no-space-assignment", "ENV=value", T)
    def _(r):
        v = token(r, r.randrange(24, 44))
        return _one(f"set this before running: ACCOUNT_KEY={v} then restart", v)

    @add("no-space-assignment", "export NAME=value", T)
    def _(r):
        v = token(r, 28, ALNUM + "_-")
        return _one(f"export DEPLOY_SECRET={v}\nnpm run deploy", v)

    @add("no-space-assignment", "yaml name:value", T)
    def _(r):
        v = token(r, 32)
        return _one(f"config:\n  apiKey:{v}\n  region: eu-west-1", v)

    @add("no-space-assignment", "windows set", H)
    def _(r):
        v = token(r, 30)
        return _one(f"C:\\> set SERVICE_AUTH_TOKEN={v}", v)

    @add("no-space-assignment", "powershell $env:", H)
    def _(r):
        v = token(r, 36)
        return _one(f'$env:SIGNING_SECRET="{v}"; ./run.ps1', v)

    @add("no-space-assignment", "json no blanks", H)
    def _(r):
        v = token(r, 40, ALNUM + "_-")
        return _one(f'{{"client":"web","clientSecret":"{v}","scopes":["read"]}}', v)

    # --- lower-case hex and ALL-CAPS in a key context
    @add("hex-key-context", "DD_API_KEY=hex32", T)
    def _(r):
        v = hexstr(r, 32)
        return _one(f"DD_API_KEY={v}", v)

    @add("hex-key-context", "json secret hex40", T)
    def _(r):
        v = hexstr(r, 40)
        return _one(f'{{"secret": "{v}", "id": 7}}', v)

    @add("hex-key-context", "prose auth token hex", T)
    def _(r):
        v = hexstr(r, 32)
        return _one(f"the twilio auth token: {v}", v)

    @add("hex-key-context", "header X-Api-Key", H)
    def _(r):
        v = hexstr(r, 32)
        return _one(f"curl -H 'X-Api-Key: {v}' https://api.example.org/v2/items", v)

    @add("hex-key-context", "python hmac_secret", H)
    def _(r):
        v = hexstr(r, 64)
        return _one(f"hmac_secret = '{v}'", v)

    @add("caps-key-context", "LICENSE_KEY=CAPS", T)
    def _(r):
        v = token(r, 24, string.ascii_uppercase + string.digits)
        return _one(f"LICENSE_KEY={v}", v)

    @add("caps-key-context", "token: CAPS letters", T)
    def _(r):
        v = token(r, 26, string.ascii_uppercase)
        return _one(f"token: {v}", v)

    @add("caps-key-context", "product key dashed", H)
    def _(r):
        v = "-".join(token(r, 5, string.ascii_uppercase + string.digits) for _ in range(5))
        return _one(f"REGISTRATION_KEY = {v}", v)

    @add("caps-key-context", "accessKey json CAPS", H)
    def _(r):
        v = token(r, 20, string.ascii_uppercase + string.digits)
        return _one(f'"accessKey": "{v}"', v)

    # --- URL-encoded values
    @add("url-encoded", "&token=%2B", T)
    def _(r):
        raw = "+" + b64(r, 24)
        v = urllib.parse.quote(raw, safe="")
        return _one(f"GET https://api.example.com/v1/feed?limit=20&token={v}&page=2", v)

    @add("url-encoded", "SAS sig=", T)
    def _(r):
        v = urllib.parse.quote(b64(r, 32), safe="")
        return _one(f"https://acme{r.randrange(99)}.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o"
                    f"&sp=r&se=2026-12-31T00:00:00Z&spr=https&sig={v}", v)

    @add("url-encoded", "access_token= query", H)
    def _(r):
        v = urllib.parse.quote("/" + b64(r, 27), safe="")
        return _one(f"https://graph.example.net/me?fields=id,name&access_token={v}", v)

    @add("url-encoded", "X-Amz-Signature", H)
    def _(r):
        v = hexstr(r, 64)
        return _one(f"https://bucket.s3.amazonaws.com/report.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=3600"
                    f"&X-Amz-SignedHeaders=host&X-Amz-Signature={v}", v)

    # --- command lines
    @add("command-line", "curl -u user:pass", T)
    def _(r):
        p = password(r)
        return _one(f"curl -u admin:{p} https://ci.example.com/api/json", p)

    @add("command-line", "mysql -pSECRET", T)
    def _(r):
        p = password(r).replace("'", "")
        return _one(f"mysql -h db.local -u root -p{p} shop < dump.sql", p)

    @add("command-line", "sshpass -p", T)
    def _(r):
        p = password(r)
        return _one(f"sshpass -p '{p}' ssh deploy@10.0.0.{r.randrange(2, 250)}", p)

    @add("command-line", "PGPASSWORD= psql", T)
    def _(r):
        p = password(r)
        return _one(f"PGPASSWORD={p} psql -h localhost -U app app_db", p)

    @add("command-line", "docker login -p", T)
    def _(r):
        p = password(r)
        return _one(f"docker login -u bob -p {p} registry.example.com", p)

    @add("command-line", "redis-cli -a", T)  # held-out until round 3
    def _(r):
        p = password(r)
        return _one(f"redis-cli -h cache.internal -a {p} ping", p)

    @add("command-line", "ldapsearch -w", T)  # held-out until round 3
    def _(r):
        p = password(r)
        return _one(f"ldapsearch -x -D 'cn=admin,dc=example,dc=org' -w {p} -b dc=example,dc=org", p)

    @add("command-line", "openssl -passin pass:", H)
    def _(r):
        p = password(r)
        return _one(f"openssl pkcs12 -in cert.p12 -passin pass:{p} -out cert.pem", p)

    @add("command-line", "curl --user", H)
    def _(r):
        p = password(r)
        return _one(f"curl --user ci-bot:{p} -X POST https://jenkins.local/job/x/build", p)

    @add("command-line", "mongosh --password", H)
    def _(r):
        p = password(r)
        return _one(f"mongosh --host db --username root --password {p}", p)

    # --- .env lines with names outside any list
    @add("env-unlisted", ".env block", T)
    def _(r):
        a, s, w = "base64:" + b64(r, 32), token(r, 40), "whsig_" + token(r, 30)
        return _one(f"APP_ENV=production\nAPP_KEY={a}\nSESSION_DRIVER=redis\nSTRIPE_WEBHOOK_SIGNING={w}\n"
                    f"JWT_SIGNING={s}", a, w, s)

    @add("env-unlisted", "MAILER_PASS", T)
    def _(r):
        p = password(r)
        return _one(f"MAILER_HOST=smtp.example.com\nMAILER_PASS={p}\n", p)

    @add("env-unlisted", "NEXTAUTH_SECRET", H)
    def _(r):
        v = b64(r, 32)
        return _one(f"NEXTAUTH_URL=http://localhost:3000\nNEXTAUTH_SECRET={v}", v)

    @add("env-unlisted", "COOKIE_SIGNING_KEY lower", H)
    def _(r):
        v = token(r, 48, string.ascii_lowercase + string.digits)
        return _one(f"COOKIE_SIGNING_KEY={v}", v)

    # --- connection strings
    @add("connection-string", "Azure storage AccountKey", T)
    def _(r):
        v = b64(r, 64)
        return _one(f"DefaultEndpointsProtocol=https;AccountName=acme{r.randrange(99)};AccountKey={v};"
                    f"EndpointSuffix=core.windows.net", v)

    @add("connection-string", "Service Bus SharedAccessKey", T)
    def _(r):
        v = b64(r, 32)
        return _one(f"Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
                    f"SharedAccessKey={v}", v)

    @add("connection-string", "ADO.NET Password=", T)
    def _(r):
        p = password(r).replace(";", "")
        return _one(f"Server=tcp:sql.example.net,1433;Database=crm;User ID=crm_app;Password={p};Encrypt=True;", p)

    @add("connection-string", "Pwd= ODBC", H)
    def _(r):
        p = password(r).replace(";", "")
        return _one(f"Driver={{ODBC Driver 18}};Server=db;Uid=sa;Pwd={p};", p)

    @add("connection-string", "JDBC ?password=", H)
    def _(r):
        p = token(r, 14)
        return _one(f"jdbc:mysql://db.example.com:3306/shop?user=shop&password={p}&useSSL=true", p)

    # --- DSN with the key in the user part
    @add("dsn-user-key", "Sentry DSN", T)
    def _(r):
        v = hexstr(r, 32)
        return _one(f"SENTRY_DSN=https://{v}@o{r.randrange(10**5, 10**6)}.ingest.sentry.io/{r.randrange(10**6)}", v)

    @add("dsn-user-key", "token as URL user", H)
    def _(r):
        v = token(r, 40)
        return _one(f"git remote add origin https://{v}@git.example.com/team/repo.git", v)

    # --- session cookies
    @add("session-cookie", "Cookie: sessionid=", T)
    def _(r):
        v = token(r, 32, string.ascii_lowercase + string.digits)
        return _one(f"Cookie: sessionid={v}; csrftoken={token(r, 32)}", v)

    @add("session-cookie", "Set-Cookie PHPSESSID", T)
    def _(r):
        v = token(r, 26, string.ascii_lowercase + string.digits)
        return _one(f"Set-Cookie: PHPSESSID={v}; path=/; HttpOnly", v)

    @add("session-cookie", "connect.sid", H)
    def _(r):
        v = "s%3A" + token(r, 32, ALNUM + "-_") + "." + token(r, 43)
        return _one(f"cookie: connect.sid={v}", v)

    @add("session-cookie", "_gitlab_session", T)  # held-out until round 3
    def _(r):
        v = hexstr(r, 32)
        return _one(f"_gitlab_session={v}", v)

    # --- vendor prefixes (bare, in prose: no key word names them)
    vendors_train: list[tuple[str, Callable[[random.Random], str]]] = [
        ("mailgun key-", lambda r: "key-" + hexstr(r, 32)),
        ("digitalocean dop_v1_", lambda r: "dop_v1_" + hexstr(r, 64)),
        ("shopify shpat_", lambda r: "shpat_" + hexstr(r, 32)),
        ("postman PMAK-", lambda r: "PMAK-" + hexstr(r, 24) + "-" + hexstr(r, 34)),
        ("age AGE-SECRET-KEY-1", lambda r: "AGE-SECRET-KEY-1" + token(r, 58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L")),
        ("twilio SK", lambda r: "SK" + hexstr(r, 32)),
        ("sendgrid SG.", lambda r: "SG." + token(r, 22, ALNUM + "_-") + "." + token(r, 43, ALNUM + "_-")),
        ("telegram bot", lambda r: f"{r.randrange(10**8, 10**10)}:AA" + token(r, 33, ALNUM + "_-")),
        ("square sq0atp-", lambda r: "sq0atp-" + token(r, 22, ALNUM + "_-")),
        ("heroku HRKU-", lambda r: "HRKU-AA" + token(r, 58, ALNUM + "_-")),
        ("pypi-", lambda r: "pypi-AgEIcHlwaS5vcmc" + token(r, 70, ALNUM + "_-")),
        ("docker dckr_pat_", lambda r: "dckr_pat_" + token(r, 27, ALNUM + "_-")),
        ("linear lin_api_", lambda r: "lin_api_" + token(r, 40)),
        ("vault hvs.", lambda r: "hvs." + token(r, 24, ALNUM + "_-")),
        ("new relic NRAK-", lambda r: "NRAK-" + token(r, 27, string.ascii_uppercase + string.digits)),
        ("mailchimp -us", lambda r: hexstr(r, 32) + "-us" + str(r.randrange(1, 21))),
    ]
    vendors_held: list[tuple[str, Callable[[random.Random], str]]] = [
        ("discord bot", lambda r: "M" + token(r, 23) + "." + token(r, 6, ALNUM + "_-") + "."
         + token(r, 27, ALNUM + "_-")),
        ("doppler dp.pt.", lambda r: "dp.pt." + token(r, 43)),
        ("databricks dapi", lambda r: "dapi" + hexstr(r, 32)),
        ("groq gsk_", lambda r: "gsk_" + token(r, 52)),
        ("replicate r8_", lambda r: "r8_" + token(r, 37)),
        ("pulumi pul-", lambda r: "pul-" + hexstr(r, 40)),
        ("sentry sntrys_", lambda r: "sntrys_eyJ" + token(r, 60)),
        ("notion ntn_", lambda r: "ntn_" + token(r, 46)),
        ("atlassian ATATT3", lambda r: "ATATT3xFfGF0" + token(r, 180, ALNUM + "_-")[:170] + "=" + hexstr(r, 8).upper()),
        ("azure ad Q~", lambda r: token(r, 3) + "8Q~" + token(r, 34, ALNUM + "_~.-")),
        ("grafana glsa_", lambda r: "glsa_" + token(r, 32) + "_" + hexstr(r, 8)),
        ("square sq0csp-", lambda r: "sq0csp-" + token(r, 43, ALNUM + "_-")),
    ]
    prose = ["The user uses {} for the mailing domain.", "here you go: {}", "paste {} into the settings page",
             "it finally worked with {} after I rotated it", "{}"]
    for vendors, split in ((vendors_train, T), (vendors_held, H)):
        for name, make in vendors:
            def draw(r, make=make):
                v = make(r)
                return _one(r.choice(prose).format(v), v)
            add("vendor-prefix", name, T if name in PROMOTED else split)(draw)

    @add("service-account-json", "GCP private_key", T)
    def _(r):
        body = b64(r, 600)
        lines = "\\n".join(body[i:i + 64] for i in range(0, len(body), 64))
        return _one('{\n  "type": "service_account",\n  "project_id": "acme-prod",\n  "private_key_id": "'
                    + hexstr(r, 40) + '",\n  "private_key": "-----BEGIN PRIVATE KEY-----\\n' + lines
                    + '\\n-----END PRIVATE KEY-----\\n",\n  "client_email": "svc@acme-prod.iam.gserviceaccount.com"\n}',
                    body[:64], body[-64:])

    @add("service-account-json", "private_key without BEGIN line", H)
    def _(r):
        v = b64(r, 300)
        return _one(f'"private_key": "{v}"', v)

    # --- Ethereum private key
    @add("ethereum-key", "PRIVATE_KEY=0x", T)
    def _(r):
        v = "0x" + hexstr(r, 64)
        return _one(f"PRIVATE_KEY={v}", v[2:])

    @add("ethereum-key", "prose metamask key", T)
    def _(r):
        v = "0x" + hexstr(r, 64)
        return _one(f"my metamask private key is {v}, keep it safe", v[2:])

    @add("ethereum-key", "json privateKey no 0x", H)
    def _(r):
        v = hexstr(r, 64)
        return _one(f'{{"address": "0x{hexstr(r, 40)}", "privateKey": "{v}"}}', v)

    @add("ethereum-key", "wallet key: 0x", T)  # held-out until round 3
    def _(r):
        v = "0x" + hexstr(r, 64)
        return _one(f"wallet key — {v}", v[2:])

    # --- TOTP setup keys
    @add("totp-seed", "setup key spaced caps", T)
    def _(r):
        v = " ".join(token(r, 4, B32) for _ in range(4))
        return _one(f"2FA setup key: {v}", v.replace(" ", ""), v)

    @add("totp-seed", "authenticator secret lower", T)
    def _(r):
        v = " ".join(token(r, 4, B32.lower()) for _ in range(8))
        return _one(f"the authenticator secret is {v}", v)

    @add("totp-seed", "otpauth URI", H)
    def _(r):
        v = token(r, 32, B32)
        return _one(f"otpauth://totp/Acme:me@example.com?secret={v}&issuer=Acme", v)

    @add("totp-seed", "bare spaced groups", T)  # held-out until round 3
    def _(r):
        v = " ".join(token(r, 4, B32) for _ in range(8))
        return _one(f"if the QR code won't scan, type {v} by hand", v)

    # --- passwords in words
    # The forms a rule was written from are train; "as the password" and four languages became train when the
    # rules for them were written (after the first report), and the held-out forms below them were added then,
    # before any rule was tried on them.
    phrasing_train = ["pw is {}", "my passcode is {}", "login: jdoe / pass: {}", "the wifi key is {}",
                      "I use the password {} everywhere", "I reuse the same password, {}, on every site",
                      "I set my laptop login to {}", "the password for the nas = {}",
                      "I always log in with {} as the password", "use {} as your password for now"]
    phrasing_held = ["my pwd: {}", "the wifi pw is {}", "the network key at home is {}",
                     "user name alice, password {}", "{} is my password", "my router's admin password → {}",
                     "for the vpn I picked {} as the passphrase"]
    for phrasings, split in ((phrasing_train, T), (phrasing_held, H)):
        for phrase in phrasings:
            def draw(r, phrase=phrase):
                p = password(r)
                return _one(phrase.format(p), p)
            add("password-words", phrase.format("X"), T if phrase.format("X") in PROMOTED else split)(draw)

    languages_train = ["mi contraseña es {}", "la clave del wifi es {}", "mein Passwort ist {}",
                       "das Kennwort lautet {}", "mon mot de passe est {}", "le mdp c'est {}",
                       "la mia password è {}", "minha senha é {}", "mijn wachtwoord is {}", "moje hasło to {}",
                       "mitt lösenord är {}", "min adgangskode er {}"]
    languages_held = ["il codice del wifi è {}", "a palavra-passe é {}", "salasanani on {}", "moje heslo je {}",
                      "пароль от почты: {}", "şifrem {}", "mitt passord er {}", "a jelszavam {}"]
    for phrasings, split in ((languages_train, T), (languages_held, H)):
        for phrase in phrasings:
            def draw(r, phrase=phrase):
                p = password(r)
                return _one(phrase.format(p), p)
            add("password-other-language", phrase.format("X"), T if phrase.format("X") in PROMOTED else split)(draw)

    # --- seed phrases, CVV, SSN
    @add("seed-phrase", "seed phrase: 12", T)
    def _(r):
        v = mnemonic(r, 12)
        return _one(f"my seed phrase: {v}", v)

    @add("seed-phrase", "bare 24 in a fence", T)
    def _(r):
        v = mnemonic(r, 24)
        return _one(f"```\n{v}\n```", v)

    @add("seed-phrase", "recovery words are 12", H)
    def _(r):
        v = mnemonic(r, 12)
        return _one(f"The recovery words are {v}. Don't lose them", v)

    @add("seed-phrase", "24 over lines", H)
    def _(r):
        words = mnemonic(r, 24).split()
        v = "\n".join(" ".join(words[i:i + 6]) for i in range(0, 24, 6))
        return _one(f"backup:\n{v}", " ".join(words))

    @add("card-cvv", "exp MM/YY, cvv", T)
    def _(r):
        cvv = f"{r.randrange(100, 1000)}"
        return _one(f"card {luhn_complete('4' + ''.join(r.choice(string.digits) for _ in range(14)))}, "
                    f"exp {r.randrange(1, 13):02d}/{r.randrange(26, 32)}, cvv {cvv}", cvv)

    @add("card-cvv", "CVV: before exp", T)
    def _(r):
        cvv = f"{r.randrange(100, 1000)}"
        return _one(f"CVV: {cvv} exp {r.randrange(1, 13):02d}/{r.randrange(26, 32)}", cvv)

    @add("card-cvv", "security code, expires", H)
    def _(r):
        cvv = f"{r.randrange(1000, 10000)}"
        return _one(f"the security code is {cvv} and it expires {r.randrange(1, 13):02d}/20{r.randrange(26, 32)}",
                    cvv)

    @add("card-cvv", "CVC2 =", H)
    def _(r):
        cvv = f"{r.randrange(100, 1000)}"
        return _one(f"valid thru {r.randrange(1, 13):02d}/{r.randrange(26, 32)} CVC2 = {cvv}", cvv)

    def ssn(r):
        return f"{r.randrange(1, 666):03d}-{r.randrange(1, 100):02d}-{r.randrange(1, 10000):04d}"

    @add("ssn-words", "my social is", T)
    def _(r):
        v = ssn(r)
        return _one(f"my social is {v}", v)

    @add("ssn-words", "social: spaced", T)
    def _(r):
        v = ssn(r).replace("-", " ")
        return _one(f"social: {v}", v)

    @add("ssn-words", "soc sec #", T)  # held-out until round 3
    def _(r):
        v = ssn(r)
        return _one(f"my soc sec # is {v}", v)

    @add("ssn-words", "SSN# no blank", H)
    def _(r):
        v = ssn(r)
        return _one(f"SSN#{v}", v)

    # --- keys wrapped over lines in a fence
    @add("wrapped-key", "base64 wrapped at 24", T)
    def _(r):
        v = token(r, 96, ALNUM + "+/")
        return _one("```\n" + "\n".join(v[i:i + 24] for i in range(0, 96, 24)) + "\n```", v)

    @add("wrapped-key", "api key wrapped at 20 after name", T)
    def _(r):
        v = token(r, 60)
        return _one("api key:\n```\n" + "\n".join(v[i:i + 20] for i in range(0, 60, 20)) + "\n```", v)

    @add("wrapped-key", "hex wrapped at 16", H)
    def _(r):
        v = hexstr(r, 64)
        return _one("```\n" + "\n".join(v[i:i + 16] for i in range(0, 64, 16)) + "\n```", v)

    @add("wrapped-key", "github token wrapped", H)
    def _(r):
        v = "ghp_" + token(r, 36)
        return _one("token\n```\n" + v[:20] + "\n" + v[20:] + "\n```", v)

    # --- held-out-2: fresh shapes, written in round 3 before any rule of that round (none was looked at while
    # writing rules; the figures for them say how the rules generalise to shapes nobody has seen)
    @add("command-line", "smbclient -U user%pass", T)  # held-out-2 until round 5
    def _(r):
        p = password(r).replace("%", "")
        return _one(f"smbclient //nas/media -U alice%{p} -c 'ls'", p)

    @add("command-line", "wget --password=", H2)
    def _(r):
        p = password(r)
        return _one(f"wget --user=backup --password={p} https://files.example.org/dump.tgz", p)

    @add("command-line", "net use /user: pass", T)  # held-out-2 until round 5
    def _(r):
        p = password(r)
        return _one(f"net use Z: \\\\fileserver\\share /user:CORP\\bob {p} /persistent:yes", p)

    @add("command-line", "htpasswd -b", T)  # held-out-2 until round 5
    def _(r):
        p = password(r)
        return _one(f"htpasswd -b -c /etc/nginx/.htpasswd admin {p}", p)

    @add("command-line", "keytool -storepass", T)  # held-out-2 until round 5
    def _(r):
        p = password(r)
        return _one(f"keytool -list -keystore app.jks -storepass {p}", p)

    @add("command-line", "7z -p", H2)
    def _(r):
        p = password(r).replace("'", "")
        return _one(f"7z a -p{p} -mhe=on backup.7z ~/Documents", p)

    vendors_held2: list[tuple[str, Callable[[random.Random], str]]] = [
        ("netlify nfp_", lambda r: "nfp_" + token(r, 36)),
        ("render rnd_", lambda r: "rnd_" + token(r, 32)),
        ("fly fo1_", lambda r: "fo1_" + token(r, 43, ALNUM + "_-")),
        ("airtable pat.", lambda r: "pat" + token(r, 14) + "." + hexstr(r, 64)),
        ("terraform atlasv1", lambda r: token(r, 14) + ".atlasv1." + token(r, 67)),
        ("twitch oauth:", lambda r: "oauth:" + token(r, 30, string.ascii_lowercase + string.digits)),
        ("okta 00", lambda r: "00" + token(r, 40, ALNUM + "_-")),
        ("mapbox sk.eyJ", lambda r: "sk.eyJ1Ijoi" + token(r, 50) + "." + token(r, 22, ALNUM + "_-")),
    ]
    for name, make in vendors_held2:
        def draw2(r, make=make):
            v = make(r)
            return _one(r.choice(["my token is {} fyi", "ok: {}", "swap in {} and redeploy", "{} (rotated monday)"])
                        .format(v), v)
        add("vendor-prefix", name, _split(name, H2))(draw2)

    @add("session-cookie", "laravel_session", H2)
    def _(r):
        v = "eyJpdiI6" + token(r, 60, ALNUM + "+/") + "%3D%3D"
        return _one(f"Cookie: XSRF-TOKEN=abc; laravel_session={v}", v)

    @add("session-cookie", "JSESSIONID upper hex", H2)
    def _(r):
        v = hexstr(r, 32).upper()
        return _one(f"JSESSIONID={v}; Path=/app", v)

    @add("session-cookie", "next-auth session-token", H2)
    def _(r):
        v = token(r, 80, ALNUM + "-_.")
        return _one(f"__Secure-next-auth.session-token={v}", v)

    @add("no-space-assignment", ".npmrc _authToken", H2)
    def _(r):
        v = token(r, 36)
        return _one(f"//registry.npmjs.org/:_authToken={v}", v)

    @add("no-space-assignment", ".netrc password", H2)
    def _(r):
        p = password(r)
        return _one(f"machine api.example.com login deploy password {p}", p)

    @add("no-space-assignment", "toml quoted token", H2)
    def _(r):
        v = token(r, 40)
        return _one(f'[registries.internal]\ntoken = "{v}"', v)

    phrasing_held2 = ["creds are admin / {}", "{} — that's the root password", "password? it's {}",
                      "the passphrase I chose: {}", "wifi: HomeNet5G / {}", "new pass => {}",
                      "the password i gave the landlord was {}", "my gmail pass is still {}"]
    for phrase in phrasing_held2:
        def draw3(r, phrase=phrase):
            p = password(r)
            return _one(phrase.format(p), p)
        add("password-words", phrase.format("X"), _split(phrase.format("X"), H2))(draw3)

    languages_held2 = ["lösenordet till wifi är {}", "das WLAN-Passwort lautet {}", "パスワードは {} です",
                       "密码是 {}", "parola mea de la email este {}", "hasłem do konta jest {}",
                       "la contraseña del router es {}", "het wachtwoord van de wifi is {}"]
    for phrase in languages_held2:
        def draw4(r, phrase=phrase):
            p = password(r)
            return _one(phrase.format(p), p)
        add("password-other-language", phrase.format("X"), _split(phrase.format("X"), H2))(draw4)

    @add("ssn-words", "SSN: nine digits", H2)
    def _(r):
        v = f"{r.randrange(1, 666):03d}{r.randrange(1, 100):02d}{r.randrange(1, 10000):04d}"
        return _one(f"SSN: {v}", v)

    @add("ssn-words", "social security no.", H2)
    def _(r):
        v = ssn(r)
        return _one(f"social security no. {v} (don't share)", v)

    @add("totp-seed", "authenticator secret unspaced", T)  # held-out-2 until round 5
    def _(r):
        v = token(r, 32, B32)
        return _one(f"secret for google authenticator: {v}", v)

    @add("seed-phrase", "numbered list", T)  # held-out-2 until round 5
    def _(r):
        words = mnemonic(r, 12).split()
        numbered = "\n".join(f"{i}. {w}" for i, w in enumerate(words, 1))
        return _one("wallet backup:\n" + numbered, numbered.split("\n5.")[0])

    @add("ethereum-key", "prose key no 0x", T)  # held-out-2 until round 5
    def _(r):
        v = hexstr(r, 64)
        return _one(f"export the key from the wallet, it's {v}", v)

    @add("hex-key-context", "yaml webhook secret hex", H2)
    def _(r):
        v = hexstr(r, 40)
        return _one(f"webhooks:\n  - url: https://hooks.example.com/x\n    secret: {v}", v)

    @add("url-encoded", "client_secret= form body", H2)
    def _(r):
        v = urllib.parse.quote(b64(r, 30), safe="")
        return _one(f"grant_type=client_credentials&client_id=app-{r.randrange(999)}&client_secret={v}", v)

    @add("connection-string", "redis url password only", H2)
    def _(r):
        p = token(r, 20)
        return _one(f"REDIS_URL=rediss://:{p}@cache.example.net:6380/0", p)

    # --- held-out-3: fresh shapes, written in round 4 before any rule of that round and drawn from a stream of
    # their own (the other splits' values stay what they were): other tools' credential flags, other vendors'
    # prefixes, other languages, credentials inside YAML, INI, XML, HCL, .properties and nested JSON, URLs' user
    # part, HTTP headers
    cli_held3 = [
        ("ipmitool -P", "ipmitool -I lanplus -H 10.0.4.21 -U ADMIN -P {} chassis power status"),
        ("rabbitmqctl add_user", "rabbitmqctl add_user ops {}"),
        ("openssl -passout pass:", "openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:{}"),
        ("vault login password=", "vault login -method=userpass username=ops password={}"),
        ("psql conninfo password=", 'psql "host=db.internal user=app password={} dbname=prod sslmode=require"'),
        ("sqlcmd -P", "sqlcmd -S tcp:sql01,1433 -U sa -P {} -Q \"SELECT 1\""),
        ("az login -p", "az login -u ops@corp.example -p {}"),
        ("mongosh --password", "mongosh mongodb://db01:27017/admin --username root --password {}"),
    ]
    for name, shape in cli_held3:
        def draw5(r, shape=shape):
            p = password(r).replace('"', "").replace("'", "")
            return _one(shape.format(p), p)
        add("command-line", name, _split(name, H3))(draw5)

    vendors_held3: list[tuple[str, Callable[[random.Random], str]]] = [
        ("sentry sntrys_", lambda r: "sntrys_" + token(r, 64)),
        ("nvidia nvapi-", lambda r: "nvapi-" + token(r, 64, ALNUM + "-_")),
        ("groq gsk_", lambda r: "gsk_" + token(r, 52)),
        ("xai xai-", lambda r: "xai-" + token(r, 80)),
        ("replicate r8_", lambda r: "r8_" + token(r, 37)),
        ("doppler dp.pt.", lambda r: "dp.pt." + token(r, 43)),
        ("langsmith lsv2_pt_", lambda r: "lsv2_pt_" + hexstr(r, 32) + "_" + hexstr(r, 10)),
        ("datastax AstraCS:", lambda r: "AstraCS:" + token(r, 24) + ":" + hexstr(r, 64)),
    ]
    for name, make in vendors_held3:
        def draw6(r, make=make):
            v = make(r)
            return _one(r.choice(["here's the new one: {}", "{}", "I rotated it to {} this morning",
                                  "paste {} into the settings page"]).format(v), v)
        add("vendor-prefix", name, _split(name, H3))(draw6)

    phrasing_held3 = ["for the vpn use username jdoe and {} as the password", "remember: admin/{} for the router",
                      "I typed {} into the password field and it worked", "temporary password (change at login): {}", "the shared account's secret is {} btw", "login ops, pass {}",
                      "it won't take {} as my new password, too similar?", "the code to unlock the laptop is {}"]
    for phrase in phrasing_held3:
        def draw7(r, phrase=phrase):
            p = password(r)
            return _one(phrase.format(p), p)
        add("password-words", phrase.format("X"), _split(phrase.format("X"), H3))(draw7)

    languages_held3 = ["la parola d'ordine è {}", "moje heslo je {}", "minha senha do banco é {}", "мой пароль: {}",
                       "wifi şifresi {}", "ο κωδικός μου είναι {}", "kata sandinya {}", "a jelszó: {}"]
    for phrase in languages_held3:
        def draw8(r, phrase=phrase):
            p = password(r)
            return _one(phrase.format(p), p)
        add("password-other-language", phrase.format("X"), _split(phrase.format("X"), H3))(draw8)

    @add("structured-config", "yaml nested pass:", H3)
    def _(r):
        p = password(r)
        return _one(f"database:\n  host: db.internal\n  credentials:\n    user: app\n    pass: {p}\n", p)

    @add("structured-config", "ini auth_pass =", H3)
    def _(r):
        p = password(r)
        return _one(f"[smtp]\nhost = mail.example.com\nuser = mailer\nauth_pass = {p}\n", p)

    @add("structured-config", "xml <password> element", T)  # held-out-3 until round 5
    def _(r):
        p = password(r).replace("<", "").replace("&", "")
        return _one(f"<server>\n  <id>nexus</id>\n  <username>deploy</username>\n  <password>{p}</password>\n"
                    "</server>", p)

    @add("structured-config", "xml appSettings AccountKey", H3)
    def _(r):
        v = b64(r, 64)
        return _one(f'<add key="Storage" value="DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={v};'
                    'EndpointSuffix=core.windows.net" />', v)

    @add("structured-config", "hcl secret_key", H3)
    def _(r):
        v = token(r, 40, ALNUM + "/+")
        return _one(f'provider "aws" {{\n  region     = "eu-west-1"\n  access_key = "AKIA{token(r, 16, string.ascii_uppercase + string.digits)}"\n'
                    f'  secret_key = "{v}"\n}}', v)

    @add("structured-config", ".properties datasource password", H3)
    def _(r):
        p = password(r)
        return _one(f"spring.datasource.url=jdbc:postgresql://db:5432/app\nspring.datasource.password={p}", p)

    @add("structured-config", "json nested under 'shared'", H3)
    def _(r):
        v = token(r, 40)
        return _one('{"service": {"name": "billing", "auth": {"kind": "hmac", "shared": "' + v + '"}}}', v)

    @add("structured-config", "json apiCredentials.value", H3)
    def _(r):
        v = token(r, 36)
        return _one('{"apiCredentials": {"id": "svc-' + str(r.randrange(999)) + '", "value": "' + v + '"}}', v)

    @add("http-header", "X-Api-Key:", H3)
    def _(r):
        v = token(r, 32)
        return _one(f"curl https://api.example.com/v2/items -H 'X-Api-Key: {v}'", v)

    @add("http-header", "Authorization: Basic", H3)
    def _(r):
        p = password(r)
        v = base64.b64encode(f"svc-report:{p}".encode()).decode()
        return _one(f"GET /reports HTTP/1.1\nHost: intranet\nAuthorization: Basic {v}", v)

    @add("http-header", "Authorization: Token token=", H3)
    def _(r):
        v = hexstr(r, 40)
        return _one(f'Authorization: Token token="{v}"', v)

    @add("http-header", "X-Auth-Token:", H3)
    def _(r):
        v = token(r, 48, ALNUM + "-_")
        return _one(f"X-Auth-Token: {v}", v)

    @add("url-userinfo", "amqp user:pass@", H3)
    def _(r):
        p = token(r, 18)
        return _one(f"broker_url = amqp://worker:{p}@rabbit.internal:5672/jobs", p)

    @add("url-userinfo", "git clone token@", H3)
    def _(r):
        v = token(r, 40)
        return _one(f"git clone https://{v}:x-oauth-basic@github.com/acme/infra.git", v)

    @add("url-userinfo", "ftp url", H3)
    def _(r):
        p = password(r).replace("@", "").replace("/", "")
        return _one(f"ftp://backup:{p}@files.example.net/nightly/", p)

    @add("private-key", "PuTTY key private lines", T)  # held-out-3 until round 5
    def _(r):
        v = b64(r, 48)
        return _one("PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: ops\nPublic-Lines: 2\n"
                    f"AAAAC3NzaC1lZDI1NTE5AAAAI{b64(r, 24)}\nPrivate-Lines: 1\n{v}\nPrivate-MAC: {hexstr(r, 64)}", v)

    return f


FORMS = _forms()


def cases(seed: int, invisible: bool = False) -> list[Case]:
    """One case per form, fresh values from seed; with `invisible`, a format character inside the first secret."""
    r = random.Random(seed)
    r3 = random.Random(f"held-out-3-{seed}")  # a stream of its own: adding the set changed no other value
    r4 = random.Random(f"held-out-4-{seed}")  # held-out-4's own stream, its invisible characters too; its cases
    # come last, so every other case keeps its value and its index (the e2e report places a case by its index)
    r5 = random.Random(f"held-out-5-{seed}")  # and held-out-5's, its cases after held-out-4's: nothing older moved
    streams = {H4: r4, H5: r5}
    forms = [(cls, form) for cls, listed in FORMS.items() for form in listed]
    last = (H4, H5)  # the outside sets, each after the ones before it
    def drawn_as(name: str, split: str) -> str:  # a promoted form keeps the stream and place of the set it came from
        return H4 if _drawn_as_h4(name, split) else split

    ordered = ([f for f in forms if drawn_as(*f[1][:2]) not in last]
               + [f for group in last for f in forms if drawn_as(*f[1][:2]) == group])
    out = []
    for cls, (name, split, draw) in ordered:
        stream = streams.get(drawn_as(name, split), r)
        text, secrets = draw(r3 if split == H3 or name in DRAWN_AS_H3 else stream)
        if invisible and len(secrets[0]) > 8 and secrets[0] in text:
            cut = stream.randrange(2, len(secrets[0]) - 2)
            hidden = secrets[0][:cut] + stream.choice(INVISIBLE) + secrets[0][cut:]
            text = text.replace(secrets[0], hidden, 1)
        out.append(Case(cls, name, split, text, secrets))
    return out


@dataclass(frozen=True)
class SplitKey:
    """A key pasted in two consecutive messages: `first` ends with key[:cut], `second` holds key[cut:]."""

    first: str
    second: str
    key: str
    cut: int
    split: str

    @property
    def pieces(self) -> tuple[str, str]:
        return self.key[:self.cut], self.key[self.cut:]


def split_across_messages(seed: int) -> list[SplitKey]:
    """Keys pasted in two consecutive messages. The train shapes are those the cross-message check was written
    from; the two held-out-2 ones were added after it and are train since round 5 (a rest that starts with a dash
    is a key's rest unless it reads as a flag)."""
    r = random.Random(f"split-{seed}")  # a stream of its own: no value of cases() or lookalikes() comes back
    out = []
    for make in (lambda: "ghp_" + token(r, 36), lambda: token(r, 48), lambda: "sk-proj-" + token(r, 48)):
        v = make()
        cut = len(v) // 2
        out.append(SplitKey(f"here is the key, first half: {v[:cut]}", f"and the rest: {v[cut:]}", v, cut, T))
    v = "xoxb-" + token(r, 11, string.digits) + "-" + token(r, 13, string.digits) + "-" + token(r, 24)
    # held-out-2 until round 5 (both below)
    out.append(SplitKey(f"bot token (1/2): {v[:30]}", f"(2/2) {v[30:]}", v, 30, T))
    v = b64(r, 36)
    out.append(SplitKey(f"the secret access key, line 1: {v[:20]}", f"{v[20:]}   <- line 2", v, 20, T))
    return out + _split_held_out_4(seed) + _split_held_out_5(seed)


def _lookalike_forms() -> list[tuple[str, str, Callable[[random.Random], str]]]:
    english = ["The quick brown fox jumps over the lazy dog while the cat sleeps on the warm windowsill.",
               "Meeting notes: we agreed to move the launch to next Thursday and review the budget again.",
               "Remember to water the plants and pick up some bread on the way home tonight please."]
    out: list[tuple[str, str, Callable[[random.Random], str]]] = [
        ("base64 of English", T, lambda r: "decoded this: " + base64.b64encode(r.choice(english).encode()).decode()),
        ("npm sha512 integrity", T, lambda r: f'"integrity": "sha512-{b64(r, 64)}"'),
        ("ssh-ed25519 public key", T, lambda r: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + token(r, 43, ALNUM + "+/")
         + " me@laptop"),
        ("IPFS CIDv0", T, lambda r: "pinned at ipfs://Qm" + token(r, 44, B58)),
        ("IPFS CIDv1", H, lambda r: "bafybei" + token(r, 52, "abcdefghijklmnopqrstuvwxyz234567")),
        ("Drive file id", T,
         lambda r: f"https://drive.google.com/file/d/1{token(r, 32, ALNUM + '-_')}/view?usp=sharing"),
        ("Luhn run inside container id", T, lambda r: "container " + hexstr(r, 20)
         + luhn_complete("4" + "".join(r.choice(string.digits) for _ in range(14))) + hexstr(r, 28) + " restarted"),
        ("git SHA", T, lambda r: f"commit {hexstr(r, 40)}"),
        ("short SHAs", H, lambda r: f"fixed in {hexstr(r, 7)} and {hexstr(r, 12)}"),
        ("UUID", T,
         lambda r: f"request {hexstr(r, 8)}-{hexstr(r, 4)}-4{hexstr(r, 3)}-a{hexstr(r, 3)}-{hexstr(r, 12)} failed"),
        ("semver", T, lambda r: f"upgraded to v{r.randrange(1, 20)}.{r.randrange(40)}.{r.randrange(40)}"
         f"-rc.{r.randrange(9)}"
         f"+build.{r.randrange(999)}"),
        ("sha256 hash", T, lambda r: f"sha256sum: {hexstr(r, 64)}  release.tar.gz"),
        ("md5 hash", H, lambda r: f"MD5 ({token(r, 6, string.ascii_lowercase)}.iso) = {hexstr(r, 32)}"),
        ("docker digest", H, lambda r: f"image: nginx@sha256:{hexstr(r, 64)}"),
        ("email and IPs", T, lambda r: f"mail {token(r, 6, string.ascii_lowercase)}@example.com from "
         f"10.{r.randrange(255)}.{r.randrange(255)}.{r.randrange(255)} or fe80::{hexstr(r, 4)}:{hexstr(r, 4)}"),
        ("street address", T, lambda r: f"I live at {r.randrange(1, 999)} Maple Street, Springfield, IL 62704"),
        ("ethereum address", T, lambda r: f"send it to 0x{hexstr(r, 40)}"),
        ("ethereum tx hash", H, lambda r: f"tx hash 0x{hexstr(r, 64)} confirmed"),
        ("bitcoin address", H, lambda r: "bc1q" + token(r, 38, "023456789acdefghjklmnpqrstuvwxyz")),
        ("password manager is 1Password", T, lambda r: "my password manager is 1Password"),
        ("password talk", T, lambda r: r.choice(["I forgot my password again", "the password reset link expired",
                                                 "I reuse passwords, which is bad"])),
        ("key is prose", T, lambda r: "the key is to practise every day"),
        ("placeholder env", T, lambda r: "API_KEY=your-api-key-here\nTOKEN=${GITHUB_TOKEN}"),
        ("max_tokens", T, lambda r: f"max_tokens: {r.randrange(256, 8192)}, tokens_used={r.randrange(10**5)}"),
        ("primary key yaml", H, lambda r: "primary_key: id\nsort_key: created_at\ncache_key: user:42:profile"),
        ("key file path", T, lambda r: "KEY_FILE=/etc/ssl/private/server.key"),
        ("public key json", H, lambda r: f'"publicKey": "B{token(r, 86, ALNUM + "-_")}"'),
        ("stripe publishable", H, lambda r: "pk_live_" + token(r, 24)),
        ("ssh fingerprint", T, lambda r: "SHA256:" + token(r, 43, ALNUM + "+/")),
        ("utm query", T, lambda r: "https://shop.example.com/?utm_source=newsletter&utm_campaign=spring"
         + str(r.randrange(2020, 2030))),
        ("aws arn", H, lambda r: f"arn:aws:iam::{r.randrange(10**11, 10**12)}:role/DeployRole"),
        ("long identifier", T, lambda r: "AbstractSingletonProxyFactoryBeanProviderImplementation"),
        ("iso timestamp", T, lambda r: f"at 2026-0{r.randrange(1, 9)}-1{r.randrange(9)}T0{r.randrange(9)}:12:00.123Z"),
        ("file path", H, lambda r: "/usr/local/lib/python3.11/site-packages/numpy/core/_multiarray_umath.so"),
        ("social plans", T, lambda r: f"my social is on Saturday at {r.randrange(1, 12)} pm"),
        ("shopping list words", T, lambda r: " ".join(r.sample(["milk", "bread", "butter", "cheese", "apple",
                                                                "coffee", "water", "sugar", "rice", "salt", "egg",
                                                                "lemon", "onion", "garlic"], 12))),
        ("cvv explained", H, lambda r: "the CVV is the 3-digit code on the back"),
        ("tracking number", H, lambda r: "1Z" + token(r, 16, string.ascii_uppercase + string.digits)),
        ("youtube id", H, lambda r: "https://www.youtube.com/watch?v=" + token(r, 11, ALNUM + "-_")),
        ("pgp public key", H, lambda r: "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQINBF" + b64(r, 90)
         + "\n-----END PGP PUBLIC KEY BLOCK-----"),
        ("hex color palette", T, lambda r: " ".join("#" + hexstr(r, 6) for _ in range(5))),
        ("base64 image prefix", H, lambda r: "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAA"),
        # held-out-2: identifiers of a vendor's structure (prefix_ + random body) that are no secret, flags with
        # ordinary values, words around passwords
        ("anthropic message id", H2, lambda r: "msg_01" + token(r, 22)),
        ("stripe customer id", H2, lambda r: f"customer cus_{token(r, 14)} paid invoice in_{token(r, 24)}"),
        ("openai completion id", H2, lambda r: "chatcmpl-" + token(r, 29)),
        ("tool use id", H2, lambda r: '{"type": "tool_use", "id": "toolu_01' + token(r, 22) + '"}'),
        ("command flags", H2, lambda r: r.choice(["tar -xzf backup-2024.tgz -C /srv", "grep -rn -w TODO src/",
                                                  "ls -la ~/.ssh", "ffmpeg -i in.mp4 -b:v 2M -r 30 out.mp4",
                                                  "rsync -avP --delete ./site/ web:/var/www/"])),
        ("password talk 2", H2, lambda r: r.choice(["the password is in the vault", "passwords must be 12 chars",
                                                    "I changed my password yesterday", "what is my password?"])),
        ("k8s pod name", H2, lambda r: f"pod web-{hexstr(r, 10)}-{token(r, 5, string.ascii_lowercase)} crashed"),
        # held-out-3: request and content ids in headers, checksums, config that names a secret without one
        ("request id header", H3, lambda r: f"X-Request-Id: {hexstr(r, 32)}"),
        ("etag", H3, lambda r: f'ETag: W/"{hexstr(r, 32)}"'),
        ("sha256sum line", H3, lambda r: f"{hexstr(r, 64)}  release-{r.randrange(1, 9)}.{r.randrange(20)}.tar.gz"),
        ("password policy", H3, lambda r: "password policy: at least 12 characters, one digit, no reuse"),
        ("env var named, not set", H3, lambda r: "export DB_PASSWORD before running (it's in the vault)"),
        ("yaml secret ref", H3, lambda r: "password:\n  valueFrom:\n    secretKeyRef:\n      name: db-creds"),
        # round 5: written with its mechanisms, the false positives each is likely to make (train: the rules must
        # keep them)
        ("command lines without a credential", T, lambda r: r.choice([
            "date -u +%Y-%m-%dT%H:%M:%SZ", f"docker run -u {r.randrange(1000, 1999)}:{r.randrange(1000, 1999)} app",
            "sudo -u postgres psql -c 'select 1'", "git push -u origin feature/login-2fa",
            "msbuild App.sln /p:Configuration=Release /p:Platform=x64", "runas /user:Administrator cmd.exe",
            "net use Z: \\\\fileserver\\share /persistent:yes", "htpasswd -c /etc/nginx/.htpasswd admin",
            "rabbitmqctl add_user_tags ops administrator", "ffmpeg -i in.mp4 -pass 1 -f null /dev/null",
            'curl -u "$API_USER:$API_PASS" https://api.example.com', "keytool -list -keystore app.jks -storetype PKCS12"])),
        ("prefixed ids and tags", T, lambda r: r.choice([
            f"docker pull registry.example.com/team/app:{hexstr(r, 40)}", f"image: app:{hexstr(r, 40)}",
            f"commit:{hexstr(r, 40)}", f"trace-{hexstr(r, 32)}", f"sha1:{hexstr(r, 40)}",
            f"see request req_{token(r, 24)}", f"id: ipfs:bafybei{token(r, 40, 'abcdefghijklmnopqrstuvwxyz234567')}",
            f"build-{r.randrange(20240101, 20251231)}t{r.randrange(100000, 999999)}z"])),
        ("password words in prose", T, lambda r: r.choice([
            "my password manager is 1Password", "the password is in the vault, ask Sam",
            "the password must be at least 12 characters long", "the passphrase I chose is in my notes",
            "the password reset link: https://example.com/reset?t=abc123", "password length: 16",
            f"the test pass rate is {r.randrange(90, 99)}.{r.randrange(10, 99)}%",
            "the password for the router is printed on the sticker", "I'll pass Python3 to the build script",
            "my bus pass is valid until 2026-06-30", "passwords: see the team vault (1Password)"])),
        ("key, code and token in prose", T, lambda r: r.choice([
            "the code is in main.py", "the code for this is in utils/helpers.py, line 42", "key points: speed, cost",
            f"the token limit is {r.choice([4096, 8192, 128000])}", "the key to the storage unit is under the mat",
            "the secret to good bread is time", "the api key name is prod-billing-2024",
            f"the token count is {r.randrange(1000, 99999)}", f"random seed = {r.randrange(1, 99999)}",
            "the error code is 404", f"the zip code is {r.randrange(10000, 99999)}",
            f"the cache key is user:{r.randrange(99)}:profile-v2", "the secret santa budget is $25",
            f"the key was rotated at 2026-0{r.randrange(1, 9)}-12T10:00:00Z"])),
        ("slashes in prose", T, lambda r: r.choice([
            "TCP/IP and read/write access for the admin", "login/logout buttons live in src/App2.tsx",
            "the admin panel is at /admin/v2024", "the wifi runs at 2.4GHz/5.8GHz", "login with username/email",
            "router: 192.168.1.1 / admin", "vpn: wg0/10.0.0.2/24", "sign in with Google/GitHub"])),
        ("markup naming keys", T, lambda r: r.choice([
            "<key>CFBundleVersion</key>\n<string>2.4.1</string>", "<passwordPolicy>Strong2024</passwordPolicy>",
            "<password>${DB_PASSWORD}</password>", "<tokenExpiry>3600s</tokenExpiry>",
            '<add key="ApiKeyName" value="billing-prod-2024" />', '{"name": "token_limit", "value": 4096}',
            "- name: API_KEY_FILE\n  value: /run/secrets/api_key",
            f"<PublicKey>MIIBIjANBgkq{b64(r, 40)}</PublicKey>"])),
        ("2fa without a key", T, lambda r: r.choice([
            "2FA is enabled for ACCOUNTSETTINGS", "the authenticator app shows 6 digits every 30 seconds",
            f"MFA device: arn:aws:iam::{r.randrange(10**11, 10**12)}:mfa/ops-phone"])),
    ]
    return out


LOOKALIKE_FORMS = _lookalike_forms()


def lookalikes(seed: int) -> list[Lookalike]:
    r = random.Random(f"lookalike-{seed}")  # a stream of its own: a look-alike never repeats a planted secret
    r4 = random.Random(f"lookalike-held-out-4-{seed}")  # and held-out-4's of its own: no other value moved
    r5 = random.Random(f"lookalike-held-out-5-{seed}")  # held-out-5's too, listed after held-out-4's
    streams = {H4: r4, H5: r5}
    return [Lookalike(name, split, draw(streams.get(H4 if _drawn_as_h4(name, split) else split, r)))
            for name, split, draw in LOOKALIKE_FORMS]


# --- held-out-4: shapes written from outside, as an attacker would, by someone who never read the rules, their
# tests or their data, and never changed after seeing what the rules catch. Every class of issue 22's section 3 in
# shapes no form above has: other tools' flags, other config formats (TOML, INI, YAML, JSON, XML, HCL, .properties,
# docker-compose, k8s Secrets, GitHub Actions, systemd, Dockerfile, .pgpass), other vendors' formats (from
# gitleaks' published rule set), wallet and WireGuard keys, national ids of other countries, other languages, and
# the chat, shell transcripts, tool output, logs and stack traces they are pasted in. Values come from streams of
# their own (`held-out-4-{seed}`, `lookalike-held-out-4-{seed}`, `split-held-out-4-{seed}`): no other value moved.

BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def base58check(payload: bytes) -> str:
    """Base58 with the 4-byte double-SHA-256 checksum, as Bitcoin writes WIF keys and extended keys."""
    data = payload + hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]
    n = int.from_bytes(data, "big")
    out = ""
    while n:
        n, rem = divmod(n, 58)
        out = B58[rem] + out
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + out


def _digits(r: random.Random, n: int) -> str:
    return "".join(r.choice(string.digits) for _ in range(n))


def _verhoeff(body: str) -> str:
    """The Verhoeff check digit (Aadhaar numbers carry one)."""
    d = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 2, 3, 4, 0, 6, 7, 8, 9, 5], [2, 3, 4, 0, 1, 7, 8, 9, 5, 6],
         [3, 4, 0, 1, 2, 8, 9, 5, 6, 7], [4, 0, 1, 2, 3, 9, 5, 6, 7, 8], [5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
         [6, 5, 9, 8, 7, 1, 0, 4, 3, 2], [7, 6, 5, 9, 8, 2, 1, 0, 4, 3], [8, 7, 6, 5, 9, 3, 2, 1, 0, 4],
         [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]]
    p = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 5, 7, 6, 2, 8, 3, 0, 9, 4]]
    for _ in range(6):
        p.append([p[1][x] for x in p[-1]])
    inv = [0, 4, 3, 2, 1, 5, 6, 7, 8, 9]
    c = 0
    for i, digit in enumerate(map(int, reversed(body + "0"))):
        c = d[c][p[i % 8][digit]]
    return body + str(inv[c])


def _shell_safe(p: str) -> str:
    return p.replace("'", "").replace('"', "").replace("$", "").replace("`", "").replace("\\", "")


def _held_out_4_forms() -> dict[str, list[Form]]:
    f: dict[str, list[Form]] = {}

    def add(cls: str, name: str):
        def wrap(draw):
            f.setdefault(cls, []).append((name, T if name in PROMOTED_6 else H4, draw))  # held-out-4 until round 6
            return draw
        return wrap

    # --- a value right after = or : with no space, in code, logs and tracebacks
    @add("no-space-assignment", "boto3 kwarg aws_secret_access_key=")
    def _(r):
        v = token(r, 40, ALNUM + "/+")
        return _one(f's3 = boto3.client("s3", aws_access_key_id="AKIA{token(r, 16, string.ascii_uppercase + string.digits)}", '
                    f'aws_secret_access_key="{v}")', v)

    @add("no-space-assignment", "log line api_secret:value")
    def _(r):
        v = token(r, 36)
        return _one(f"2026-03-02T10:11:12.481Z INFO  gateway auth ok client=web api_secret:{v} latency_ms=12", v)

    @add("no-space-assignment", "traceback password= in locals")
    def _(r):
        p = _shell_safe(password(r))
        return _one('Traceback (most recent call last):\n  File "/srv/app/db.py", line 41, in connect\n'
                    f'    conn = psycopg2.connect(host="db.internal", user="billing", password="{p}")\n'
                    'psycopg2.OperationalError: connection to server at "db.internal" (10.0.3.7), port 5432 failed:'
                    " timeout expired", p)

    @add("no-space-assignment", "docker run -e NAME=value")
    def _(r):
        v = token(r, 32, ALNUM + "_-")
        return _one(f"$ docker run -d -e WEBHOOK_HMAC={v} -p 8080:8080 acme/api:1.4.2\n{hexstr(r, 64)}", v)

    @add("no-space-assignment", "systemd Environment=")
    def _(r):
        v = token(r, 44, ALNUM + "+/")
        return _one(f'[Service]\nUser=api\nEnvironment="PAYMENTS_SIGNING={v}"\nExecStart=/usr/local/bin/api serve', v)

    # --- lower-case hex and ALL-CAPS tokens where a name says what they are
    @add("hex-key-context", "debug log signing_key=hex64")
    def _(r):
        v = hexstr(r, 64)
        return _one(f"DEBUG webhook.verify signing_key={v} body_len=512 sig_ok=false", v)

    @add("hex-key-context", "go const hmacKey hex32")
    def _(r):
        v = hexstr(r, 32)
        return _one(f'package auth\n\nconst hmacKey = "{v}"\n\nfunc Sign(b []byte) string {{ return mac(hmacKey, b) }}',
                    v)

    @add("hex-key-context", "ruby ENV.fetch default hex")
    def _(r):
        v = hexstr(r, 64)
        return _one(f'config.encryption_key = ENV.fetch("ENCRYPTION_KEY", "{v}")', v)

    @add("caps-key-context", "activation code 4x4 in prose")
    def _(r):
        v = "-".join(token(r, 4, string.ascii_uppercase + string.digits) for _ in range(4))
        return _one(f"the activation code for my Pro license is {v}, it's tied to this laptop", v)

    @add("caps-key-context", "X-Client-Token header CAPS")
    def _(r):
        v = token(r, 32, string.ascii_uppercase + string.digits)
        return _one(f'curl -s https://partner.example.com/v1/orders -H "X-Client-Token: {v}" | jq .', v)

    # --- URL-encoded values
    @add("url-encoded", "webhook ?signature=%2F")
    def _(r):
        v = urllib.parse.quote("/" + b64(r, 30) + "=", safe="")
        return _one(f'127.0.0.1 - - [02/Mar/2026:10:12:01 +0000] "POST /hooks/incoming?signature={v} HTTP/1.1" 200 17',
                    v)

    @add("url-encoded", "DSN with percent-encoded password")
    def _(r):
        raw = password(r) + r.choice("@:/#?") + token(r, 4)
        v = urllib.parse.quote(raw, safe="")
        return _one(f"DATABASE_URL=postgresql://app:{v}@db.internal:5432/app?sslmode=require", v)

    @add("url-encoded", "refresh_token=1%2F%2F form body")
    def _(r):
        v = urllib.parse.quote("1//0" + token(r, 100, ALNUM + "-_"), safe="")
        return _one(f"curl -X POST https://oauth2.googleapis.com/token -d 'client_id=123.apps.googleusercontent.com"
                    f"&grant_type=refresh_token&refresh_token={v}'", v)

    # --- credentials on the command lines of other tools
    cli = [
        ("zip -P", "$ zip -P {} -r taxes-2025.zip ~/Documents/taxes"),
        ("unzip -P", "unzip -P {} backup.zip -d /tmp/restore"),
        ("mysqldump --password=", "mysqldump --user=root --password={} --single-transaction shop > shop.sql"),
        ("echo | sudo -S", "echo '{}' | sudo -S systemctl restart nginx"),
        ("helm repo add --password", "helm repo add internal https://charts.example.com --username ci --password {}"),
        ("svn --password", "svn checkout https://svn.example.com/repos/app --username bob --password {}"),
        ("lftp -u user,pass", "lftp -u backup,{} sftp://files.example.net"),
        ("xfreerdp /p:", "xfreerdp /v:10.1.2.3 /u:Administrator /p:{} /cert:ignore"),
        ("nmcli wifi password", "nmcli dev wifi connect HomeNet-5G password {}"),
        ("plink -pw", "plink -ssh root@10.0.0.5 -pw {} uptime"),
        ("kubectl --from-literal=password=",
         "kubectl create secret generic db-creds --from-literal=username=app --from-literal=password={}"),
        ("psexec -p", "psexec \\\\srv01 -u CORP\\admin -p {} cmd /c ipconfig"),
        ("chpasswd", "echo 'deploy:{}' | sudo chpasswd"),
    ]
    for name, shape in cli:
        def draw_cli(r, shape=shape):
            p = _shell_safe(password(r)).replace(",", "")
            return _one(shape.format(p), p)
        add("command-line", name)(draw_cli)

    # --- config lines in other formats
    @add("env-unlisted", "docker-compose environment list")
    def _(r):
        v = token(r, 40)
        return _one("services:\n  api:\n    image: acme/api:2\n    environment:\n      - NODE_ENV=production\n"
                    f"      - BILLING_PORTAL_SEED={v}\n", v)

    @add("env-unlisted", "k8s Secret stringData")
    def _(r):
        v = token(r, 48, ALNUM + "-_")
        return _one("apiVersion: v1\nkind: Secret\nmetadata:\n  name: ledger\ntype: Opaque\nstringData:\n"
                    f"  ledger-hmac: {v}\n", v)

    @add("env-unlisted", "k8s Secret data base64 password")
    def _(r):
        v = base64.b64encode(password(r).encode()).decode()
        return _one(f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: pg\ndata:\n  username: YXBw\n  password: {v}\n", v)

    @add("env-unlisted", "GitHub Actions env literal")
    def _(r):
        v = token(r, 40)
        return _one("jobs:\n  deploy:\n    runs-on: ubuntu-latest\n    env:\n"
                    f"      SLACK_SIGNING: {v}\n    steps:\n      - uses: actions/checkout@v4\n", v)

    @add("env-unlisted", "GitHub Actions with: password literal")
    def _(r):
        p = password(r)
        return _one("      - uses: docker/login-action@v3\n        with:\n          registry: ghcr.io\n"
                    f"          username: ci-bot\n          password: {p}\n", p)

    @add("env-unlisted", "Dockerfile ENV name value")
    def _(r):
        v = token(r, 32)
        return _one(f"FROM node:20-alpine\nENV STRAPI_ADMIN_JWT {v}\nCOPY . /app\nRUN npm ci", v)

    @add("structured-config", "toml poetry http-basic password")
    def _(r):
        p = password(r).replace('"', "")
        return _one(f'[http-basic.internal]\nusername = "ci"\npassword = "{p}"\n', p)

    @add("structured-config", ".properties colon separator")
    def _(r):
        p = password(r)
        return _one(f"mail.smtp.host: smtp.example.com\nmail.smtp.user: alerts\nmail.smtp.password: {p}\n", p)

    @add("structured-config", "hcl variable default")
    def _(r):
        p = password(r).replace('"', "")
        return _one(f'variable "db_password" {{\n  type      = string\n  sensitive = true\n  default   = "{p}"\n}}', p)

    @add("structured-config", "launch.json args array")
    def _(r):
        v = token(r, 40)
        return _one('{"name": "worker", "type": "python", "request": "launch", "program": "worker.py",\n'
                    f' "args": ["--queue", "emails", "--api-secret", "{v}"]}}', v)

    @add("structured-config", "xml attribute password=")
    def _(r):
        p = password(r).replace('"', "").replace("<", "").replace("&", "")
        return _one(f'<connection name="reports" host="db.internal" user="reporter" password="{p}" pool="8"/>', p)

    @add("structured-config", ".pgpass line")
    def _(r):
        p = password(r).replace(":", "").replace("\\", "")
        return _one(f"$ cat ~/.pgpass\ndb.internal:5432:app:app_user:{p}", p)

    @add("structured-config", "yaml spring client-secret")
    def _(r):
        v = hexstr(r, 40)
        return _one("spring:\n  security:\n    oauth2:\n      client:\n        registration:\n          github:\n"
                    f"            client-id: Iv1.{hexstr(r, 16)}\n            client-secret: {v}\n", v)

    # --- connection strings, DSNs
    @add("connection-string", "mongodb+srv user:pass@")
    def _(r):
        p = token(r, 16)
        return _one(f'MONGO_URI="mongodb+srv://app:{p}@cluster0.ab1cd.mongodb.net/prod?retryWrites=true&w=majority"',
                    p)

    @add("connection-string", "sqlplus user/pass@")
    def _(r):
        p = _shell_safe(password(r)).replace("@", "").replace("/", "")
        return _one(f"sqlplus scott/{p}@//db.example.com:1521/ORCLPDB1", p)

    @add("connection-string", "kafka sasl.jaas.config")
    def _(r):
        key, secret = token(r, 16, string.ascii_uppercase + string.digits), token(r, 64, ALNUM + "+/")
        return _one("sasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
                    f'required username="{key}" password="{secret}";', secret)

    @add("connection-string", "StackExchange.Redis ,password=")
    def _(r):
        v = b64(r, 32)
        return _one(f'"Redis": "cache.example.net:6380,password={v},ssl=True,abortConnect=False"', v)

    @add("dsn-user-key", "write key as basic-auth user")
    def _(r):
        v = token(r, 32)
        return _one(f"curl https://{v}:@api.segment.io/v1/track -d '{{\"event\": \"Signed Up\"}}'", v)

    # --- cookies and auth headers
    @add("session-cookie", "curl -b remember_user_token")
    def _(r):
        v = token(r, 64, ALNUM + "-_")
        return _one(f"curl -b 'remember_user_token={v}' https://app.example.com/dashboard", v)

    @add("session-cookie", ".AspNetCore.Cookies Set-Cookie")
    def _(r):
        v = "CfDJ8" + token(r, 150, ALNUM + "-_")
        return _one(f"< Set-Cookie: .AspNetCore.Cookies={v}; path=/; secure; samesite=lax; httponly", v)

    @add("session-cookie", "devtools cookie table row")
    def _(r):
        v = token(r, 43, ALNUM + "-_")
        return _one(f"Name\tValue\tDomain\tPath\n__Host-session\t{v}\tapp.example.com\t/", v)

    @add("http-header", "curl -v > Authorization: Bearer opaque")
    def _(r):
        v = token(r, 40, ALNUM + "-._~")
        return _one("> GET /v1/me HTTP/2\n> Host: api.example.com\n> user-agent: curl/8.5.0\n"
                    f"> authorization: Bearer {v}\n> accept: */*\n>\n< HTTP/2 200", v)

    @add("http-header", "Authorization: ApiKey base64")
    def _(r):
        v = base64.b64encode(f"{token(r, 20)}:{token(r, 22)}".encode()).decode()
        return _one(f'curl -H "Authorization: ApiKey {v}" https://es.example.com:9200/_cat/indices', v)

    @add("http-header", "Proxy-Authorization: Basic")
    def _(r):
        v = base64.b64encode(f"proxyuser:{password(r)}".encode()).decode()
        return _one(f"CONNECT api.example.com:443 HTTP/1.1\nProxy-Authorization: Basic {v}", v)

    @add("http-header", "httpie apikey:header")
    def _(r):
        v = token(r, 32)
        return _one(f"$ http GET https://api.example.com/v1/me apikey:{v}", v)

    # --- vendors' tokens of vendors no form above has (formats from gitleaks' published rules)
    vendors: list[tuple[str, Callable[[random.Random], str]]] = [
        ("planetscale pscale_tkn_", lambda r: "pscale_tkn_" + token(r, 43, ALNUM + "_-")),
        ("dynatrace dt0c01.", lambda r: "dt0c01." + token(r, 24, string.ascii_uppercase + string.digits) + "."
         + token(r, 64, string.ascii_uppercase + string.digits)),
        ("easypost EZAK", lambda r: "EZAK" + token(r, 54)),
        ("rubygems rubygems_", lambda r: "rubygems_" + hexstr(r, 48)),
        ("shippo shippo_live_", lambda r: "shippo_live_" + hexstr(r, 40)),
        ("brevo xkeysib-", lambda r: "xkeysib-" + hexstr(r, 64) + "-" + token(r, 16)),
        ("readme rdme_", lambda r: "rdme_" + token(r, 70, string.ascii_lowercase + string.digits)),
        ("prefect pnu_", lambda r: "pnu_" + token(r, 36)),
        ("perplexity pplx-", lambda r: "pplx-" + token(r, 48)),
        ("clojars CLOJARS_", lambda r: "CLOJARS_" + token(r, 60, string.ascii_lowercase + string.digits)),
        ("cloudflare origin ca v1.0-", lambda r: "v1.0-" + hexstr(r, 24) + "-" + hexstr(r, 146)),
        ("flutterwave FLWSECK-", lambda r: "FLWSECK-" + hexstr(r, 32) + "-X"),
        ("octopus API- caps", lambda r: "API-" + token(r, 26, string.ascii_uppercase + string.digits)),
        ("stripe restricted rk_live_", lambda r: "rk_live_" + token(r, 99)),
        ("slack app xapp-", lambda r: f"xapp-1-A{token(r, 10, string.ascii_uppercase + string.digits)}-"
         f"{r.randrange(10**12, 10**13)}-{hexstr(r, 64)}"),
        ("openshift sha256~", lambda r: "sha256~" + token(r, 43, ALNUM + "_-")),
        ("google oauth GOCSPX-", lambda r: "GOCSPX-" + token(r, 28, ALNUM + "_-")),
        ("tailscale tskey-auth-", lambda r: "tskey-auth-k" + token(r, 10) + "CNTRL-" + token(r, 33)),
        ("sentry user sntryu_", lambda r: "sntryu_" + hexstr(r, 64)),
        ("gitlab runner glrt-", lambda r: "glrt-" + token(r, 20, ALNUM + "_-")),
    ]
    vendor_prose = ["ok the token they gave me is {} — does that look right?",
                    "[tool result] wrote ~/.config/cli/credentials: {}",
                    "ERROR 401 Unauthorized (token={}): token revoked",
                    "Assistant: I've saved {} to your shell profile.",
                    "can you check why {} stopped working after friday"]
    for name, make in vendors:
        def draw_vendor(r, make=make):
            v = make(r)
            return _one(r.choice(vendor_prose).format(v), v)
        add("vendor-prefix", name)(draw_vendor)

    # --- crypto keys
    @add("private-key", "OpenSSH key in cat output")
    def _(r):
        body = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW" + b64(r, 270)
        lines = "\n".join(body[i:i + 70] for i in range(0, len(body), 70))
        return _one(f"$ cat ~/.ssh/id_ed25519\n-----BEGIN OPENSSH PRIVATE KEY-----\n{lines}\n"
                    "-----END OPENSSH PRIVATE KEY-----", body[70:140], body[-60:])

    @add("private-key", "WireGuard PrivateKey =")
    def _(r):
        v = b64(r, 32)
        return _one(f"[Interface]\nPrivateKey = {v}\nAddress = 10.8.0.2/32\nDNS = 1.1.1.1\n\n[Peer]\n"
                    f"PublicKey = {b64(r, 32)}\nEndpoint = vpn.example.net:51820", v)

    @add("private-key", "JWK private d parameter")
    def _(r):
        d = base64.urlsafe_b64encode(r.randbytes(32)).decode().rstrip("=")
        x = base64.urlsafe_b64encode(r.randbytes(32)).decode().rstrip("=")
        y = base64.urlsafe_b64encode(r.randbytes(32)).decode().rstrip("=")
        return _one(f'{{"kty":"EC","crv":"P-256","x":"{x}","y":"{y}","d":"{d}","use":"sig","kid":"k1"}}', d)

    @add("private-key", "bitcoin WIF in prose")
    def _(r):
        v = base58check(b"\x80" + r.randbytes(32) + b"\x01")
        return _one(f"I imported the old paper wallet into electrum, the WIF was {v}", v)

    @add("private-key", "bip32 xprv")
    def _(r):
        v = base58check(bytes.fromhex("0488ade4") + b"\0" * 9 + r.randbytes(32) + b"\0" + r.randbytes(32))
        return _one(f"root key from iancoleman: {v}", v)

    @add("private-key", "nostr nsec")
    def _(r):
        v = "nsec1" + token(r, 58, BECH32)
        return _one(f"my nostr login is {v} (it's the one for damus)", v)

    @add("private-key", "solana keypair json array")
    def _(r):
        v = "[" + ",".join(str(b) for b in r.randbytes(64)) + "]"
        return _one(f"$ cat ~/.config/solana/id.json\n{v}", v)

    @add("ethereum-key", "cast --private-key")
    def _(r):
        v = "0x" + hexstr(r, 64)
        return _one(f'cast send 0x{hexstr(r, 40)} "transfer(address,uint256)" 0x{hexstr(r, 40)} 1000 '
                    f"--private-key {v} --rpc-url https://rpc.example.org", v[2:])

    @add("ethereum-key", "hardhat accounts array")
    def _(r):
        v = hexstr(r, 64)
        return _one(f'networks: {{\n  sepolia: {{\n    url: "https://rpc.sepolia.org",\n    accounts: ["0x{v}"],\n  }},\n}},',
                    v)

    # --- TOTP and 2FA
    @add("totp-seed", "andOTP export json")
    def _(r):
        v = token(r, 32, B32)
        return _one(f'[{{"secret":"{v}","issuer":"GitLab","label":"me@example.com","digits":6,"type":"TOTP",'
                    '"algorithm":"SHA1","thumbnail":"Default","period":30}]', v)

    @add("totp-seed", "2FA recovery codes list")
    def _(r):
        codes = [f"{token(r, 5, string.ascii_lowercase + string.digits)}-{token(r, 5, string.ascii_lowercase + string.digits)}"
                 for _ in range(8)]
        return _one("GitHub recovery codes (keep them somewhere safe):\n" + "\n".join(codes), *codes[:3])

    @add("totp-seed", "German setup key lower groups")
    def _(r):
        v = " ".join(token(r, 4, B32.lower()) for _ in range(4))
        return _one(f"Einrichtungsschlüssel für die Authenticator-App: {v}", v)

    # --- passwords in words
    phrasing = ["changed my password to {} yesterday, hope I remember it",
                "the master password for bitwarden is {}",
                "| env | user | password |\n|---|---|---|\n| staging | admin | {} |",
                "sudo password on the build box: {}",
                "try logging in as root with {}",
                "{} was the password on the old router",
                "forgot to mention, password's {}",
                "Assistant: Done. I've set the admin password to {} as you asked.",
                "logged in fine with alice@example.com / {}"]
    for phrase in phrasing:
        def draw_phrase(r, phrase=phrase):
            p = password(r)
            return _one(phrase.format(p), p)
        add("password-words", phrase.format("X"))(draw_phrase)

    @add("password-words", "my bank PIN is NNNN")
    def _(r):
        v = _digits(r, 4)
        return _one(f"my bank PIN is {v}, the card is in the blue wallet", v)

    @add("password-words", "the door code is NNNNNN")
    def _(r):
        v = _digits(r, 6)
        return _one(f"the door code for the office is {v}, press the key symbol after it", v)

    languages = ["와이파이 비밀번호는 {}입니다", "mật khẩu wifi nhà mình là {}", "كلمة السر الخاصة بي هي {}",
                 "הסיסמה שלי היא {}", "मेरा पासवर्ड {} है", "รหัสผ่านคือ {} นะ", "мій пароль від пошти {}",
                 "la meva contrasenya és {}", "lozinka za wifi je {}", "ang password ko sa email ay {}",
                 "nenosiri langu ni {}", "kata laluan saya ialah {}", "mano slaptažodis yra {}", "رمز عبور من {} است",
                 "nire pasahitza {} da", "lykilorðið mitt er {}"]
    for phrase in languages:
        def draw_language(r, phrase=phrase):
            p = password(r)
            return _one(phrase.format(p), p)
        add("password-other-language", phrase.format("X"))(draw_language)

    # --- seed phrases
    @add("seed-phrase", "comma separated 12")
    def _(r):
        v = ", ".join(mnemonic(r, 12).split())
        return _one(f"ok here are the words in order: {v}", v)

    @add("seed-phrase", "hardhat mnemonic:")
    def _(r):
        v = mnemonic(r, 12)
        return _one(f'  hardhat: {{\n    accounts: {{ mnemonic: "{v}" }},\n  }},', v)

    @add("seed-phrase", "restore log 24")
    def _(r):
        v = mnemonic(r, 24)
        return _one(f"[wallet-cli] restoring from mnemonic '{v}' ... derived 5 accounts", v)

    # --- cards
    @add("card-cvv", "json payment cvc")
    def _(r):
        cvc = f"{r.randrange(100, 1000)}"
        number = luhn_complete("5" + str(r.randrange(1, 6)) + _digits(r, 13))
        return _one(f'{{"number": "{number}", "exp_month": {r.randrange(1, 13)}, "exp_year": 20{r.randrange(27, 33)}, '
                    f'"cvc": "{cvc}"}}', cvc, number)

    @add("card-cvv", "three digits on the back")
    def _(r):
        cvv = f"{r.randrange(100, 1000)}"
        return _one(f"card's expiring {r.randrange(1, 13)}/{r.randrange(27, 33)}, the three digits on the back are {cvv}",
                    cvv)

    @add("card-cvv", "German Prüfnummer")
    def _(r):
        cvv = f"{r.randrange(100, 1000)}"
        return _one(f"Kreditkarte gültig bis {r.randrange(1, 13):02d}/{r.randrange(27, 33)}, Prüfnummer {cvv}", cvv)

    @add("card-cvv", "card number in prose")
    def _(r):
        number = luhn_complete("4" + _digits(r, 14))
        spaced = " ".join(number[i:i + 4] for i in range(0, 16, 4))
        return _one(f"just charge it to my visa, {spaced}", spaced)

    # --- US SSN and other countries' national ids
    @add("ssn-words", "json form ssn")
    def _(r):
        v = f"{r.randrange(1, 666):03d}-{r.randrange(1, 100):02d}-{r.randrange(1, 10000):04d}"
        return _one(f'{{"first_name": "Dana", "dob": "1987-04-12", "ssn": "{v}", "state": "OH"}}', v)

    @add("national-id", "UK NI number")
    def _(r):
        v = (r.choice("ABCEGHJKLMNOPRSTWXYZ") + r.choice("ABCEGHJKLMNPRSTWXYZ") + " "
             + " ".join(_digits(r, 2) for _ in range(3)) + " " + r.choice("ABCD"))
        return _one(f"my NI number is {v} if payroll asks", v)

    @add("national-id", "Canadian SIN")
    def _(r):
        v = luhn_complete(r.choice("1234567") + _digits(r, 7))
        spaced = f"{v[:3]} {v[3:6]} {v[6:]}"
        return _one(f"my SIN is {spaced}", spaced)

    @add("national-id", "Aadhaar")
    def _(r):
        v = _verhoeff(r.choice("23456789") + _digits(r, 10))
        spaced = f"{v[:4]} {v[4:8]} {v[8:]}"
        return _one(f"Aadhaar no. {spaced} (for the KYC form)", spaced)

    @add("national-id", "Spanish DNI")
    def _(r):
        n = r.randrange(10**7, 10**8)
        v = f"{n}{'TRWAGMYFPDXBNJZSQVHLCKE'[n % 23]}"
        return _one(f"mi DNI es {v}", v)

    @add("national-id", "Brazilian CPF")
    def _(r):
        base = [int(c) for c in _digits(r, 9)]
        for size in (10, 11):
            base.append((sum(d * w for d, w in zip(base, range(size, 1, -1), strict=False)) * 10) % 11 % 10)
        s = "".join(map(str, base))
        v = f"{s[:3]}.{s[3:6]}.{s[6:9]}-{s[9:]}"
        return _one(f"meu CPF é {v}", v)

    @add("national-id", "French NIR")
    def _(r):
        body = f"{r.choice('12')}{r.randrange(50, 99)}{r.randrange(1, 13):02d}{r.randrange(1, 96):02d}{_digits(r, 3)}{_digits(r, 3)}"
        key = 97 - int(body) % 97
        v = f"{body[0]} {body[1:3]} {body[3:5]} {body[5:7]} {body[7:10]} {body[10:13]} {key:02d}"
        return _one(f"mon numéro de sécu c'est {v}", v)

    # --- keys wrapped over lines
    @add("wrapped-key", "indented fence with language tag")
    def _(r):
        v = token(r, 84, ALNUM + "+/")
        return _one("here's the key:\n```text\n" + "\n".join("    " + v[i:i + 28] for i in range(0, 84, 28)) + "\n```", v)

    @add("wrapped-key", "shell line continuation")
    def _(r):
        v = token(r, 72)
        return _one(f'export INGEST_TOKEN="{v[:36]}\\\n{v[36:]}"', v[:36], v[36:])  # a reader joins the halves

    @add("wrapped-key", "tilde fence hex")
    def _(r):
        v = hexstr(r, 96)
        return _one("~~~\n" + "\n".join(v[i:i + 32] for i in range(0, 96, 32)) + "\n~~~", v)

    return f


for _cls, _forms4 in _held_out_4_forms().items():
    FORMS.setdefault(_cls, []).extend(_forms4)


def _split_held_out_4(seed: int) -> list[SplitKey]:
    """held-out-4's keys pasted over two messages, from a stream of their own."""
    r = random.Random(f"split-held-out-4-{seed}")
    out = []
    p = password(r) + token(r, 6)
    cut = len(p) // 2
    out.append(SplitKey(f"the nas password starts with {p[:cut]}", f"...and ends in {p[cut:]}", p, cut, H4))
    v = "glpat-" + token(r, 20, ALNUM + "_-")
    out.append(SplitKey(f"token: {v[:14]}", f"sorry sent too early — {v[14:]}", v, 14, H4))
    v = b64(r, 48)
    out.append(SplitKey(f"```\n{v[:32]}\n```", f"```\n{v[32:]}\n```\nthat's the whole signing key", v, 32, H4))
    return out


LOOKALIKE_FORMS.extend((name, T if name in PROMOTED_6 else H4, draw) for name, draw in [  # held-out-4 until round 6
    ("angle placeholder", lambda r: "export API_TOKEN=<your-token>\nthen run ./deploy.sh"),
    ("changeme default", lambda r: "the image ships with admin / changeme, change it before exposing the port"),
    ("${VAR} reference", lambda r: "DB_PASSWORD=${DB_PASSWORD:?set it in .env}\nREDIS_URL=${REDIS_URL}"),
    ("GitHub Actions secrets ref", lambda r: "        with:\n          password: ${{ secrets.GHCR_TOKEN }}"),
    ("helm template ref", lambda r: "  password: {{ .Values.postgresql.auth.password | quote }}"),
    ("masked value in CI log", lambda r: "Run echo $NPM_TOKEN\n***\nAPI_KEY=**** (masked)"),
    ("go.sum line", lambda r: f"golang.org/x/net v0.{r.randrange(10, 40)}.0 h1:{b64(r, 32)}"),
    ("pip --hash", lambda r: f"requests==2.32.3 \\\n    --hash=sha256:{hexstr(r, 64)}"),
    ("Cargo.lock checksum", lambda r: f'name = "serde"\nversion = "1.0.{r.randrange(100, 220)}"\nchecksum = "{hexstr(r, 64)}"'),
    ("nix store path", lambda r: f"/nix/store/{token(r, 32, '0123456789abcdfghijklmnpqrsvwxyz')}-python3-3.11.9/bin/python3"),
    ("ELF BuildID", lambda r: "ELF 64-bit LSB pie executable, x86-64, dynamically linked, "
     f"BuildID[sha1]={hexstr(r, 40)}, stripped"),
    ("RSA JWK public", lambda r: '{"kty":"RSA","e":"AQAB","use":"sig","kid":"' + hexstr(r, 16) + '","n":"'
     + base64.urlsafe_b64encode(r.randbytes(256)).decode().rstrip("=") + '"}'),
    ("age recipient", lambda r: "encrypt to age1" + token(r, 58, BECH32)),
    ("WireGuard peer PublicKey", lambda r: f"[Peer]\nPublicKey = {b64(r, 32)}\nAllowedIPs = 0.0.0.0/0"),
    ("nostr npub", lambda r: "follow me on nostr: npub1" + token(r, 58, BECH32)),
    ("bitcoin xpub", lambda r: "watch-only wallet from "
     + base58check(bytes.fromhex("0488b21e") + b"\0" * 9 + r.randbytes(32) + b"\x02" + r.randbytes(32))),
    ("solana address", lambda r: "send the SOL to " + token(r, 44, B58)),
    ("agglutinative long words", lambda r: r.choice([
        "Lentokonesuihkuturbiinimoottoriapumekaanikkoaliupseerioppilas on pitkä sana.",
        "Çekoslovakyalılaştıramadıklarımızdanmışsınız diye bir söz var.",
        "Der Donaudampfschifffahrtsgesellschaftskapitän war heute krank.",
        "A megszentségteleníthetetlenségeskedéseitekért szó a leghosszabb."])),
    ("password prose in other languages", lambda r: r.choice([
        "Ich habe mein Passwort schon wieder vergessen", "olvidé mi contraseña otra vez",
        "j'ai changé mon mot de passe hier soir", "ho cambiato la password ieri sera"])),
    ("password error message", lambda r: r.choice(["Error: password is required (min 12 characters)",
                                                   "the password is too short, try again",
                                                   "Password: (input hidden)"])),
    ("stripe test card from docs", lambda r: "use the test card 4242 4242 4242 4242 with any future date"),
    ("ULID trace id", lambda r: "trace_id=01J" + token(r, 23, "0123456789ABCDEFGHJKMNPQRSTVWXYZ") + " status=200"),
    ("traceparent header", lambda r: f"traceparent: 00-{hexstr(r, 32)}-{hexstr(r, 16)}-01"),
    ("x-amz-id-2", lambda r: f"x-amz-request-id: {hexstr(r, 16).upper()}\nx-amz-id-2: {b64(r, 57)}"),
    ("hashed asset url", lambda r: f"https://cdn.example.com/assets/app.{hexstr(r, 20)}.js"),
    ("secret ingredient prose", lambda r: r.choice(["my secret ingredient is smoked paprika",
                                                    "the secret to good bread is a long, cold proof"])),
    ("song key", lambda r: "the song's key: Bb major, capo on 3"),
    ("amazon order number", lambda r: f"order #11{r.randrange(2, 5)}-{_digits(r, 7)}-{_digits(r, 7)} shipped"),
])


# --- held-out-5: a second set written from outside, by someone who read neither the rules, their tests nor their
# data, and never changed a form after seeing what the rules catch. Shapes no form above has: other tools'
# credential flags and config files (rclone, restic, borg, ansible, terraform, pulumi, .netrc, .npmrc, .pypirc, git's
# credential store, docker's config.json, gradle, composer, NuGet, AWS/gcloud/Azure files), other vendors' formats
# (from gitleaks' published rule set), secrets in SQL, logs, stack traces, query strings and source code (Python,
# JS, Go, Java, C#, PHP), chat in many languages and registers, recovery codes, card data, other countries' ids,
# wrapped and split keys. Values come from streams of their own (`held-out-5-{seed}`, `lookalike-held-out-5-{seed}`,
# `split-held-out-5-{seed}`) and the cases come after held-out-4's: no older value or index moved.

def _url_safe(p: str) -> str:
    return "".join(c for c in _shell_safe(p) if c not in "@:/?#%&+ ")


def _b64url(r: random.Random, nbytes: int) -> str:
    return base64.urlsafe_b64encode(r.randbytes(nbytes)).decode().rstrip("=")


def _uuid(r: random.Random) -> str:
    return f"{hexstr(r, 8)}-{hexstr(r, 4)}-4{hexstr(r, 3)}-a{hexstr(r, 3)}-{hexstr(r, 12)}"


def _held_out_5_forms() -> dict[str, list[Form]]:
    f: dict[str, list[Form]] = {}

    def add(cls: str, name: str):
        def wrap(draw):
            f.setdefault(cls, []).append((name, H5, draw))
            return draw
        return wrap

    # --- a value right after = or : with no space, in code and dumps
    @add("no-space-assignment", "JS object literal apiSecret:'v'")
    def _(r):
        v = token(r, 38)
        return _one(f"const cfg={{region:'eu',apiSecret:'{v}',retries:3}};", v)

    @add("no-space-assignment", "docker inspect Env array")
    def _(r):
        v = token(r, 36, ALNUM + "_-")
        return _one(f'"Env": [\n    "PATH=/usr/local/sbin:/usr/local/bin",\n    "SIGNUP_HMAC={v}",\n    "LANG=C.UTF-8"\n],', v)

    @add("no-space-assignment", "kubectl describe pod Environment")
    def _(r):
        v = token(r, 44)
        return _one(f"    Environment:\n      NODE_ENV:          production\n      PARTNER_SHARED:    {v}\n"
                    "    Mounts:\n      /var/run/secrets from kube-api-access (ro)", v)

    @add("no-space-assignment", "node error config dump")
    def _(r):
        p = _shell_safe(password(r))
        return _one("Error: connect ECONNREFUSED 10.0.3.7:3306\n    at TCPConnectWrap.afterConnect [as oncomplete] "
                    f"(node:net:1555:16) {{\n  errno: -111,\n  config: {{ host: 'db', user: 'app', password: '{p}' }}\n}}",
                    p)

    # --- hex and ALL-CAPS where a name says what they are
    @add("hex-key-context", "rails secret_key_base hex128")
    def _(r):
        v = hexstr(r, 128)
        return _one(f"production:\n  secret_key_base: {v}\n", v)

    @add("hex-key-context", "flask app.secret_key hex48")
    def _(r):
        v = hexstr(r, 48)
        return _one(f"app = Flask(__name__)\napp.secret_key = '{v}'", v)

    @add("hex-key-context", "cloudflare X-Auth-Key hex37")
    def _(r):
        v = hexstr(r, 37)
        return _one(f'curl https://api.cloudflare.com/client/v4/zones -H "X-Auth-Email: me@example.com" '
                    f'-H "X-Auth-Key: {v}"', v)

    @add("caps-key-context", "1Password Secret Key A3-")
    def _(r):
        caps = string.ascii_uppercase + string.digits
        v = "A3-" + "-".join(token(r, n, caps) for n in (6, 6, 5, 5, 5, 5))
        return _one(f"my 1password secret key (emergency kit): {v}", v)

    @add("caps-key-context", "license .ini Serial=")
    def _(r):
        v = token(r, 30, string.ascii_uppercase + string.digits)
        return _one(f"[License]\nOwner=Dana Smith\nSerial={v}\nSeats=1", v)

    # --- query strings and URL-encoded values
    @add("url-encoded", "router login ?password= encoded")
    def _(r):
        v = urllib.parse.quote(password(r) + r.choice("&=+ "), safe="")
        return _one(f"http://192.168.0.1/login.cgi?username=admin&password={v}&remember=1", v)

    @add("url-encoded", "X-Amz-Security-Token=")
    def _(r):
        v = urllib.parse.quote("IQoJb3JpZ2luX2VjE" + b64(r, 180), safe="")
        return _one(f"https://bkt.s3.eu-west-1.amazonaws.com/a.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256"
                    f"&X-Amz-Security-Token={v}&X-Amz-Expires=300", v)

    @add("url-encoded", "access log ?apikey= hex")
    def _(r):
        v = hexstr(r, 32)
        return _one(f'203.0.113.9 - - [03/Mar/2026:08:00:01 +0000] "GET /v2/weather?q=Lisbon&apikey={v} HTTP/1.1" 200 512',
                    v)

    @add("url-encoded", "datadog ?dd-api-key=")
    def _(r):
        v = hexstr(r, 32)
        return _one(f"POST https://http-intake.logs.datadoghq.eu/api/v2/logs?dd-api-key={v}&ddsource=nodejs", v)

    # --- credentials on other tools' command lines
    cli = [
        ("restic RESTIC_PASSWORD= inline", "RESTIC_PASSWORD='{}' restic -r s3:s3.amazonaws.com/bkp-home backup ~/"),
        ("borg BORG_PASSPHRASE= inline", "BORG_PASSPHRASE='{}' borg create ::home-{{now}} ~/"),
        ("ansible-playbook -e ansible_become_pass=", "ansible-playbook site.yml -i prod -e ansible_become_pass={}"),
        ("ansible-vault password file echo", ("echo '{}' > ~/.vault_pass && ansible-vault view group_vars/all/vault.yml"
                                              " --vault-password-file ~/.vault_pass")),
        ("terraform -var db_password=", "terraform apply -var 'db_password={}' -auto-approve"),
        ("pulumi config set --secret", "pulumi config set --secret dbPassword {}"),
        ("docker login --password-stdin echo", 'echo "{}" | docker login ghcr.io -u octo --password-stdin'),
        ("wp config create --dbpass=", "wp config create --dbname=wp --dbuser=wp --dbpass={} --dbhost=127.0.0.1"),
        ("ssh-keygen -N", "ssh-keygen -t ed25519 -N '{}' -f ~/.ssh/deploy_key"),
        ("gpg --passphrase", "gpg --batch --pinentry-mode loopback --passphrase '{}' -d secrets.tar.gpg | tar x"),
        ("expect send password", 'spawn ssh root@10.0.0.7\nexpect "password:"\nsend "{}\\r"\ninteract'),
        ("PowerShell ConvertTo-SecureString", '$pw = ConvertTo-SecureString "{}" -AsPlainText -Force'),
        ("twine upload -p", "twine upload --repository-url https://pypi.internal/ -u deploy -p {} dist/*"),
    ]
    for name, shape in cli:
        def draw_cli(r, shape=shape):
            p = _shell_safe(password(r))
            return _one(shape.format(p), p)
        add("command-line", name)(draw_cli)

    @add("command-line", "aws configure set aws_secret_access_key")
    def _(r):
        v = token(r, 40, ALNUM + "/+")
        return _one(f"aws configure set aws_secret_access_key {v} --profile prod", v)

    @add("command-line", "az storage --account-key")
    def _(r):
        v = b64(r, 64)
        return _one(f"az storage blob upload --account-name acme --account-key {v} -c backups -f db.bak", v)

    @add("command-line", "rclone config create b2 key")
    def _(r):
        v = "K00" + token(r, 28, ALNUM + "/+")
        return _one(f"rclone config create b2remote b2 account {hexstr(r, 12)} key {v}", v)

    @add("command-line", "npm config set _authToken space")
    def _(r):
        v = token(r, 36)
        return _one(f"npm config set //npm.pkg.github.com/:_authToken {v}", v)

    # --- config files of other tools
    @add("structured-config", ".netrc multi-line")
    def _(r):
        v = token(r, 40)
        return _one(f"$ cat ~/.netrc\nmachine git.example.com\n  login octocat\n  password {v}\n", v)

    @add("structured-config", ".npmrc _auth base64")
    def _(r):
        v = base64.b64encode(f"ci:{password(r)}".encode()).decode()
        return _one(f"registry=https://npm.internal/\n_auth={v}\nemail=ci@example.com\nalways-auth=true", v)

    @add("structured-config", ".pypirc private index")
    def _(r):
        p = password(r)
        return _one(f"[distutils]\nindex-servers = internal\n\n[internal]\nrepository = https://pypi.internal/\n"
                    f"username = deploy\npassword = {p}\n", p)

    @add("structured-config", "git credential store line")
    def _(r):
        p = _url_safe(password(r))
        return _one(f"$ cat ~/.git-credentials\nhttps://alice:{p}@git.example.com", p)

    @add("structured-config", "docker config.json auths auth")
    def _(r):
        v = base64.b64encode(f"octo:{password(r)}".encode()).decode()
        return _one(f'{{\n  "auths": {{\n    "registry.example.com": {{\n      "auth": "{v}"\n    }}\n  }}\n}}', v)

    @add("structured-config", "gradle.properties ossrhPassword")
    def _(r):
        p = password(r)
        return _one(f"org.gradle.jvmargs=-Xmx2g\nossrhUsername=dana\nossrhPassword={p}\nsigning.keyId=0A1B2C3D", p)

    @add("structured-config", "composer auth.json github-oauth")
    def _(r):
        v = hexstr(r, 40)
        return _one(f'{{\n  "github-oauth": {{\n    "github.com": "{v}"\n  }}\n}}', v)

    @add("structured-config", "nuget.config ClearTextPassword")
    def _(r):
        p = password(r).replace('"', "").replace("<", "").replace("&", "")
        return _one('<packageSourceCredentials>\n  <internal>\n    <add key="Username" value="ci" />\n'
                    f'    <add key="ClearTextPassword" value="{p}" />\n  </internal>\n</packageSourceCredentials>', p)

    @add("structured-config", "aws credentials named profile")
    def _(r):
        v = token(r, 40, ALNUM + "/+")
        return _one(f"[client-acme]\naws_access_key_id = AKIA{token(r, 16, string.ascii_uppercase + string.digits)}\n"
                    f"aws_secret_access_key = {v}\nregion = us-east-2", v)

    @add("structured-config", "gcloud adc refresh_token")
    def _(r):
        v = "1//0" + token(r, 100, ALNUM + "-_")
        return _one('{\n  "account": "",\n  "client_id": "764086051850-6qr4p6gpi6hn506pt8ejuq83di341hur.apps.'
                    f'googleusercontent.com",\n  "refresh_token": "{v}",\n  "type": "authorized_user"\n}}', v)

    @add("structured-config", "az ad sp create-for-rbac output")
    def _(r):
        v = token(r, 3) + "8Q~" + token(r, 34, ALNUM + "_~.-")
        return _one(f'{{\n  "appId": "{_uuid(r)}",\n  "displayName": "ci-deploy",\n  "password": "{v}",\n'
                    f'  "tenant": "{_uuid(r)}"\n}}', v)

    @add("structured-config", "rclone.conf b2 key")
    def _(r):
        v = "K00" + token(r, 28, ALNUM + "/+")
        return _one(f"[b2]\ntype = b2\naccount = {hexstr(r, 12)}\nkey = {v}\nhard_delete = true", v)

    @add("structured-config", "ansible inventory ansible_password=")
    def _(r):
        p = _shell_safe(password(r))
        return _one(f"[windows]\nwin01 ansible_host=10.0.0.9 ansible_user=Administrator ansible_password={p} "
                    "ansible_connection=winrm", p)

    @add("structured-config", "terraform.tfstate attributes password")
    def _(r):
        p = password(r).replace('"', "")
        return _one('      "instances": [\n        {\n          "attributes": {\n            "engine": "postgres",\n'
                    f'            "password": "{p}",\n            "username": "app"\n          }}\n        }}\n      ]', p)

    @add("env-unlisted", "printenv grep output")
    def _(r):
        v = token(r, 42)
        return _one(f"$ printenv | grep ACME\nACME_REGION=eu\nACME_INGEST_CRED={v}", v)

    @add("env-unlisted", ".envrc export with quotes")
    def _(r):
        v = token(r, 36, ALNUM + "-_")
        return _one(f'# .envrc\nexport FEATUREFLAGS_SDK="{v}"\nlayout python3', v)

    # --- SQL
    sql = [
        ("CREATE USER IDENTIFIED BY", "CREATE USER 'report'@'%' IDENTIFIED BY '{}';"),
        ("ALTER ROLE WITH PASSWORD", "ALTER ROLE app WITH LOGIN PASSWORD '{}' VALID UNTIL 'infinity';"),
        ("CREATE LOGIN WITH PASSWORD =", "CREATE LOGIN etl WITH PASSWORD = N'{}', CHECK_POLICY = OFF;"),
        ("slow query log SET PASSWORD", "# Query_time: 0.000211\nSET PASSWORD FOR 'svc'@'localhost' = '{}';"),
    ]
    for name, shape in sql:
        def draw_sql(r, shape=shape):
            p = password(r).replace("'", "")
            return _one(shape.format(p), p)
        add("sql", name)(draw_sql)

    @add("sql", "INSERT INTO api_keys VALUES")
    def _(r):
        v = token(r, 40)
        return _one(f"INSERT INTO api_keys (owner, value, created) VALUES ('billing', '{v}', now());", v)

    # --- source code literals
    @add("code-literal", "java static final String")
    def _(r):
        v = token(r, 40)
        return _one(f'    private static final String PARTNER_SECRET = "{v}";', v)

    @add("code-literal", "C# NetworkCredential")
    def _(r):
        p = password(r).replace('"', "").replace("\\", "")
        return _one(f'var client = new SmtpClient("smtp.example.com") {{ Credentials = new NetworkCredential("alerts", "{p}") }};',
                    p)

    @add("code-literal", "go SetBasicAuth")
    def _(r):
        p = password(r).replace('"', "").replace("\\", "")
        return _one(f'req, _ := http.NewRequest("GET", url, nil)\nreq.SetBasicAuth("admin", "{p}")', p)

    @add("code-literal", "python requests auth tuple")
    def _(r):
        p = password(r).replace('"', "").replace("\\", "")
        return _one(f'resp = requests.get("https://jira.example.com/rest/api/2/myself", auth=("dana", "{p}"))', p)

    @add("code-literal", "php define DB_PASSWORD")
    def _(r):
        p = password(r).replace("'", "").replace("\\", "")
        return _one(f"define( 'DB_NAME', 'wordpress' );\ndefine( 'DB_USER', 'wp' );\ndefine( 'DB_PASSWORD', '{p}' );", p)

    @add("code-literal", "JS fetch Authorization Bearer")
    def _(r):
        v = token(r, 40)
        return _one(f"await fetch(url, {{ headers: {{ 'Authorization': 'Bearer {v}', 'Content-Type': 'application/json' }} }});",
                    v)

    @add("code-literal", "C# Ocp-Apim-Subscription-Key header")
    def _(r):
        v = hexstr(r, 32)
        return _one(f'client.DefaultRequestHeaders.Add("Ocp-Apim-Subscription-Key", "{v}");', v)

    @add("code-literal", "java setRequestProperty X-API-KEY")
    def _(r):
        v = token(r, 32)
        return _one(f'conn.setRequestProperty("X-API-KEY", "{v}");', v)

    @add("code-literal", "sqlalchemy create_engine url")
    def _(r):
        p = _url_safe(password(r))
        return _one(f'engine = create_engine("mysql+pymysql://etl:{p}@10.0.0.4/warehouse")', p)

    # --- connection strings and DSNs
    @add("connection-string", "jdbc oracle thin user/pass@")
    def _(r):
        p = _url_safe(password(r))
        return _one(f"spring.datasource.url=jdbc:oracle:thin:scott/{p}@db.example.com:1521/ORCL", p)

    @add("connection-string", "filebeat cloud.auth user:pass")
    def _(r):
        v = token(r, 24)
        return _one(f'cloud.id: "prod:{b64(r, 40)}"\ncloud.auth: "elastic:{v}"', v)

    @add("dsn-user-key", "legacy sentry DSN public:secret@")
    def _(r):
        v = hexstr(r, 32)
        return _one(f"raven.Client('https://{hexstr(r, 32)}:{v}@sentry.example.com/3')", v)

    @add("dsn-user-key", "discord webhook URL token in path")
    def _(r):
        v = token(r, 68, ALNUM + "_-")
        return _one(f"https://discord.com/api/webhooks/{r.randrange(10**17, 10**18)}/{v}", v)

    # --- cookies
    @add("session-cookie", "wordpress_logged_in cookie")
    def _(r):
        t, h = token(r, 43), hexstr(r, 64)
        return _one(f"Cookie: wordpress_logged_in_{hexstr(r, 32)}=admin%7C{r.randrange(10**9, 2 * 10**9)}%7C{t}%7C{h}",
                    t, h)

    @add("session-cookie", "document.cookie assignment")
    def _(r):
        v = token(r, 40, ALNUM + "-_")
        return _one(f'document.cookie = "auth_token={v}; path=/; secure";', v)

    @add("session-cookie", "cookies.txt netscape line")
    def _(r):
        v = token(r, 48, ALNUM + "-_")
        return _one(f"# Netscape HTTP Cookie File\n.example.com\tTRUE\t/\tTRUE\t1798761600\tsid\t{v}", v)

    # --- vendors' tokens (formats from gitleaks' published rules)
    vendors: list[tuple[str, Callable[[random.Random], str]]] = [
        ("figma figd_", lambda r: "figd_" + token(r, 40, ALNUM + "_-")),
        ("buildkite bkua_", lambda r: "bkua_" + hexstr(r, 40)),
        ("circleci CCIPAT_", lambda r: "CCIPAT_" + token(r, 22) + "_" + hexstr(r, 40)),
        ("openrouter sk-or-v1-", lambda r: "sk-or-v1-" + hexstr(r, 64)),
        ("pinecone pcsk_", lambda r: "pcsk_" + token(r, 5) + "_" + token(r, 62)),
        ("sourcegraph sgp_", lambda r: "sgp_" + hexstr(r, 16) + "_" + hexstr(r, 40)),
        ("gitlab trigger glptt-", lambda r: "glptt-" + hexstr(r, 40)),
        ("gitlab deploy gldt-", lambda r: "gldt-" + token(r, 20, ALNUM + "_-")),
        ("jfrog AKCp", lambda r: "AKCp" + token(r, 69)),
        ("hubspot pat-na1-", lambda r: "pat-na1-" + _uuid(r)),
        ("contentful CFPAT-", lambda r: "CFPAT-" + token(r, 43, ALNUM + "_-")),
        ("typeform tfp_", lambda r: "tfp_" + token(r, 59, ALNUM + "_-")),
        ("adafruit aio_", lambda r: "aio_" + token(r, 28)),
        ("supabase sbp_", lambda r: "sbp_" + hexstr(r, 40)),
        ("harness pat.", lambda r: "pat." + token(r, 22) + "." + hexstr(r, 24) + "." + token(r, 20)),
        ("1password ops_eyJ", lambda r: "ops_eyJ" + token(r, 240, ALNUM + "_-")),
        ("duffel duffel_live_", lambda r: "duffel_live_" + token(r, 43, ALNUM + "_-")),
        ("scalingo tk-us-", lambda r: "tk-us-" + token(r, 48, ALNUM + "_-")),
    ]
    vendor_prose = ["new one from the dashboard → {}",
                    "requests.exceptions.HTTPError: 403 Client Error: Forbidden (key {})",
                    "{} <- this one is the prod one, don't mix them up",
                    "Assistant: I stored {} in the repo secrets for you.",
                    "lmk if {} still works for you"]
    for name, make in vendors:
        def draw_vendor(r, make=make):
            v = make(r)
            return _one(r.choice(vendor_prose).format(v), v)
        add("vendor-prefix", name)(draw_vendor)

    # --- crypto keys
    @add("private-key", "EC PRIVATE KEY in yaml block scalar")
    def _(r):
        body = "MHcCAQEEI" + b64(r, 110)
        lines = "\n".join("    " + body[i:i + 64] for i in range(0, len(body), 64))
        return _one(f"data:\n  tls.key: |\n    -----BEGIN EC PRIVATE KEY-----\n{lines}\n    -----END EC PRIVATE KEY-----",
                    body[:64], body[64:128])

    @add("private-key", "PGP PRIVATE KEY BLOCK")
    def _(r):
        body = "lQOYBF" + b64(r, 300)
        lines = "\n".join(body[i:i + 64] for i in range(0, len(body), 64))
        return _one(f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{lines}\n-----END PGP PRIVATE KEY BLOCK-----",
                    body[64:128], body[-50:])

    @add("ethereum-key", "ethers new Wallet('0x')")
    def _(r):
        v = hexstr(r, 64)
        return _one(f'const wallet = new ethers.Wallet("0x{v}", provider);', v)

    @add("ethereum-key", "web3 from_key no 0x")
    def _(r):
        v = hexstr(r, 64)
        return _one(f'acct = w3.eth.account.from_key("{v}")', v)

    @add("ethereum-key", "metamask export output")
    def _(r):
        v = hexstr(r, 64)
        return _one(f"Show private key\nThis is your private key (click to copy)\n{v}\nDone", v)

    # --- TOTP and recovery codes
    @add("totp-seed", "pyotp.TOTP literal")
    def _(r):
        v = token(r, 32, B32)
        return _one(f'totp = pyotp.TOTP("{v}")\nprint(totp.now())', v)

    @add("totp-seed", "otpauth secret lower after issuer")
    def _(r):
        v = token(r, 26, B32.lower())
        return _one(f"otpauth://totp/GitHub%3Adana?issuer=GitHub&algorithm=SHA1&digits=6&period=30&secret={v}", v)

    @add("totp-seed", "KeePassXC otp field")
    def _(r):
        v = token(r, 32, B32)
        return _one(f"otp: otpauth://totp/x?secret={v}&period=30&digits=6\nor in the old field: key={v}&step=30&size=6",
                    v)

    @add("totp-seed", "google backup codes 8 digits")
    def _(r):
        codes = [f"{_digits(r, 4)} {_digits(r, 4)}" for _ in range(10)]
        return _one("BACKUP VERIFICATION CODES\n" + "\n".join(f"{i}. {c}" for i, c in enumerate(codes, 1)), *codes[:3])

    @add("totp-seed", "BitLocker recovery key")
    def _(r):
        v = "-".join(_digits(r, 6) for _ in range(8))
        return _one(f"BitLocker recovery key for C: {v}", v)

    @add("totp-seed", "Apple recovery key groups")
    def _(r):
        v = "-".join(token(r, 4, string.ascii_uppercase + string.digits) for _ in range(7))
        return _one(f"apple id recovery key: {v} (printed, in the drawer)", v)

    # --- passwords in chat
    phrasing = ["same as the old one but with ! at the end, so {}",
                "my passwrod is {} lol",
                "wifi 📶 → {}",
                "u: jdoe p: {}",
                "for throwaway accounts i always use {}",
                "Assistant: Got it — I'll remember that your Netflix login is {}.",
                "is {} a strong enough password?",
                "MY PASSWORD IS {} DONT FORGET",
                "the pword for the shared drive: {}",
                "Passwort fürs Gäste-WLAN steht an der Tafel: {}"]
    for phrase in phrasing:
        def draw_phrase(r, phrase=phrase):
            p = password(r)
            return _one(phrase.format(p), p)
        add("password-words", phrase.format("X"))(draw_phrase)

    @add("password-words", "list of logins")
    def _(r):
        a, b = password(r), password(r)
        return _one(f"accounts:\n- netflix: {a}\n- spotify: {b}\n- (bank is in my head)", a, b)

    @add("password-words", "SIM PIN and PUK")
    def _(r):
        pin, puk = _digits(r, 4), _digits(r, 8)
        return _one(f"new sim card: PIN {pin}, PUK {puk}", pin, puk)

    @add("password-words", "bike lock combo")
    def _(r):
        v = _digits(r, 4)
        return _one(f"the combo for the bike lock is {v}", v)

    @add("password-words", "alarm code with hash")
    def _(r):
        v = _digits(r, 5)
        return _one(f"alarm code at mum's is {v}# (then wait for the beep)", v)

    languages = ["我的密碼是 {}", "暗証番号は{}です", "mi pass del banco es {}", "meine PIN ist {}",
                 "mon code de carte bleue c'est {}", "senha: {} (não compartilha)", "пароль от вайфая {}",
                 "hasło do wifi: {}", "το password μου είναι {}", "parolam {}", "mera password {} hai",
                 "আমার পাসওয়ার্ড {}", "என் கடவுச்சொல் {}", "moje geslo je {}", "minu parool on {}",
                 "mana parole ir {}", "my wagwoord is {}", "fy nghyfrinair yw {}"]
    pins = {"暗証番号は{}です", "meine PIN ist {}", "mon code de carte bleue c'est {}"}
    for phrase in languages:
        def draw_language(r, phrase=phrase):
            p = _digits(r, 4) if phrase in pins else password(r)
            return _one(phrase.format(p), p)
        add("password-other-language", phrase.format("X"))(draw_language)

    # --- seed phrases
    @add("seed-phrase", "two-column numbered 12")
    def _(r):
        w = mnemonic(r, 12).split()
        rows = "\n".join(f"{i + 1:>2}. {w[i]:<10} {i + 7:>2}. {w[i + 6]}" for i in range(6))
        return _one("seed (write down in order):\n" + rows, *(f"{i + 1:>2}. {w[i]:<10} {i + 7:>2}. {w[i + 6]}"
                                                               for i in range(3)))

    @add("seed-phrase", "python to_seed literal")
    def _(r):
        v = mnemonic(r, 12)
        return _one(f'seed = Mnemonic("english").to_seed("{v}", passphrase="")', v)

    @add("seed-phrase", "upper-case 12")
    def _(r):
        v = mnemonic(r, 12).upper()
        return _one(f"WORDS: {v}", v)

    @add("seed-phrase", "18 words dash separated")
    def _(r):
        v = "-".join(mnemonic(r, 18).split())
        return _one(f"backup {v}", v)

    # --- cards
    @add("card-cvv", "amex with CID")
    def _(r):
        n = luhn_complete("3" + r.choice("47") + _digits(r, 12))
        spaced = f"{n[:4]} {n[4:10]} {n[10:]}"
        cid = _digits(r, 4)
        return _one(f"amex {spaced}, CID {cid}", cid, spaced)

    @add("card-cvv", "checkout form body cvv2=")
    def _(r):
        n = luhn_complete("4" + _digits(r, 14))
        cvv = f"{r.randrange(100, 1000)}"
        return _one(f"POST /checkout card_number={n}&exp=0{r.randrange(1, 10)}{r.randrange(27, 33)}&cvv2={cvv}",
                    cvv, n)

    @add("card-cvv", "French cryptogramme")
    def _(r):
        cvv = f"{r.randrange(100, 1000)}"
        return _one(f"carte expire fin {r.randrange(1, 13):02d}/{r.randrange(27, 33)}, cryptogramme {cvv}", cvv)

    @add("card-cvv", "Spanish código de seguridad")
    def _(r):
        cvv = f"{r.randrange(100, 1000)}"
        return _one(f"el código de seguridad de la tarjeta es {cvv}, vence {r.randrange(1, 13):02d}/{r.randrange(27, 33)}",
                    cvv)

    # --- US numbers and other countries' ids
    @add("ssn-words", "SSN with dots")
    def _(r):
        v = f"{r.randrange(1, 666):03d}.{r.randrange(1, 100):02d}.{r.randrange(1, 10000):04d}"
        return _one(f"ssn {v} for the W-9", v)

    @add("ssn-words", "ITIN")
    def _(r):
        v = f"9{_digits(r, 2)}-{r.choice(['70', '78', '88', '93'])}-{_digits(r, 4)}"
        return _one(f"my ITIN is {v}", v)

    @add("national-id", "Dutch BSN")
    def _(r):
        while True:
            body = str(r.randrange(1, 10)) + _digits(r, 7)
            check = sum(int(d) * w for d, w in zip(body, range(9, 1, -1), strict=True)) % 11
            if check < 10:
                v = body + str(check)
                return _one(f"mijn BSN is {v}", v)

    @add("national-id", "Polish PESEL")
    def _(r):
        body = f"{r.randrange(50, 99)}{r.randrange(1, 13):02d}{r.randrange(1, 29):02d}{_digits(r, 4)}"
        check = (10 - sum(int(d) * w for d, w in zip(body, [1, 3, 7, 9] * 3, strict=False)) % 10) % 10
        v = body + str(check)
        return _one(f"PESEL: {v}", v)

    @add("national-id", "Swedish personnummer")
    def _(r):
        body = f"{r.randrange(50, 99)}{r.randrange(1, 13):02d}{r.randrange(1, 29):02d}{_digits(r, 3)}"
        v = luhn_complete(body)
        v = f"{v[:6]}-{v[6:]}"
        return _one(f"personnummer {v}", v)

    @add("national-id", "Danish CPR")
    def _(r):
        v = f"{r.randrange(1, 29):02d}{r.randrange(1, 13):02d}{r.randrange(50, 99)}-{_digits(r, 4)}"
        return _one(f"mit CPR-nummer er {v}", v)

    @add("national-id", "Singapore NRIC")
    def _(r):
        body = _digits(r, 7)
        total = sum(int(d) * w for d, w in zip(body, [2, 7, 6, 5, 4, 3, 2], strict=True))
        v = "S" + body + "JZIHGFEDCBA"[total % 11]
        return _one(f"NRIC {v}, please keep it private", v)

    @add("national-id", "Chinese resident id")
    def _(r):
        body = f"{r.randrange(110000, 660000)}19{r.randrange(50, 99)}{r.randrange(1, 13):02d}{r.randrange(1, 29):02d}{_digits(r, 3)}"
        weights = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]
        v = body + "10X98765432"[sum(int(d) * w for d, w in zip(body, weights, strict=True)) % 11]
        return _one(f"身份证号 {v}", v)

    @add("national-id", "Korean RRN")
    def _(r):
        body = f"{r.randrange(50, 99)}{r.randrange(1, 13):02d}{r.randrange(1, 29):02d}{r.choice('12')}{_digits(r, 5)}"
        check = (11 - sum(int(d) * w for d, w in zip(body, [2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5], strict=True)) % 11) % 10
        v = f"{body[:6]}-{body[6:]}{check}"
        return _one(f"주민등록번호 {v}", v)

    @add("national-id", "Mexican CURP")
    def _(r):
        up = string.ascii_uppercase
        v = (token(r, 4, up) + f"{r.randrange(50, 99)}{r.randrange(1, 13):02d}{r.randrange(1, 29):02d}"
             + r.choice("HM") + r.choice(["DF", "JC", "NL", "PL", "YN"]) + token(r, 3, "BCDFGHJKLMNPQRSTVWXYZ")
             + r.choice(up + string.digits) + str(r.randrange(10)))
        return _one(f"mi CURP es {v}", v)

    @add("national-id", "Italian codice fiscale")
    def _(r):
        up = string.ascii_uppercase
        v = (token(r, 6, up) + f"{r.randrange(50, 99)}" + r.choice("ABCDEHLMPRST") + f"{r.randrange(1, 72):02d}"
             + r.choice(up) + _digits(r, 3) + r.choice(up))
        return _one(f"il mio codice fiscale: {v}", v)

    # --- keys wrapped over lines
    @add("wrapped-key", "python triple-quoted wrapped")
    def _(r):
        v = token(r, 80, ALNUM + "+/")
        return _one(f'SIGNING_KEY = """\n{v[:40]}\n{v[40:]}\n"""', v[:40], v[40:])

    @add("wrapped-key", "email quote wrapped")
    def _(r):
        v = token(r, 90)
        pieces = [v[i:i + 30] for i in range(0, 90, 30)]  # a reader joins them, the quote marks aside
        return _one("> the new token is\n" + "\n".join("> " + piece for piece in pieces), *pieces)

    @add("wrapped-key", "json string with escaped newlines")
    def _(r):
        v = b64(r, 90)
        pieces = [v[i:i + 40] for i in range(0, len(v), 40)]  # a JSON reader joins them with newlines
        return _one('{"license_blob": "' + "\\n".join(pieces) + '"}', *pieces)

    return f


for _cls, _forms5 in _held_out_5_forms().items():
    FORMS.setdefault(_cls, []).extend(_forms5)


def _split_held_out_5(seed: int) -> list[SplitKey]:
    """held-out-5's keys pasted over two messages, from a stream of their own."""
    r = random.Random(f"split-held-out-5-{seed}")
    out = []
    p = password(r) + token(r, 5)
    cut = len(p) // 2
    out.append(SplitKey(f"wifi pw is {p[:cut]}", f"oops hit enter, rest: {p[cut:]}", p, cut, H5))
    v = hexstr(r, 64)
    out.append(SplitKey(f"secret: {v[:32]}", f"{v[32:]}", v, 32, H5))
    v = "figd_" + token(r, 40, ALNUM + "_-")
    out.append(SplitKey(f"```\n{v[:22]}", f"{v[22:]}\n```\n^ figma token", v, 22, H5))
    return out


LOOKALIKE_FORMS.extend((name, H5, draw) for name, draw in [
    ("python os.environ read", lambda r: 'api_key = os.environ["OPENAI_API_KEY"]\nclient = OpenAI(api_key=api_key)'),
    ("JS process.env read", lambda r: 'const secret = process.env.JWT_SECRET ?? "";\nif (!secret) throw new Error("set it")'),
    ("go os.Getenv read", lambda r: 'token := os.Getenv("GITHUB_TOKEN")\nif token == "" { log.Fatal("no token") }'),
    ("C# configuration lookup", lambda r: 'var key = builder.Configuration["Stripe:SecretKey"];'),
    ("SQL user without a password", lambda r: "CREATE USER report WITH LOGIN;\n"
     "GRANT SELECT ON ALL TABLES IN SCHEMA public TO report;"),
    ("SQL password NULL", lambda r: "ALTER ROLE app PASSWORD NULL;  -- use peer auth instead"),
    ("AWS docs example keys", lambda r: "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n"
     "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("terraform sensitive output", lambda r: '  + password = (sensitive value)\n  + username = "app"'),
    ("vault kv path", lambda r: f"vault kv get -field=password secret/data/prod/db-{r.randrange(1, 9)}"),
    ("git describe", lambda r: f"v2.{r.randrange(20)}.{r.randrange(9)}-{r.randrange(1, 99)}-g{hexstr(r, 7)}-dirty"),
    ("PGP fingerprint", lambda r: "Key fingerprint = " + "  ".join(" ".join(hexstr(r, 4).upper() for _ in range(5))
                                                                   for _ in range(2))),
    ("known_hosts ecdsa line", lambda r: "github.com ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABB"
     + b64(r, 65)),
    ("TLS certificate", lambda r: "-----BEGIN CERTIFICATE-----\nMIID" + "\n".join(b64(r, 48) for _ in range(4))
     + "\n-----END CERTIFICATE-----"),
    ("solidity role constant", lambda r: 'bytes32 public constant MINTER_ROLE = keccak256("MINTER_ROLE");'),
    ("ISBN", lambda r: f"ISBN 978-0-{r.randrange(100, 999)}-{r.randrange(10000, 99999)}-{r.randrange(10)}"),
    ("password rules in other languages", lambda r: r.choice([
        "la contraseña debe tener al menos 12 caracteres", "das Passwort muss mindestens 12 Zeichen haben",
        "le mot de passe doit contenir un chiffre", "パスワードを忘れました"])),
    ("password meter output", lambda r: "Password strength: weak (8 chars, no symbols). Try a longer passphrase."),
    ("PIN and code prose", lambda r: r.choice(["the PIN pad at the door is broken again", "I forgot my PIN, locked out",
                                               "the alarm code changed last week, ask Sam",
                                               "enter the 6-digit code we sent you"])),
    ("recovery prose", lambda r: r.choice(["I printed the recovery codes and put them in the safe",
                                           "write your 24 seed words on paper, never in a cloud note"])),
    ("sentence of common BIP-39 words", lambda r: r.choice([
        "I need to buy a new phone and a coffee table before the winter trip",
        "the kitchen door is open so the cat can walk around the garden in the morning"])),
    ("card last four", lambda r: f"visa ending in {_digits(r, 4)}, expires {r.randrange(1, 13):02d}/{r.randrange(27, 33)}"),
    ("yarn.lock resolved sha1", lambda r: f'  resolved "https://registry.yarnpkg.com/ms/-/ms-2.1.3.tgz#{hexstr(r, 40)}"'),
    ("Azure resource id", lambda r: f"/subscriptions/{_uuid(r)}/resourceGroups/rg-prod/providers/Microsoft.Web/sites/api"),
    ("Slack mention ids", lambda r: f"<@U0{token(r, 9, string.ascii_uppercase + string.digits)}> please look at "
     f"<#C0{token(r, 9, string.ascii_uppercase + string.digits)}|general>"),
    ("x-filled placeholder token", lambda r: "GITHUB_TOKEN=ghp_" + "x" * 36 + "\nOPENAI_API_KEY=sk-..."),
    ("masked values", lambda r: "password: ********\ntoken=[REDACTED]\napi_key: <hidden>"),
    ("base64 of a settings json", lambda r: "localStorage.settings = "
     + base64.b64encode(f'{{"theme":"dark","lang":"en","fontSize":{r.randrange(10, 20)}}}'.encode()).decode()),
    ("hex of English text", lambda r: "payload: " + r.choice(["Hello, world! See you tomorrow.",
                                                             "meeting moved to thursday"]).encode().hex()),
    ("COM GUID attribute", lambda r: f'[Guid("{_uuid(r).upper()}")]\npublic class Exporter {{ }}'),
    ("Apple team identifier", lambda r: f"TeamIdentifier={token(r, 10, string.ascii_uppercase + string.digits)}"),
])
