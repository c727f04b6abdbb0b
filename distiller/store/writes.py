"""The belief store's write path: dedupe, merge, supersede, keep provenance, never resurrect the forgotten.

`upsert` runs inside the caller's transaction (the one that advances the cursors and records the run), so a batch
is committed exactly once. It reads what the batch can touch in a handful of set-based queries, decides each
candidate in memory in evidence-time order (so a later statement supersedes an earlier one even within a batch),
then writes with a few bulk statements over unnest()ed lists. Aggregates (confidence, counts, first/last seen,
status) are recomputed from the evidence rows, which makes replays and forgetting exact rather than incremental.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

import duckdb

from distiller.errors import DistillError
from distiller.records import Belief
from distiller.redact import refusal
from distiller.storable import unsafe
from distiller.store import near, schema, terms, tombstones
from distiller.store.bulk import pack, rows
from distiller.store.decide import Holder, Known, New, Outcome, decide
from distiller.store.keys import (
    belief_key,
    file_key,
    normalize,
    polarity_only,
    session_key,
    slot_message_key,
    slot_part,
)
from distiller.store.lifecycle import (
    ACTIVE,
    ARCHIVED,
    FLAGGED,
    PROVISIONAL,
    aggregate_params,
    aggregates,
    history,
    set_aggregates,
    status_sql,
)
from distiller.store.settings import ScopeRule, StoreSettings


@dataclass(frozen=True, slots=True)
class UpsertResult:
    """One count per candidate: exactly one of these happened to it."""

    inserted: int = 0
    reinforced: int = 0
    merged: int = 0
    superseded: int = 0
    flagged: int = 0
    refused_secret: int = 0
    refused_unsafe: int = 0  # control characters or markup: verification strips or rejects them, an import may not
    refused_tombstoned: int = 0
    replayed: int = 0  # every evidence item already recorded: nothing changed
    belief_ids: tuple[str, ...] = ()  # the beliefs the candidates went to (replays included), not a count

    def as_dict(self) -> dict[str, int]:
        return {name: value for name, value in asdict(self).items() if name != "belief_ids"}


@dataclass(frozen=True, slots=True)
class StoredEvidence:
    message_id: str
    session: str
    agent: str
    file: str
    byte_start: int
    byte_end: int
    ts: str
    quote: str
    run: str
    statement: str
    confidence: float
    evidence_type: str


@dataclass(frozen=True, slots=True)
class StoredBelief:
    """A belief as exported and imported: everything needed to rebuild it, evidence included."""

    id: str
    statement: str
    category: str
    confidence: float
    status: str
    scope: str
    subject: str
    attribute: str
    valid_from: str | None
    valid_to: str | None
    evidence_type: str
    importance: int
    decay_sensitivity: str
    superseded_by: str | None
    supersedes: str | None
    conflicts_with: str | None
    evidence_count: int
    sessions: int
    first_seen: str
    last_seen: str
    extractor: str
    model: str | None
    prompt_version: str
    keys: tuple[str, ...]
    evidence: tuple[StoredEvidence, ...]


@dataclass(slots=True)
class _Evidence:
    session_id: str
    message_id: str
    agent: str
    file: str
    byte_start: int
    byte_end: int
    ts: datetime
    quote: str
    run_id: str
    statement: str
    confidence: float
    explicit: bool


@dataclass(slots=True)
class _Candidate:
    order: int
    belief_id: str  # the id it gets if it becomes a new belief
    keys: tuple[str, ...]  # its own exact key first, then any imported aliases
    statement: str
    tokens: tuple[str, ...]
    sig: str
    category: str
    scope: str
    subject: str
    attribute: str
    confidence: float
    explicit: bool
    importance: int
    decay_sensitivity: str
    valid_from: str | None
    extractor: str
    model: str | None
    prompt_version: str
    evidence: list[_Evidence]
    latest: datetime  # of the evidence

    @property
    def slot(self) -> tuple[str, str, str] | None:
        return (self.scope, self.subject, self.attribute) if self.attribute else None


@dataclass(slots=True)
class _Held:
    """A belief as this upsert sees it: loaded from the database or created by an earlier candidate."""

    belief_id: str
    statement: str
    tokens: tuple[str, ...]
    sig: str
    category: str
    scope: str
    subject: str
    attribute: str
    status: str
    confidence: float
    importance: int
    decay_sensitivity: str
    last_seen: datetime
    valid_from: str | None
    superseded_by: str | None
    supersedes: str | None = None
    conflicts_with: str | None = None
    valid_to: str | None = None
    # Not columns:
    stored_tokens: tuple[str, ...] = field(default=(), metadata={"column": False})  # the words column as stored
    loaded: tuple[str | None, str | None, str | None] = field(  # lifecycle as stored
        default=(None, None, None), metadata={"column": False})
    new: bool = field(default=False, metadata={"column": False})

    @property
    def slot(self) -> tuple[str, str, str] | None:
        return (self.scope, self.subject, self.attribute) if self.attribute else None

    @property
    def lifecycle(self) -> tuple[str | None, str | None, str | None]:
        return self.superseded_by, self.supersedes, self.valid_to


# The columns a _Held is loaded from, in its field order (its tokens are the words column).
_HELD_COLUMNS = ", ".join(f"b.{'words' if f.name == 'tokens' else f.name}" for f in fields(_Held)
                          if f.metadata.get("column", True))


def _held(row: tuple[Any, ...]) -> _Held:
    tokens = tuple(row[2].split())
    values: list[Any] = [*row[:2], tokens, *row[3:]]
    held = _Held(*values)
    held.stored_tokens, held.loaded = tokens, held.lifecycle
    return held


def _when(ts: str | None, now: datetime) -> datetime:
    if ts:
        try:
            parsed = datetime.fromisoformat(ts)
        except ValueError:
            return now
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return now


def scope_of(category: str, agent: str, given: str, rules: Iterable[ScopeRule]) -> str:
    for rule in rules:
        if fnmatch.fnmatchcase(category, rule.category) and fnmatch.fnmatchcase(agent, rule.agent):
            given = rule.scope.replace("{agent}", agent)
            break
    scope = given or f"agent:{agent}"
    if scope != "global" and not (scope.startswith("agent:") and len(scope) > len("agent:")):
        raise DistillError(f"invalid belief scope {scope!r}: expected 'global' or 'agent:<id>'")
    return scope


def _candidate(order: int, belief: Belief, run_id: str, settings: StoreSettings, now: datetime) -> _Candidate:
    if not belief.evidence:
        raise DistillError(f"belief without evidence cannot be stored: {belief.statement[:60]!r}")
    agent = belief.evidence[0].agent
    scope = scope_of(belief.category, agent, belief.scope, settings.scope_rules)
    norm = normalize(belief.statement)
    key = belief_key(scope, norm.text)
    confidence = min(max(float(belief.confidence), 0.0), 1.0)
    explicit = belief.evidence_type == "explicit"
    statement = " ".join(belief.statement.split())
    evidence = [
        _Evidence(e.session_id, e.message_id, e.agent, e.file, e.byte_start, e.byte_end, _when(e.ts, now), e.quote,
                  run_id, statement, confidence, explicit)
        for e in belief.evidence
    ]
    return _Candidate(
        order, key, (key,), statement, norm.tokens, norm.sig, belief.category, scope, slot_part(belief.subject),
        slot_part(belief.attribute), confidence, explicit, int(belief.importance), belief.decay_sensitivity,
        belief.valid_from, belief.extractor, belief.model, belief.prompt_version, evidence, max(e.ts for e in evidence),
    )


def _restored(order: int, stored: StoredBelief, settings: StoreSettings, now: datetime) -> _Candidate:
    if not stored.evidence:
        raise DistillError(f"belief {stored.id} has no evidence and cannot be imported")
    scope = scope_of(stored.category, stored.evidence[0].agent, stored.scope, ())
    norm = normalize(stored.statement)
    own = belief_key(scope, norm.text)
    evidence = [
        _Evidence(e.session, e.message_id, e.agent, e.file, e.byte_start, e.byte_end, _when(e.ts, now), e.quote, e.run,
                  e.statement or stored.statement, min(max(float(e.confidence), 0.0), 1.0),
                  e.evidence_type == "explicit")
        for e in stored.evidence
    ]
    subject = slot_part(stored.subject)
    return _Candidate(
        order, stored.id or own, tuple(dict.fromkeys((own, stored.id, *stored.keys))), stored.statement,
        norm.tokens, norm.sig, stored.category, scope, subject, slot_part(stored.attribute),
        max(e.confidence for e in evidence), any(e.explicit for e in evidence), int(stored.importance),
        stored.decay_sensitivity, stored.valid_from, stored.extractor, stored.model, stored.prompt_version, evidence,
        max(e.ts for e in evidence),
    )


def _refusals(texts: list[str]) -> list[str | None]:
    """The last guard: nothing that is, or looks like, a secret reaches the database (redact.refusal), and no text
    with control characters or markup ("secret" or "unsafe" per text, else None).

    One scan of the whole batch clears the usual batch at once; only a batch with a hit is scanned belief by
    belief. A belief's match is found where it lies in the joined text unless an earlier match runs across the
    joining newline, and the only patterns that can (a private key block, `aws_secret_key =` followed by a line
    break, a credential word followed by one) accept what they match, so a clean join is a clean batch."""
    joined = "\n".join(texts)
    if refusal(joined) is None and not unsafe(joined):
        return [None] * len(texts)
    return ["secret" if refusal(text) is not None else "unsafe" if unsafe(text) else None for text in texts]


def upsert(
    con: duckdb.DuckDBPyConnection,
    beliefs: Sequence[Belief],
    run_id: str,
    *,
    settings: StoreSettings | None = None,
    now: datetime | None = None,
) -> UpsertResult:
    """Store verified beliefs inside the caller's open transaction; safe to replay."""
    settings = settings or StoreSettings()
    now = now or datetime.now(UTC)
    refused = _refusals(["\n".join([b.statement, *(e.quote for e in b.evidence)]) for b in beliefs])
    candidates = [_candidate(order, belief, run_id, settings, now)
                  for order, (belief, why) in enumerate(zip(beliefs, refused, strict=True)) if why is None]
    return _store(con, settings, now, run_id, candidates, refused)


