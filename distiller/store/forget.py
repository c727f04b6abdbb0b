"""Forgetting: delete beliefs or a source's evidence, and leave tombstones so nothing forgotten comes back."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import duckdb

from distiller.store import terms, tombstones
from distiller.store.bulk import pack, rows
from distiller.store.keys import belief_key, file_key, normalize, session_key, slot_message_key
from distiller.store.lifecycle import recompute
from distiller.store.settings import StoreSettings

_IDS = rows({"belief_id": "VARCHAR"})


@dataclass(frozen=True, slots=True)
class Forgotten:
    beliefs: tuple[str, ...]  # ids deleted
    evidence: int  # evidence rows deleted
    tombstones: int

    def as_dict(self) -> dict[str, object]:
        return {"beliefs": list(self.beliefs), "evidence": self.evidence, "tombstones": self.tombstones}


def forget_beliefs(con: duckdb.DuckDBPyConnection, ids: Sequence[str], reason: str, now: datetime) -> Forgotten:
    """Delete beliefs with their evidence, wordings and history; tombstone every wording and (slot, message) pair."""
    ids = list(dict.fromkeys(ids))
    if not ids:
        return Forgotten((), 0, 0)
    param = {"rows": pack(belief_id=ids)}
    keys = con.execute(f"SELECT key FROM belief_keys SEMI JOIN {_IDS} i USING (belief_id)", param).fetchall()
    cited = con.execute(
        f"SELECT b.subject, b.attribute, e.session_id, e.message_id FROM evidence e JOIN beliefs b USING (belief_id) "
        f"SEMI JOIN {_IDS} i USING (belief_id)",
        param,
    ).fetchall()
    entries = [(key, "statement") for (key,) in keys] + [(slot_message_key(*row), "slot_message") for row in cited]
    count = tombstones.add(con, entries, reason, now)
    evidence = len(con.execute(f"DELETE FROM evidence WHERE belief_id IN (SELECT belief_id FROM {_IDS}) "
                               "RETURNING belief_id", param).fetchall())
    terms.drop_beliefs(con, ids)
    for table in ("belief_keys", "belief_history"):
        con.execute(f"DELETE FROM {table} WHERE belief_id IN (SELECT belief_id FROM {_IDS})", param)
    deleted = con.execute(f"DELETE FROM beliefs WHERE belief_id IN (SELECT belief_id FROM {_IDS}) RETURNING belief_id",
                          param).fetchall()
    for column in ("superseded_by", "supersedes", "conflicts_with"):
        con.execute(f"UPDATE beliefs SET {column} = NULL WHERE {column} IN (SELECT belief_id FROM {_IDS})", param)
    con.execute(f"UPDATE belief_history SET other_id = NULL WHERE other_id IN (SELECT belief_id FROM {_IDS})", param)
    return Forgotten(tuple(sorted(row[0] for row in deleted)), evidence, count)


def source_sessions(con: duckdb.DuckDBPyConnection, source: str) -> tuple[str | None, list[str]]:
    """A transcript path (its sessions, from the cursors and the evidence) or a session id."""
    if os.sep not in source and not source.endswith(".jsonl") and not os.path.exists(source):
        return None, [source]
    path = os.path.abspath(os.path.expanduser(source))
    found = con.execute(
        "SELECT session_id FROM files WHERE path = $p UNION SELECT session_id FROM evidence WHERE file = $p",
        {"p": path},
    ).fetchall()
    return path, sorted(row[0] for row in found)


def forget_source(
    con: duckdb.DuckDBPyConnection, source: str, settings: StoreSettings, now: datetime
) -> Forgotten:
    """Delete the evidence from a file or session, the beliefs left without any, and the wordings only it gave."""
    path, sessions = source_sessions(con, source)
    entries = [(session_key(s), "session") for s in sessions] + ([(file_key(path), "file")] if path else [])
    count = tombstones.add(con, entries, "forget-source", now)
    removed = con.execute(
        "DELETE FROM evidence WHERE session_id IN (SELECT unnest($sessions)) OR file = $path "
        "RETURNING belief_id, session_id, message_id",
        {"sessions": sessions, "path": path or ""},
    ).fetchall()
    terms.drop_quotes(con, removed)
    touched = sorted({row[0] for row in removed})
    if not touched:
        return Forgotten((), 0, count)
    param = {"rows": pack(belief_id=touched)}
    empty = [row[0] for row in con.execute(
        f"SELECT belief_id FROM {_IDS} i ANTI JOIN evidence e USING (belief_id)", param).fetchall()]
    gone = forget_beliefs(con, empty, "forget-source", now)
    left = sorted(set(touched) - set(empty))
    _rewrite_statements(con, left)
    recompute(con, left, settings, now)
    return Forgotten(gone.beliefs, len(removed), count + gone.tombstones)


def _rewrite_statements(con: duckdb.DuckDBPyConnection, ids: list[str]) -> None:
    """Keep only wordings that remaining evidence gave: a forgotten source's wording goes with it."""
    if not ids:
        return
    wordings = con.execute(
        f"SELECT DISTINCT belief_id, statement FROM evidence SEMI JOIN {_IDS} i USING (belief_id) ORDER BY ALL",
        {"rows": pack(belief_id=ids)},
    ).fetchall()
    best: dict[str, tuple[str, ...]] = {}
    statements: dict[str, str] = {}
    for belief_id, statement in wordings:
        tokens = normalize(statement).tokens
        if belief_id not in best or len(tokens) > len(best[belief_id]):
            best[belief_id], statements[belief_id] = tokens, statement
    chosen = sorted(best)
    terms.replace_statements(con, {i: statements[i] for i in chosen})
    # The content words go with the wording.
    con.execute(
        f"""
        UPDATE beliefs SET statement = u.statement, words = u.words
        FROM {rows({'belief_id': 'VARCHAR', 'statement': 'VARCHAR', 'words': 'VARCHAR'})} u
        WHERE beliefs.belief_id = u.belief_id AND beliefs.statement <> u.statement
        """,
        {"rows": pack(belief_id=chosen, statement=[statements[i] for i in chosen],
                      words=[" ".join(best[i]) for i in chosen])},
    )
    con.execute(
        f"""
        DELETE FROM belief_keys WHERE belief_id IN (SELECT belief_id FROM {_IDS})
          AND key NOT IN (SELECT key FROM {rows({'key': 'VARCHAR'}, 'keys')})
        """,
        {"rows": pack(belief_id=ids), "keys": pack(key=_remaining_keys(con, ids))},
    )


def _remaining_keys(con: duckdb.DuckDBPyConnection, ids: list[str]) -> list[str]:
    found = con.execute(
        f"SELECT DISTINCT b.belief_id, b.scope, e.statement FROM evidence e JOIN beliefs b USING (belief_id) "
        f"SEMI JOIN {_IDS} i USING (belief_id)",
        {"rows": pack(belief_id=ids)},
    ).fetchall()
    return sorted({belief_key(scope, normalize(statement).text) for _, scope, statement in found} | set(ids))
