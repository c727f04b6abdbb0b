"""Near duplicates: each candidate compared with the stored beliefs of its own (scope, category, subject) group and
with the batch's other candidates of that group, Jaro-Winkler on the content words first (ten times cheaper), then
their word-level Jaccard.

Only pairs that agree on numbers and dates (a statement's sig up to its last `|`: `keys.normalize`) are compared:
the store uses a pair only to merge (the same sig) or to flag a contradiction (the same numbers and dates, the
opposite polarity), so no other pair can change a decision. Without that fence a session stating one kind of fact
with a different number each time ("I live near crossing 1", "… 2", …) compared every statement with every earlier
one: 72,000 messages made millions of pairs and took 16 minutes (tests/bench/bench_one_session.py).

A plain comparison is enough at this store's sizes: tests/bench/bench_near.py measured it against the
set-similarity index it replaced (m020 drops that index's table).
"""

from __future__ import annotations

from distiller.store.bulk import rows

# A sig's numbers and dates: all of it up to its last "|" (what keys.polarity_only compares).
FACTS = "regexp_extract({sig}, '^(.*)\\|[^|]*$', 1)"
_CANDIDATES = {"id": "BIGINT", "scope": "VARCHAR", "category": "VARCHAR", "subject": "VARCHAR", "words": "VARCHAR",
               "sig": "VARCHAR"}
NEAR_SQL = f"""
WITH cand AS MATERIALIZED (
    SELECT *, len(string_split(words, ' ')) AS n, {FACTS.format(sig="sig")} AS facts FROM {rows(_CANDIDATES)}
),
stored AS MATERIALIZED (
    SELECT b.belief_id, b.sig, b.words, b.scope, b.category, b.subject, len(string_split(b.words, ' ')) AS n,
           {FACTS.format(sig="b.sig")} AS facts
    FROM beliefs b SEMI JOIN cand USING (scope, category, subject)  -- archived ones too: new evidence revives them
    WHERE b.words <> ''
),
other AS MATERIALIZED (  -- a Jaccard of t needs the smaller word count to be at least t times the larger
    SELECT c.id, b.belief_id AS ref, b.sig, c.words AS a, b.words AS b
    FROM cand c JOIN stored b USING (scope, category, subject, facts)
    WHERE b.n * $jaccard <= c.n + 1e-9 AND c.n * $jaccard <= b.n + 1e-9
    UNION ALL
    SELECT c.id, '#' || o.id, o.sig, c.words, o.words
    FROM cand c JOIN cand o USING (scope, category, subject, facts)
    WHERE c.id <> o.id AND o.n * $jaccard <= c.n + 1e-9 AND c.n * $jaccard <= o.n + 1e-9
),
alike AS MATERIALIZED (  -- fenced: Jaro-Winkler is ten times cheaper than the Jaccard, so it filters first
    -- (not its score_cutoff form: that returns 0 for a score exactly at the cutoff)
    SELECT id, ref, sig, a, b, jaro_winkler_similarity(a, b) AS jw FROM other WHERE jw >= $jaro_winkler
),
scored AS MATERIALIZED (  -- fenced: a filter pushed into the Jaccard's projection would compute it twice
    SELECT id, ref, sig, jw, token_jaccard(string_split(a, ' '), string_split(b, ' ')) AS jac FROM alike
)
SELECT * FROM scored WHERE jac >= $jaccard
"""
"""(candidate id, other candidate '#' + id or belief id, its sig, Jaro-Winkler, Jaccard) of every near duplicate
among the stored beliefs and the batch's candidates, in the same group and with the same numbers and dates: `rows`
packs _CANDIDATES."""