def restore(
    con: duckdb.DuckDBPyConnection,
    stored: Sequence[StoredBelief],
    *,
    settings: StoreSettings | None = None,
    now: datetime | None = None,
) -> UpsertResult:
    """Import exported beliefs through the same rules as new ones (tombstones, secrets, dedupe), keeping their ids."""
    settings = settings or StoreSettings()
    now = now or datetime.now(UTC)
    # Flagged beliefs last among equals in time, so each meets the belief it contradicted already in place.
    ordered = sorted(stored, key=lambda b: b.status == FLAGGED)
    refused = _refusals(["\n".join([b.statement, *(q for e in b.evidence for q in (e.quote, e.statement))])
                         for b in ordered])
    candidates = [_restored(order, belief, settings, now)
                  for order, (belief, why) in enumerate(zip(ordered, refused, strict=True)) if why is None]
    return _store(con, settings, now, "import", candidates, refused)


_IDS = rows({"belief_id": "VARCHAR"})
_SLOTS = rows({"scope": "VARCHAR", "subject": "VARCHAR", "attribute": "VARCHAR"}, "slots")


def _not_forgotten(con: duckdb.DuckDBPyConnection, settings: StoreSettings,
                   candidates: list[_Candidate]) -> tuple[list[_Candidate], int]:
    """Drop evidence from forgotten sources or (slot, message) pairs, and candidates whose key was forgotten; the
    candidates kept, and how many were refused. With allow_newer_evidence, evidence newer than the tombstone that
    blocks it still counts."""
    if not tombstones.any_recorded(con):
        return candidates, 0

    def keys_of(c: _Candidate, e: _Evidence) -> tuple[str, ...]:
        return (session_key(e.session_id), file_key(e.file),
                slot_message_key(c.subject, c.attribute, e.session_id, e.message_id))

    wanted = {k for c in candidates for k in c.keys} | {k for c in candidates for e in c.evidence
                                                       for k in keys_of(c, e)}
    dead = tombstones.matching(con, wanted)
    if not dead:
        return candidates, 0

    def blocked(e: _Evidence, keys: Iterable[str]) -> bool:
        times = [dead[k] for k in keys if k in dead]
        return bool(times) and not (settings.allow_newer_evidence and e.ts > max(times))

    kept = []
    for c in candidates:
        statement_keys = [k for k in c.keys if k in dead]
        c.evidence = [e for e in c.evidence if not blocked(e, (*keys_of(c, e), *statement_keys))]
        if c.evidence:
            c.latest = max(e.ts for e in c.evidence)
            kept.append(c)
    return kept, len(candidates) - len(kept)


