"""The near-duplicate index: every content word of a belief's wording, and every pair of them, keyed within the
belief's (scope, category, subject) group, so candidates find their near duplicates by lookups instead of scans.

Keys are computed in SQL from `beliefs.words` (a word is md5 of group and word, a pair the xor of its two words),
which makes the index derivable from the beliefs alone: a migration rebuilds it whenever this definition changes,
and 20,000 wordings are indexed in one vectorized statement instead of half a million Python hash calls.
"""

from __future__ import annotations

import duckdb

from distiller.store.bulk import rows

_SOURCE = {"id": "VARCHAR", "scope": "VARCHAR", "category": "VARCHAR", "subject": "VARCHAR", "words": "VARCHAR",
           "indexed": "VARCHAR"}
SOURCE_ROWS = rows(_SOURCE)  # what add() indexes: each wording's words, and the wording `indexed` already covered


def tokens(source: str, words: str = "words") -> str:
    """(id, token, n, word_key) for each content word of each row of `source` (id, scope, category, subject, words)."""
    return f"""
        SELECT id, token, n, md5_number_lower(concat_ws(chr(31), scope, category, subject, token)) AS word_key
        FROM (SELECT id, scope, category, subject, len(string_split({words}, ' ')) AS n,
                     unnest(string_split({words}, ' ')) AS token
              FROM {source} WHERE {words} <> '')"""


def keys(token_rows: str) -> str:
    """(id, key): each word and each pair of words (order-free) of the wordings in `token_rows`."""
    return f"""
        SELECT id, word_key AS key FROM {token_rows}
        UNION ALL
        SELECT a.id, xor(a.word_key, b.word_key)
        FROM {token_rows} a JOIN {token_rows} b ON a.id = b.id AND a.token < b.token"""


def add(con: duckdb.DuckDBPyConnection, source: str, params: dict | None = None) -> None:
    """Index the `words` of each row of `source` that its `indexed` wording (already in the index) did not cover."""
    con.execute(
        f"""
        INSERT INTO belief_words
        WITH w AS MATERIALIZED (SELECT * FROM {source}),
        new_words AS MATERIALIZED ({tokens("w")}),
        old_words AS MATERIALIZED ({tokens("w", "indexed")})
        SELECT n.key, n.id FROM ({keys("new_words")}) n ANTI JOIN ({keys("old_words")}) o USING (id, key)""",
        params,
    )


def rebuild(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("DELETE FROM belief_words")
    add(con, "(SELECT belief_id AS id, scope, category, subject, words, '' AS indexed FROM beliefs)")


_CANDIDATES = {"id": "BIGINT", "scope": "VARCHAR", "category": "VARCHAR", "subject": "VARCHAR", "words": "VARCHAR",
               "sig": "VARCHAR"}
# Jaccard >= t needs at least a = ceil(t·n) shared words, so any n - a + k of a candidate's n words include k shared
# ones: with k = min(a, 3), every pair of those k (or the word itself, for k = 1) is a key the duplicate also holds,
# and requiring all k·(k-1)/2 of them drops most chance hits before any string is compared. Any choice of words is
# exact; the rarest in this batch keep the postings short.
NEAR_SQL = f"""
WITH cand AS MATERIALIZED (SELECT * FROM {rows(_CANDIDATES)}),
words AS MATERIALIZED ({tokens("cand")}),
ranked AS (
    SELECT *, least(greatest(shared, 1), 3) AS k, row_number() OVER (PARTITION BY id ORDER BY in_batch, token) AS r
    FROM (SELECT *, count(*) OVER (PARTITION BY word_key) AS in_batch, ceil($jaccard * n - 1e-9)::INTEGER AS shared
          FROM words)
),
chosen AS MATERIALIZED (SELECT * FROM ranked WHERE r <= n - shared + k),
probe AS (
    SELECT id, word_key AS key, 1 AS need FROM chosen WHERE k = 1
    UNION ALL
    SELECT a.id, xor(a.word_key, b.word_key), a.k * (a.k - 1) // 2
    FROM chosen a JOIN chosen b ON a.id = b.id AND a.r < b.r WHERE a.k > 1
),
stored AS MATERIALIZED (
    SELECT p.id, w.belief_id FROM probe p JOIN belief_words w USING (key)
    GROUP BY p.id, w.belief_id HAVING count(*) >= min(p.need)
),
batch AS MATERIALIZED (
    SELECT p.id, w.id AS other FROM probe p JOIN ({keys("words")}) w USING (key) WHERE w.id <> p.id
    GROUP BY p.id, w.id HAVING count(*) >= min(p.need)
),
other AS MATERIALIZED (  -- fenced: joining on the group first would pair every candidate with its whole group
    SELECT s.id, b.belief_id AS ref, b.sig, b.words, b.scope, b.category, b.subject
    FROM stored s JOIN beliefs b ON b.belief_id = s.belief_id WHERE b.status <> 'archived'
    UNION ALL
    SELECT x.id, '#' || x.other, o.sig, o.words, o.scope, o.category, o.subject
    FROM batch x JOIN cand o ON o.id = x.other
),
alike AS MATERIALIZED (  -- fenced: Jaro-Winkler is ten times cheaper than the Jaccard, so it filters first
    SELECT o.id, o.ref, o.sig, c.words AS a, o.words AS b, jaro_winkler_similarity(c.words, o.words) AS jw
    FROM other o JOIN cand c USING (id)
    WHERE (o.scope, o.category, o.subject) = (c.scope, c.category, c.subject) AND jw >= $jaro_winkler
)
SELECT id, ref, sig, jw, token_jaccard(string_split(a, ' '), string_split(b, ' ')) AS jac
FROM alike WHERE jac >= $jaccard
"""
"""(candidate id, '#' + other candidate id or belief id, its sig, Jaro-Winkler, Jaccard) of every near duplicate
among the stored live beliefs and the batch's candidates, in the same group: `rows` packs _CANDIDATES."""
