"""The near-duplicate index: a few keys per wording, chosen so that any two wordings of one (scope, category,
subject) group whose word-level Jaccard reaches INDEX_JACCARD share at least one key. Candidates then find their
near duplicates by key lookups instead of scans, and only true suspects reach the string comparisons.

This is prefix filtering, as in set-similarity joins. Order a wording's n distinct content words by a fixed hash.
Two wordings with s shared words and Jaccard >= t have s >= a = ceil(t·n) for each one's own n, so each one's
first three shared words lie among its first n - a + 3 words: every triple of those is a key. Pairs with s < 3
are small enough to list whole: s = 2 needs n <= 3 (all pairs are keys), s = 1 needs n = 1 (the word is the key).
A higher threshold than INDEX_JACCARD only needs fewer keys, so the index stays valid for it.

Keys are computed in SQL from `beliefs.words` (DuckDB's hash of group and word; a pair or triple is the xor of its
words), so the index is derivable from the beliefs alone: a migration rebuilds it whenever this definition changes,
and `ensure_current` whenever DuckDB's hash does (it is not promised stable across versions; md5 is, but it
doubled the cost of computing the keys).
"""

from __future__ import annotations

import duckdb

from distiller.store.bulk import rows

INDEX_JACCARD = 0.6  # the lowest near-duplicate Jaccard threshold the stored keys serve

_SOURCE = {"id": "VARCHAR", "scope": "VARCHAR", "category": "VARCHAR", "subject": "VARCHAR", "words": "VARCHAR",
           "indexed": "VARCHAR"}
SOURCE_ROWS = rows(_SOURCE)  # what add() indexes: each wording's words, and the wording `indexed` already covered


def keys(source: str, words: str = "words") -> str:
    """(id, key) for every key of the `words` of each row of `source` (id, scope, category, subject, words)."""
    return f"""(
        WITH ranked AS MATERIALIZED (
            SELECT id, n, word_key, row_number() OVER (PARTITION BY id ORDER BY word_key) AS r
            FROM (SELECT id, n, hash(scope, category, subject, token) AS word_key
                  FROM (SELECT id, scope, category, subject, len(string_split({words}, ' ')) AS n,
                               unnest(string_split({words}, ' ')) AS token
                        FROM {source} WHERE {words} <> ''))
        ),
        prefix AS MATERIALIZED (
            SELECT * FROM ranked WHERE n >= 3 AND r <= n - ceil({INDEX_JACCARD} * n - 1e-9)::BIGINT + 3
        )
        SELECT id, word_key AS key FROM ranked WHERE n = 1
        UNION ALL
        SELECT a.id, xor(a.word_key, b.word_key) FROM ranked a JOIN ranked b ON a.id = b.id AND a.r < b.r
        WHERE a.n <= 3
        UNION ALL
        SELECT a.id, xor(xor(a.word_key, b.word_key), c.word_key)
        FROM prefix a JOIN prefix b ON a.id = b.id AND a.r < b.r JOIN prefix c ON b.id = c.id AND b.r < c.r
    )"""


def add(con: duckdb.DuckDBPyConnection, source: str, params: dict | None = None) -> None:
    """Index the `words` of each row of `source` that its `indexed` wording (already in the index) did not cover."""
    con.execute(
        f"""
        INSERT INTO belief_words
        WITH w AS MATERIALIZED (SELECT * FROM {source})
        SELECT n.key, n.id FROM {keys("w")} n ANTI JOIN {keys("w", "indexed")} o USING (id, key)""",
        params,
    )


_FINGERPRINT = "hash('distill', 'word index')::VARCHAR"  # changes when DuckDB's hash does


def rebuild(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("DELETE FROM belief_words")
    add(con, "(SELECT belief_id AS id, scope, category, subject, words, '' AS indexed FROM beliefs)")
    con.execute(f"INSERT OR REPLACE INTO store_meta VALUES ('word_index_hash', {_FINGERPRINT})")


def ensure_current(con: duckdb.DuckDBPyConnection) -> None:
    """Rebuild the index if it was keyed by another DuckDB version's hash."""
    current = con.execute(
        f"SELECT value IS NOT DISTINCT FROM {_FINGERPRINT} FROM (SELECT max(value) AS value FROM store_meta "
        "WHERE name = 'word_index_hash')"
    ).fetchone()[0]
    if not current:
        rebuild(con)


_CANDIDATES = {"id": "BIGINT", "scope": "VARCHAR", "category": "VARCHAR", "subject": "VARCHAR", "words": "VARCHAR",
               "sig": "VARCHAR"}
NEAR_SQL = f"""
WITH cand AS MATERIALIZED (SELECT * FROM {rows(_CANDIDATES)}),
probe AS MATERIALIZED {keys("cand")},
other AS MATERIALIZED (  -- fenced: joining on the group first would pair every candidate with its whole group
    SELECT s.id, b.belief_id AS ref, b.sig, b.words, b.scope, b.category, b.subject
    FROM (SELECT DISTINCT p.id, w.belief_id FROM probe p JOIN belief_words w USING (key)) s
    JOIN beliefs b ON b.belief_id = s.belief_id  -- archived ones too: new evidence revives them
    UNION ALL
    SELECT x.id, '#' || x.other, o.sig, o.words, o.scope, o.category, o.subject
    FROM (SELECT DISTINCT p.id, q.id AS other FROM probe p JOIN probe q USING (key) WHERE p.id <> q.id) x
    JOIN cand o ON o.id = x.other
),
alike AS MATERIALIZED (  -- fenced: Jaro-Winkler is ten times cheaper than the Jaccard, so it filters first
    SELECT o.id, o.ref, o.sig, c.words AS a, o.words AS b, jaro_winkler_similarity(c.words, o.words) AS jw
    FROM other o JOIN cand c USING (id)
    WHERE (o.scope, o.category, o.subject) = (c.scope, c.category, c.subject) AND jw >= $jaro_winkler
),
scored AS MATERIALIZED (  -- fenced: a filter pushed into the Jaccard's projection would compute it twice
    SELECT id, ref, sig, jw, token_jaccard(string_split(a, ' '), string_split(b, ' ')) AS jac FROM alike
)
SELECT * FROM scored WHERE jac >= $jaccard
"""
"""(candidate id, '#' + other candidate id or belief id, its sig, Jaro-Winkler, Jaccard) of every near duplicate
among the stored live beliefs and the batch's candidates, in the same group: `rows` packs _CANDIDATES."""