PASS_SIZE = 10_000  # candidates per pass: DuckDB's 128 MB suffice for any batch, a whole import too


def _store(con: duckdb.DuckDBPyConnection, settings: StoreSettings, now: datetime, run_id: str,
           candidates: list[_Candidate], refused: list[str | None]) -> UpsertResult:
    """Passes of PASS_SIZE candidates in evidence-time order; each later pass sees what the earlier ones wrote."""
    candidates, forgotten = _not_forgotten(con, settings, candidates)
    counts = dict.fromkeys(UpsertResult().as_dict(), 0)
    counts.update(refused_secret=refused.count("secret"), refused_unsafe=refused.count("unsafe"),
                  refused_tombstoned=forgotten)
    candidates.sort(key=lambda c: (c.latest, c.belief_id, c.order))  # a tie in time: by key, never by arrival
    drawn: dict[str, None] = {}
    for start in range(0, len(candidates), PASS_SIZE):
        one_pass = _Upsert(con, settings, now, run_id, counts=counts)
        one_pass.apply(candidates[start:start + PASS_SIZE])
        drawn.update(dict.fromkeys(one_pass.resolved.values()))
    return UpsertResult(**counts, belief_ids=tuple(drawn))


@dataclass(slots=True)
class _View:
    """What one pass knows of the store: loaded before its candidates are decided, kept current as each is."""

    held: dict[str, _Held] = field(default_factory=dict)  # the beliefs it may touch, by id
    exact: dict[str, str] = field(default_factory=dict)  # key → belief id
    stored_keys: set[str] = field(default_factory=set)  # keys belief_keys already holds
    slots: dict[tuple[str, str, str], set[str]] = field(default_factory=dict)  # slot → live, unflagged holders
    cited: set[tuple[str, str, str]] = field(default_factory=set)  # (belief, session, message) already evidence
    near_ids: set[int] = field(default_factory=set)  # candidates with a near duplicate in the pass's near_pairs


