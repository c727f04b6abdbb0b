"""The near-duplicate index: every content word of a belief's wording, and every pair of them, keyed within the
belief's (scope, category, subject) group, so candidates find their near duplicates by lookups instead of scans.

Keys are computed in SQL from `beliefs.words` (a word is md5 of group and word, a pair the xor of its two words),
which makes the index derivable from the beliefs alone: a migration rebuilds it whenever this definition changes,
and 20,000 wordings are indexed in one vectorized statement instead of half a million Python hash calls.
"""

from __future__ import annotations

import duckdb


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


def add_sql(source: str) -> str:
    """Index the `words` of each row of `source` that its `indexed` wording (already in the index) did not cover."""
    return f"""
        INSERT INTO belief_words
        WITH w AS MATERIALIZED (SELECT * FROM {source}),
        new_words AS MATERIALIZED ({tokens("w")}),
        old_words AS MATERIALIZED ({tokens("w", "indexed")})
        SELECT n.key, n.id FROM ({keys("new_words")}) n ANTI JOIN ({keys("old_words")}) o USING (id, key)"""


def rebuild(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("DELETE FROM belief_words")
    con.execute(add_sql("(SELECT belief_id AS id, scope, category, subject, words, '' AS indexed FROM beliefs)"))
