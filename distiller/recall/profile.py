"""The profile: two or three sentences about the user, composed from the active, confident beliefs.

The rules backend fills a template — who the user is (identity, facts), what they want and like (goals,
preferences), what they decided — each sentence from at most three beliefs it cites, strongest first. The profile
is cached in the state dir under a key of the beliefs it was made from (ids, statements, confidences), so it is
composed again only when they changed, or when asked (`--refresh`).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import duckdb
import orjson

from distiller.recall import PROFILE_FILE, write_if_changed

PROFILE_VERSION = "rules-1"  # part of the cache key: a new template composes every cached profile again
MIN_CONFIDENCE = 0.7
PER_SENTENCE = 3
GROUPS = (("identity", "fact"), ("goal", "preference"), ("decision",))


@dataclass(frozen=True, slots=True)
class Sentence:
    text: str
    cites: tuple[str, ...]  # the belief ids it is composed from


@dataclass(frozen=True, slots=True)
class Profile:
    sentences: tuple[Sentence, ...]
    key: str  # of the beliefs under it
    cached: bool  # read from the cache, not composed now

    @property
    def text(self) -> str:
        return " ".join(s.text for s in self.sentences)

    def as_dict(self) -> dict:
        return {"text": self.text, "key": self.key, "cached": self.cached,
                "sentences": [asdict(s) for s in self.sentences]}


def _candidates(con: duckdb.DuckDBPyConnection, agent: str | None) -> list[tuple[str, str, str, float]]:
    scope = " AND scope IN ('global', $scope)" if agent else ""
    params = {"scope": f"agent:{agent}"} if agent else {}
    return con.execute(
        f"SELECT belief_id, category, statement, confidence FROM beliefs "
        f"WHERE status = 'active' AND confidence >= {MIN_CONFIDENCE}{scope} "
        "ORDER BY importance DESC, confidence DESC, last_seen DESC, belief_id", params).fetchall()


def _key(rows: list[tuple]) -> str:
    digest = hashlib.sha256(PROFILE_VERSION.encode())
    for row in rows:
        digest.update(orjson.dumps(row))
    return digest.hexdigest()[:16]


def _clause(statement: str, first: bool) -> str:
    text = " ".join(statement.split()).rstrip(".;")
    return text if first or not text[:1].isupper() or text[1:2].isupper() else text[:1].lower() + text[1:]


def compose(rows: list[tuple[str, str, str, float]]) -> tuple[Sentence, ...]:
    """One sentence per group of categories with beliefs, each joining its strongest statements."""
    sentences = []
    for group in GROUPS:
        chosen = [row for row in rows if row[1] in group][:PER_SENTENCE]
        if chosen:
            text = "; ".join(_clause(row[2], n == 0) for n, row in enumerate(chosen)) + "."
            sentences.append(Sentence(text, tuple(row[0] for row in chosen)))
    return tuple(sentences)


def profile(con: duckdb.DuckDBPyConnection, state_dir: Path, *, agent: str | None = None,
            refresh: bool = False) -> Profile:
    """The cached profile while its beliefs are unchanged, else a newly composed one (and the cache updated when
    the state dir is writable: a read-only caller still gets its profile)."""
    rows = _candidates(con, agent)
    key = _key([*rows, agent or ""])
    name = PROFILE_FILE if agent is None else f"profile.{hashlib.sha256(agent.encode()).hexdigest()[:12]}.json"
    cache = state_dir / name
    if not refresh:
        try:
            cached = orjson.loads(cache.read_bytes())
            if cached.get("key") == key:
                return Profile(tuple(Sentence(s["text"], tuple(s["cites"])) for s in cached["sentences"]), key, True)
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
            pass
    made = Profile(compose(rows), key, False)
    try:
        if os.access(state_dir, os.W_OK):
            write_if_changed(cache, orjson.dumps(made.as_dict() | {"cached": True}).decode())
    except OSError:
        pass
    return made