@dataclass(slots=True)
class _Changes:
    """What one pass writes, gathered as its candidates are decided (the beliefs themselves change in the view)."""

    evidence: dict[tuple[str, str, str], _Evidence] = field(default_factory=dict)  # (belief, session, message)
    aliases: dict[str, str] = field(default_factory=dict)  # key → belief id, for belief_keys
    touched: set[str] = field(default_factory=set)  # beliefs whose aggregates change
    inserted: list[tuple[_Held, _Candidate]] = field(default_factory=list)
    events: list[tuple[str, str, str | None]] = field(default_factory=list)  # lifecycle events for belief_history


@dataclass
class _Upsert:
    """One pass: what its candidates can touch, loaded; each decided in order; the outcome written in bulk."""

    con: duckdb.DuckDBPyConnection
    settings: StoreSettings
    now: datetime
    run_id: str
    counts: dict[str, int]  # the result's counters, shared by every pass of an upsert
    view: _View = field(default_factory=_View)
    changes: _Changes = field(default_factory=_Changes)
    resolved: dict[int, str] = field(default_factory=dict)  # candidate order → the belief it went to

    def apply(self, candidates: list[_Candidate]) -> None:
        self._load(candidates)
        for candidate in candidates:
            self._decide(candidate)
        if self.view.near_ids:
            self.con.execute("DROP TABLE near_pairs")
        _write(self.con, self.view, self.changes, self.settings, self.now, self.run_id)

    # -- reading ---------------------------------------------------------------------------------------------

    def _keep(self, row: tuple[Any, ...]) -> _Held:
        held = self.view.held.get(row[0])
        if held is None:
            held = self.view.held[row[0]] = _held(row)
            if held.slot and held.status not in (ARCHIVED, FLAGGED):
                self.view.slots.setdefault(held.slot, set()).add(held.belief_id)
        return held

    def _load(self, candidates: list[_Candidate]) -> None:
        con = self.con
        keys = [k for c in candidates for k in c.keys]
        self.view.exact = dict(con.execute(
            f"SELECT key, belief_id FROM belief_keys SEMI JOIN {rows({'key': 'VARCHAR'})} w USING (key) "
            "SEMI JOIN beliefs USING (belief_id)",
            {"rows": pack(key=keys)},
        ).fetchall())
        self.view.stored_keys = set(self.view.exact)
        messages = [e for c in candidates for e in c.evidence]
        self.view.cited = set(con.execute(
            "SELECT belief_id, session_id, message_id FROM evidence SEMI JOIN "
            f"{rows({'session_id': 'VARCHAR', 'message_id': 'VARCHAR'})} w USING (session_id, message_id)",
            {"rows": pack(session_id=[e.session_id for e in messages], message_id=[e.message_id for e in messages])},
        ).fetchall())
        # A pure replay needs nothing loaded: its belief and all its evidence are already stored.
        targets = {c.order: self._exact_target(c) for c in candidates}
        live = [c for c in candidates if not self._replayed(c, targets[c.order])]
        unmatched = [c for c in live if targets[c.order] is None and c.tokens]
        if unmatched:
            self._find_near(unmatched)
        exact = {target for c in live if (target := targets[c.order]) is not None}
        near = ({ref for (ref,) in con.execute(
            "SELECT DISTINCT ref FROM near_pairs WHERE NOT starts_with(ref, '#')").fetchall()}
            if self.view.near_ids else set())
        ids = sorted(exact | near)
        slot_list = sorted({c.slot for c in live if c.slot})
        # The slots of the candidates and of the beliefs they matched, exactly or nearly: their live holders may be
        # superseded, or (a matched belief revived) supersede it; every one of them is loaded, never only those that
        # happen to be near a candidate.
        for row in con.execute(
            f"""
            WITH matched AS (SELECT b.* FROM beliefs b SEMI JOIN {_IDS} i USING (belief_id))
            SELECT {_HELD_COLUMNS} FROM matched b
            UNION ALL
            SELECT {_HELD_COLUMNS} FROM beliefs b
            SEMI JOIN (SELECT * FROM {_SLOTS} UNION SELECT scope, subject, attribute FROM matched
                       WHERE attribute <> '') s USING (scope, subject, attribute)
            WHERE b.status NOT IN ('archived', 'flagged_for_review')
            """,
            {"rows": pack(belief_id=ids),
             "slots": pack(scope=[s[0] for s in slot_list], subject=[s[1] for s in slot_list],
                           attribute=[s[2] for s in slot_list])},
        ).fetchall():
            self._keep(row)

    def _find_near(self, unmatched: list[_Candidate]) -> None:
        """Near duplicates among the stored beliefs and this batch, within the same group (store/near.py), kept in
        the temp table near_pairs for the pass and read candidate by candidate (_near_pairs): a session stating
        near-identical facts thousands of times has millions of pairs, which held in Python took 2 GB."""
        self.con.execute("CREATE OR REPLACE TEMP TABLE near_pairs AS " + near.NEAR_SQL, {
            "rows": pack(id=[c.order for c in unmatched], scope=[c.scope for c in unmatched],
                         category=[c.category for c in unmatched], subject=[c.subject for c in unmatched],
                         words=[" ".join(c.tokens) for c in unmatched], sig=[c.sig for c in unmatched]),
            "jaro_winkler": self.settings.near_jaro_winkler, "jaccard": self.settings.near_jaccard,
        })
        self.view.near_ids = {i for (i,) in self.con.execute("SELECT DISTINCT id FROM near_pairs").fetchall()}
        if not self.view.near_ids:
            self.con.execute("DROP TABLE near_pairs")
        elif len(self.view.near_ids) > 64:  # a point lookup per candidate, not a scan of every pair
            self.con.execute("CREATE INDEX near_pairs_id ON near_pairs (id)")

    def _near_pairs(self, c: _Candidate) -> list[tuple[float, str, str]]:
        """(score, ref, sig) of the candidate's near duplicates, best first."""
        if c.order not in self.view.near_ids:
            return []
        return self.con.execute("SELECT jw + jac, ref, sig FROM near_pairs WHERE id = ? ORDER BY 1 DESC, 2",
                                [c.order]).fetchall()

    # -- deciding ----------------------------------------------------------------------------------------------

    def _resolve(self, ref: str) -> _Held | None:
        belief_id = self.resolved.get(int(ref[1:])) if ref.startswith("#") else ref
        return self.view.held.get(belief_id) if belief_id else None

    def _near_target(self, c: _Candidate) -> _Held | None:
        """The closest near duplicate, a live one before an archived one (which the new evidence revives)."""
        best: tuple[bool, float, _Held] | None = None
        for score, ref, sig in self._near_pairs(c):
            target = self._resolve(ref)
            if (target is None or sig != c.sig
                    or (target.scope, target.category, target.subject) != (c.scope, c.category, c.subject)):
                continue
            rank = (target.status != ARCHIVED, score)
            if best is None or rank > best[:2]:
                best = (*rank, target)
        return best[2] if best else None

    def _contradicted(self, c: _Candidate) -> _Held | None:
        """An active belief saying nearly the same with the opposite polarity."""
        for _, ref, _sig in self._near_pairs(c):
            target = self._resolve(ref)
            if target is not None and target.status == ACTIVE and polarity_only(c.sig, target.sig):
                return target
        return None

    def _holders(self, slot: tuple[str, str, str] | None, excluding: str | None = None) -> list[Holder]:
        """The slot's live, unflagged holders, oldest first (decide.Holder)."""
        if slot is None:
            return []
        return sorted((Holder(h.belief_id, h.last_seen, h.status, h.confidence, h.valid_from)
                       for h in (self.view.held[i] for i in self.view.slots.get(slot, ()) if i != excluding)),
                      key=lambda h: (h.last_seen, h.belief_id))

    def _strong(self, c: _Candidate) -> bool:
        """Status as later candidates of this batch see it; recompute() sets the real one from all evidence."""
        return c.explicit and c.confidence >= self.settings.active_confidence

    def _count(self, outcome: str) -> None:
        self.counts[outcome] += 1

    def _add_evidence(self, target: _Held, evidence: list[_Evidence]) -> None:
        for e in evidence:
            key = (target.belief_id, e.session_id, e.message_id)
            self.view.cited.add(key)
            self.changes.evidence.setdefault(key, e)
            target.last_seen = max(target.last_seen, e.ts)
        self.changes.touched.add(target.belief_id)

    def _register(self, c: _Candidate, belief_id: str) -> None:
        for key in c.keys:
            self.view.exact.setdefault(key, belief_id)
            self.changes.aliases.setdefault(key, belief_id)
        self.resolved[c.order] = belief_id

    def _exact_target(self, c: _Candidate) -> str | None:
        for key in c.keys:
            target = self.view.exact.get(key)
            if target is not None:
                return target
        return None

    def _replayed(self, c: _Candidate, target: str | None) -> bool:
        """Its exact belief already holds every evidence item: nothing changes (known targets never change)."""
        return target is not None and all((target, e.session_id, e.message_id) in self.view.cited for e in c.evidence)

    def _supersede(self, old: _Held, new: _Held, valid_to: str | None) -> None:
        old.superseded_by, old.valid_to, old.status = new.belief_id, valid_to, ARCHIVED
        if old.slot:
            self.view.slots.get(old.slot, set()).discard(old.belief_id)
        self.changes.touched.add(old.belief_id)
        self.changes.events.append((old.belief_id, "superseded", new.belief_id))

    def _decide(self, c: _Candidate) -> None:
        target_id = self._exact_target(c)
        if target_id is not None and self._replayed(c, target_id):
            self._register(c, target_id)
            self._count("replayed")
            return
        target = self.view.held[target_id] if target_id else self._near_target(c)
        if target is not None:
            self._reinforce(c, target, merged=target_id is None)
        else:
            self._insert(c)

    def _reinforce(self, c: _Candidate, target: _Held, *, merged: bool) -> None:
        self._register(c, target.belief_id)
        fresh = [e for e in c.evidence if (target.belief_id, e.session_id, e.message_id) not in self.view.cited]
        if not fresh:
            self._count("replayed")
            return
        newest = max(e.ts for e in fresh)
        self._add_evidence(target, fresh)
        target.importance = max(target.importance, c.importance)
        if merged and len(c.tokens) > len(target.tokens):  # the more informative wording; a tie keeps the old one
            target.statement, target.tokens = c.statement, c.tokens
        holders = self._holders(target.slot, excluding=target.belief_id) if target.status == ARCHIVED else []
        self._apply(target, decide(Known(target.belief_id, target.status, newest, target.superseded_by,
                                         target.supersedes, self._strong(c), merged), holders))

    def _insert(self, c: _Candidate) -> None:
        valid_from = c.valid_from or min(e.ts for e in c.evidence).isoformat()
        new = _Held(c.belief_id, c.statement, c.tokens, c.sig, c.category, c.scope, c.subject, c.attribute,
                    PROVISIONAL, c.confidence, c.importance, c.decay_sensitivity, c.latest, valid_from, None, new=True)
        self.view.held[new.belief_id] = new
        self._register(c, new.belief_id)
        self._add_evidence(new, c.evidence)
        holders = self._holders(c.slot)
        contradicted = None if holders else self._contradicted(c)
        self._apply(new, decide(New(c.belief_id, c.latest, valid_from, c.explicit, c.confidence, self._strong(c),
                                    contradicted.belief_id if contradicted else None), holders))
        self.changes.inserted.append((new, c))

    def _apply(self, target: _Held, outcome: Outcome) -> None:
        """Carry out decide()'s outcome on the beliefs held in memory; written in bulk by _write()."""
        target.status = outcome.status
        if not outcome.keep_links:
            target.superseded_by, target.valid_to = outcome.superseded_by, outcome.valid_to
        if outcome.supersedes is not None:
            target.supersedes = outcome.supersedes
        if outcome.conflicts_with is not None:
            target.conflicts_with = outcome.conflicts_with
        for holder_id in outcome.archive:
            self._supersede(self.view.held[holder_id], target, outcome.archive_valid_to)
        if outcome.holds_slot and target.slot:
            self.view.slots.setdefault(target.slot, set()).add(target.belief_id)
        if outcome.event is not None:
            self.changes.events.append((target.belief_id, outcome.event, outcome.other))
        self._count(outcome.count)

