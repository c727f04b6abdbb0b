"""Which beliefs a recall shows, in three tiers, read in a few SQL statements and never written back.

- core: identity, goals and preferences the store holds as active (explicit and confident, or seen in two
  sessions) with confidence ≥ 0.7, most important first;
- active: the live beliefs with the highest activation (ACT-R over their evidence times, on the transcripts' own
  clock: store/clock.py), so what the user talks about lately;
- recalled: BM25 over the beliefs' terms (store/terms.py) for the prompt, the statement's terms counting in full
  and the quotes' at half weight (BM25F), ties broken by activation.

Only live beliefs (active or provisional) of the scope are read: superseded, archived, flagged and forgotten ones
never appear. A belief shown in an earlier tier, or saying the same as one (the same normalised statement, as an
agent-scoped and a global copy may), is left out of the later ones. Reading is all recall does: no evidence, no
activation, no date is written, so what the agents are shown never strengthens itself.
"""

from __future__ import annotations

from datetime import datetime

import duckdb

from distiller.recall.lines import (
    BM25_B,
    BM25_K1,
    CORE_CATEGORIES,
    CORE_CONFIDENCE,
    LIVE,
    QUOTE_WEIGHT,
    SCORE_DECIMALS,
    Evidence,
    Found,
    Limits,
    Line,
    dedupe,
)
from distiller.store.activation import Decay, activation_params, activation_sql, clock_join
from distiller.store.bulk import pack, rows
from distiller.terms import terms

# BM25F's weighted count of a term row (alias t) and a belief's weighted length (belief_lengths, alias l)
WEIGHTED_TF = f"CASE WHEN t.session_id = '' THEN t.tf ELSE {QUOTE_WEIGHT} * t.tf END"
LENGTH = f"coalesce(l.statement, 0) + {QUOTE_WEIGHT} * coalesce(l.quotes, 0)"


def _scope(agent: str | None) -> tuple[str, dict[str, object]]:
    if agent is None:
        return "", {}
    return " AND b.scope IN ('global', $agent_scope)", {"agent_scope": f"agent:{agent}"}


def live_cte(agent: str | None) -> tuple[str, dict[str, object]]:
    """The live beliefs of the scope with their activation, as the CTE `live`."""
    where, params = _scope(agent)
    return f"""live AS MATERIALIZED (
        SELECT b.belief_id, b.scope, b.statement, b.category, b.confidence, b.status, b.importance, a.activation
        FROM beliefs b JOIN (
            SELECT e.belief_id, {activation_sql()} AS activation
            FROM evidence e JOIN beliefs b USING (belief_id) {clock_join()}
            WHERE b.status IN {LIVE}{where} GROUP BY e.belief_id) a USING (belief_id)
        WHERE b.status IN {LIVE}{where})""", params


def _bm25() -> str:
    """Scores of the live beliefs matching the query terms (`$q`), as the CTE `matched`.

    The collection statistics (the number of beliefs, their average length, each term's document frequency) are
    the whole store's, as a search engine's are its index's whatever the filter: they then cost a scan of the
    query terms' rows and a sum over the lengths, not a pass over every live belief's terms."""
    weighted, length = WEIGHTED_TF, LENGTH
    return f"""q AS (SELECT * FROM {rows({'term': 'VARCHAR', 'qtf': 'INTEGER'}, 'q')}),
    stats AS (SELECT greatest(count(*), 1) AS n, greatest(sum({length}), 1) / greatest(count(*), 1) AS avgdl
              FROM belief_lengths l),
    postings AS (SELECT t.* FROM belief_terms t WHERE t.term IN (SELECT term FROM q)),
    df AS (SELECT term, count(DISTINCT belief_id) AS df FROM postings GROUP BY term),
    hits AS (SELECT t.belief_id, t.term, sum({weighted}) AS tf FROM postings t SEMI JOIN live USING (belief_id)
             GROUP BY t.belief_id, t.term),
    matched AS (
        SELECT h.belief_id,
               sum(q.qtf * ln(1 + (s.n - df.df + 0.5) / (df.df + 0.5))
                   * h.tf * ({BM25_K1} + 1)
                   / (h.tf + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * ({length}) / s.avgdl))) AS score
        FROM hits h JOIN q USING (term) JOIN df USING (term) JOIN belief_lengths l USING (belief_id)
        CROSS JOIN stats s
        GROUP BY h.belief_id)"""


def select(con: duckdb.DuckDBPyConnection, prompt: str, *, agent: str | None = None, limits: Limits = Limits(),
           settings: Decay | None = None, now: datetime) -> list[Line]:
    """The lines of a recall, tier by tier, each tier strongest first, duplicates of earlier lines left out
    (`settings`: the store's decay rates, if not the defaults)."""
    live, params = live_cte(agent)
    params |= activation_params(settings, now)
    # Each tier reads enough rows to fill its limit after the earlier tiers' lines are left out of it.
    core_order = "importance DESC, confidence DESC, activation DESC, belief_id"
    # Each part takes its first rows (a top-N, not a sort of every live belief), then numbers them.
    parts = [f"""(SELECT 'core' AS tier, belief_id, category, statement, confidence, confidence AS score,
                        row_number() OVER (ORDER BY {core_order}) AS rank
                 FROM (SELECT * FROM live WHERE status = 'active' AND category IN {CORE_CATEGORIES}
                       AND confidence >= {CORE_CONFIDENCE} ORDER BY {core_order} LIMIT {int(limits.core)}))""",
             f"""(SELECT 'active', belief_id, category, statement, confidence, activation,
                        row_number() OVER (ORDER BY activation DESC, belief_id)
                 FROM (SELECT * FROM live ORDER BY activation DESC, belief_id
                       LIMIT {int(limits.core) + int(limits.active)}))"""]
    query = terms(prompt)
    ctes = [live]
    if query and limits.recalled > 0:
        ctes.append(_bm25())
        params["q"] = pack(term=list(query), qtf=list(query.values()))
        order = f"round(score, {SCORE_DECIMALS}) DESC, activation DESC, belief_id"
        parts.append(f"""(SELECT 'recalled', belief_id, category, statement, confidence, score,
                                row_number() OVER (ORDER BY {order})
                         FROM (SELECT l.*, m.score FROM matched m JOIN live l USING (belief_id) ORDER BY {order}
                               LIMIT {int(limits.core) + int(limits.active) + int(limits.recalled)}))""")
    found = con.execute(f"WITH {', '.join(ctes)} " + " UNION ALL ".join(parts), params).fetchall()
    chosen = dedupe(found, limits)
    return _with_evidence(con, chosen)


def _with_evidence(con: duckdb.DuckDBPyConnection, chosen: list[Found]) -> list[Line]:
    if not chosen:
        return []
    ids = [row[1] for row in chosen]
    evidence: dict[str, list[Evidence]] = {}
    for belief_id, session_id, message_id in con.execute(
            f"SELECT belief_id, session_id, message_id FROM evidence SEMI JOIN {rows({'belief_id': 'VARCHAR'})} i "
            "USING (belief_id) ORDER BY ts, session_id, message_id", {"rows": pack(belief_id=ids)}).fetchall():
        evidence.setdefault(belief_id, []).append(Evidence(session_id, message_id))
    return [Line(row[1], row[0], row[2], row[3], row[4], float(row[5]), tuple(evidence.get(row[1], ())))
            for row in chosen]
