"""The near-duplicate index: every content word of a belief's wording, and every pair of them, keyed within the
belief's (scope, category, subject) group, so candidates find their near duplicates by lookups instead of scans.

Keys are computed in SQL from `beliefs.words` (a word is md5 of group and word, a pair the xor of its two words),
which makes the index derivable from the beliefs alone: a migration rebuilds it whenever this definition changes.
`belief_word_df` counts the wordings holding each word, so a candidate probes with its rarest words; it only steers
the choice (any choice is exact), so forgetting never decrements it.
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


def _new_words(source: str) -> str:
    return f"""
        WITH w AS MATERIALIZED (SELECT * FROM {source}),
        new_words AS MATERIALIZED ({tokens("w")}),
        old_words AS MATERIALIZED ({tokens("w", "indexed")})"""


def add(con: duckdb.DuckDBPyConnection, source: str, params: dict | None = None) -> None:
    """Index the `words` of each row of `source` that its `indexed` wording (already in the index) did not cover."""
    con.execute(
        f"""
        INSERT INTO belief_words {_new_words(source)}
        SELECT n.key, n.id FROM ({keys("new_words")}) n ANTI JOIN ({keys("old_words")}) o USING (id, key)""",
        params,
    )
    con.execute(
        f"""
        INSERT INTO belief_word_df {_new_words(source)}
        SELECT n.word_key, count(*) FROM new_words n ANTI JOIN old_words o USING (id, word_key) GROUP BY n.word_key
        ON CONFLICT (key) DO UPDATE SET df = df + excluded.df""",
        params,
    )


def rebuild(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("DELETE FROM belief_words")
    con.execute("DELETE FROM belief_word_df")
    add(con, "(SELECT belief_id AS id, scope, category, subject, words, '' AS indexed FROM beliefs)")


_CANDIDATES = {"id": "BIGINT", "scope": "VARCHAR", "category": "VARCHAR", "subject": "VARCHAR", "words": "VARCHAR",
               "sig": "VARCHAR"}
# Jaccard >= t needs at least a = ceil(t·n) shared words, so any n - a + 2 of a candidate's n words include two
# shared ones, whose pair the duplicate's index also holds (for a = 1, any n - a + 1 words include one shared word).
# Any choice is exact; choosing the rarest words, in the stored beliefs and in this batch, keeps the postings short.
NEAR_SQL = f"""
WITH cand AS MATERIALIZED (SELECT * FROM {rows(_CANDIDATES)}),
words AS MATERIALIZED ({tokens("cand")}),
counted AS (SELECT *, count(*) OVER (PARTITION BY word_key) AS in_batch FROM words),
ranked AS (
    SELECT c.id, c.word_key, c.n, ceil($jaccard * c.n - 1e-9)::INTEGER AS shared,
           row_number() OVER (PARTITION BY c.id ORDER BY coalesce(d.df, 0) + c.in_batch, c.token) AS r
    FROM counted c LEFT JOIN belief_word_df d ON d.key = c.word_key
),
chosen AS MATERIALIZED (SELECT * FROM ranked WHERE r <= n - shared + CASE WHEN shared <= 1 THEN 1 ELSE 2 END),
probe AS (
    SELECT id, word_key AS key FROM chosen WHERE shared <= 1
    UNION ALL
    SELECT a.id, xor(a.word_key, b.word_key) FROM chosen a JOIN chosen b ON a.id = b.id AND a.r < b.r
    WHERE a.shared > 1
),
stored AS MATERIALIZED (SELECT DISTINCT p.id, w.belief_id FROM probe p JOIN belief_words w USING (key)),
batch AS MATERIALIZED (
    SELECT DISTINCT p.id, w.id AS other FROM probe p JOIN ({keys("words")}) w USING (key) WHERE w.id <> p.id
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