# -- writing ---------------------------------------------------------------------------------------------

def _write(con: duckdb.DuckDBPyConnection, view: _View, changes: _Changes, settings: StoreSettings, now: datetime,
           run_id: str) -> None:
    """Evidence first, so the existing beliefs' aggregates include it; new beliefs get theirs from the batch."""
    params = aggregate_params(settings, now)
    if changes.evidence:  # none of it cited yet: the primary key is a guard here, not a filter
        keys = list(changes.evidence)
        ev = list(changes.evidence.values())
        con.execute(
            f"""
            INSERT INTO evidence SELECT belief_id, session_id, message_id, agent, file, byte_start, byte_end, ts,
                quote, statement, confidence, explicit, run_id, $now
            FROM {rows(_EVIDENCE)}
            """,
            {"rows": pack(
                belief_id=[k[0] for k in keys], session_id=[k[1] for k in keys], message_id=[k[2] for k in keys],
                agent=[e.agent for e in ev], file=[e.file for e in ev], byte_start=[e.byte_start for e in ev],
                byte_end=[e.byte_end for e in ev], ts=[e.ts for e in ev], quote=[e.quote for e in ev],
                statement=[e.statement for e in ev], confidence=[e.confidence for e in ev],
                explicit=[e.explicit for e in ev], run_id=[e.run_id for e in ev],
            ), "now": now},
        )
    if changes.inserted:
        _write_new(con, changes, settings, now, run_id)
    touched = [h for h in view.held.values() if not h.new and h.belief_id in changes.touched]
    if touched:
        evidence = (f"(SELECT e.*, t.decay_sensitivity, t.scope FROM evidence e "
                    f"JOIN {rows(_TOUCHED)} t USING (belief_id))")
        con.execute(
            f"""
            UPDATE beliefs SET importance = u.importance, {set_aggregates("a")}, status = {status_sql("u", "a")},
                   updated_at = $now
            FROM {rows(_TOUCHED)} u JOIN {aggregates(evidence)} a USING (belief_id)
            WHERE beliefs.belief_id = u.belief_id
            """,
            {"rows": pack(
                belief_id=[h.belief_id for h in touched], importance=[h.importance for h in touched],
                status=[h.status for h in touched], superseded_by=[h.superseded_by for h in touched],
                decay_sensitivity=[h.decay_sensitivity for h in touched], scope=[h.scope for h in touched],
            ), **params},
        )
    # Long strings are costly to update (DuckDB copies each touched vector), so only the rows whose wording or
    # supersession changed get those columns.
    existing = [h for h in view.held.values() if not h.new]
    reworded = [h for h in existing if h.tokens != h.stored_tokens]
    if reworded:
        con.execute(
            f"UPDATE beliefs SET statement = u.statement, words = u.words FROM {rows(_REWORDED)} u "
            "WHERE beliefs.belief_id = u.belief_id",
            {"rows": pack(belief_id=[h.belief_id for h in reworded], statement=[h.statement for h in reworded],
                          words=[" ".join(h.tokens) for h in reworded])},
        )
    relinked = [h for h in existing if h.lifecycle != h.loaded]
    if relinked:
        con.execute(
            f"""
            UPDATE beliefs SET superseded_by = u.superseded_by, supersedes = u.supersedes, valid_to = u.valid_to
            FROM {rows(_RELINKED)} u WHERE beliefs.belief_id = u.belief_id
            """,
            {"rows": pack(
                belief_id=[h.belief_id for h in relinked], superseded_by=[h.superseded_by for h in relinked],
                supersedes=[h.supersedes for h in relinked], valid_to=[h.valid_to for h in relinked],
            )},
        )
    aliases = {k: v for k, v in changes.aliases.items() if k not in view.stored_keys}
    if aliases:
        con.execute(
            f"INSERT INTO belief_keys SELECT key, belief_id FROM {rows({'key': 'VARCHAR', 'belief_id': 'VARCHAR'})} "
            "ON CONFLICT (key) DO NOTHING",
            {"rows": pack(key=list(aliases), belief_id=list(aliases.values()))},
        )
    history(con, changes.events, run_id, now)
    # Recall's terms, in this same transaction: each new evidence item's quote, each new or changed wording.
    terms.add(con, ((*key, e.quote) for key, e in changes.evidence.items()))
    terms.replace_statements(con, {h.belief_id: h.statement for h in (*reworded, *(h for h, _ in changes.inserted))})

def _write_new(con: duckdb.DuckDBPyConnection, changes: _Changes, settings: StoreSettings, now: datetime,
               run_id: str) -> None:
    """A new belief's evidence is all in this batch, so its aggregates come from there, not a table scan."""
    new = [h for h, _ in changes.inserted]
    cands = [c for _, c in changes.inserted]
    decay = {h.belief_id: h.decay_sensitivity for h in new}
    scopes = {h.belief_id: h.scope for h in new}
    ev = [(k, e) for k, e in changes.evidence.items() if k[0] in decay]
    con.execute(
        f"""
        INSERT INTO beliefs (belief_id, statement, words, sig, category, scope, subject, attribute,
            confidence, evidence_type, importance, decay_sensitivity, status, valid_from, valid_to,
            superseded_by, supersedes, conflicts_with, first_seen, last_seen, evidence_count, sessions,
            created_at, updated_at, run_id, extractor, model, prompt_version)
        SELECT n.belief_id, n.statement, n.words, n.sig, n.category, n.scope, n.subject, n.attribute,
               a.confidence, CASE WHEN a.explicit THEN 'explicit' ELSE 'implied' END, n.importance,
               n.decay_sensitivity, {status_sql("n", "a")}, n.valid_from, n.valid_to, n.superseded_by, n.supersedes,
               n.conflicts_with, a.first_seen, a.last_seen, a.n, a.sessions, $now, $now, $run_id, n.extractor,
               n.model, n.prompt_version
        FROM {rows(_NEW)} n JOIN {aggregates(rows(_NEW_EVIDENCE, "evidence"))} a USING (belief_id)
        """,
        {"rows": pack(
            belief_id=[h.belief_id for h in new], statement=[h.statement for h in new],
            words=[" ".join(h.tokens) for h in new], sig=[h.sig for h in new],
            category=[h.category for h in new], scope=[h.scope for h in new], subject=[h.subject for h in new],
            attribute=[h.attribute for h in new], importance=[h.importance for h in new],
            decay_sensitivity=[h.decay_sensitivity for h in new], status=[h.status for h in new],
            valid_from=[h.valid_from for h in new], valid_to=[h.valid_to for h in new],
            superseded_by=[h.superseded_by for h in new], supersedes=[h.supersedes for h in new],
            conflicts_with=[h.conflicts_with for h in new], extractor=[c.extractor for c in cands],
            model=[c.model for c in cands], prompt_version=[c.prompt_version for c in cands],
        ), "evidence": pack(
            belief_id=[k[0] for k, _ in ev], session_id=[k[1] for k, _ in ev], ts=[e.ts for _, e in ev],
            confidence=[e.confidence for _, e in ev], explicit=[e.explicit for _, e in ev],
            decay_sensitivity=[decay[k[0]] for k, _ in ev], scope=[scopes[k[0]] for k, _ in ev],
        ), "run_id": run_id, **aggregate_params(settings, now)},
    )


_NEW = schema.types(
    "belief_id statement words sig category scope subject attribute importance decay_sensitivity status valid_from "
    "valid_to superseded_by supersedes conflicts_with extractor model prompt_version")
_NEW_EVIDENCE = schema.types("belief_id session_id ts confidence explicit decay_sensitivity scope")
_TOUCHED = schema.types("belief_id importance status superseded_by decay_sensitivity scope")
_REWORDED = schema.types("belief_id statement words")
_RELINKED = schema.types("belief_id superseded_by supersedes valid_to")
_EVIDENCE = schema.types(
    "belief_id session_id message_id agent file byte_start byte_end ts quote statement confidence explicit run_id")
