"""Near duplicates: the store's lookup (store/near.py) finds exactly the pairs the plain definition names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from distiller.errors import DistillError
from distiller.store import near
from distiller.store import writes as store
from distiller.store.bulk import pack, rows
from distiller.store.db import connect

GROUPS = [("agent:main", "preference", "user"), ("agent:main", "fact", "user"), ("global", "preference", "user")]
# Few, alike words: many pairs near either threshold, and Jaro-Winkler high for wordings of different words.
WORDS = ["tea", "teas", "team", "green", "greet", "morning", "mornings", "dark", "mode", "editor", "edit", "x"]
SIGS = ["||", "2||", "||neg", "2||neg", "2|monday|"]

wording = st.lists(st.sampled_from(WORDS), min_size=0, max_size=7, unique=True).map(" ".join)
entry = st.tuples(st.sampled_from(range(len(GROUPS))), wording, st.sampled_from(SIGS))


def definition(con, stored: list[tuple], cands: list[tuple], jw_floor: float, jac_floor: float) -> list[tuple]:
    """Every (candidate, other) of one group, other a stored belief or another candidate, that agree on numbers and
    dates (the sig up to its last "|") and whose content words reach both thresholds: Jaro-Winkler on the joined
    words, Jaccard on the word sets. Nothing skipped, nothing fenced."""
    pairs = []
    for i, (group, words, _) in enumerate(cands):
        others = [(f"b{k}", s) for k, s in enumerate(stored) if s[1]] + [
            (f"#{j}", c) for j, c in enumerate(cands) if j != i]
        facts = cands[i][2].rsplit("|", 1)[0]
        pairs += [(i, ref, o[2], words, o[1]) for ref, o in others
                  if o[0] == group and words and o[2].rsplit("|", 1)[0] == facts]
    if not pairs:
        return []
    jws = [row[0] for row in con.execute(
        "SELECT jaro_winkler_similarity(a, b) FROM (SELECT unnest($a) AS a, unnest($b) AS b)",
        {"a": [p[3] for p in pairs], "b": [p[4] for p in pairs]}).fetchall()]
    found = []
    for (i, ref, sig, a, b), jw in zip(pairs, jws, strict=True):
        x, y = a.split(), b.split()
        jac = len(set(x) & set(y)) / max(len(x) + len(y) - len(set(x) & set(y)), 1)
        if jw >= jw_floor and jac >= jac_floor:
            found.append((i, ref, sig, jw, jac))
    return sorted(found)


@pytest.mark.slow  # hundreds of generated examples; CI runs it with the other slow tests
def test_the_lookup_finds_exactly_the_pairs_of_the_plain_definition(tmp_path):
    with connect(tmp_path / "d.duckdb") as con:

        @hypothesis_settings(max_examples=200, deadline=None)
        @given(stored=st.lists(entry, max_size=25), cands=st.lists(entry, min_size=1, max_size=12),
               jw_floor=st.sampled_from([0.5, 0.7, 0.88, 0.95]),
               jac_floor=st.sampled_from([0.3, 0.5, 0.6, 0.8, 1.0]))
        def check(stored, cands, jw_floor, jac_floor):
            con.execute("DELETE FROM beliefs")
            con.execute(
                f"""INSERT INTO beliefs SELECT id, words, words, sig, category, scope, subject, '', 0.9, 'explicit',
                    5, 'medium', 'active', NULL, NULL, NULL, NULL, NULL, 1, 1, now(), now(), now(), now(), 'r',
                    'rules', NULL, 'p'
                    FROM {rows({k: 'VARCHAR' for k in ('id', 'words', 'sig', 'scope', 'category', 'subject')})}""",
                {"rows": pack(id=[f"b{k}" for k in range(len(stored))], words=[s[1] for s in stored],
                              sig=[s[2] for s in stored], scope=[GROUPS[s[0]][0] for s in stored],
                              category=[GROUPS[s[0]][1] for s in stored],
                              subject=[GROUPS[s[0]][2] for s in stored])})
            found = con.execute(near.NEAR_SQL, {
                "rows": pack(id=list(range(len(cands))), scope=[GROUPS[c[0]][0] for c in cands],
                             category=[GROUPS[c[0]][1] for c in cands], subject=[GROUPS[c[0]][2] for c in cands],
                             words=[c[1] for c in cands], sig=[c[2] for c in cands]),
                "jaro_winkler": jw_floor, "jaccard": jac_floor}).fetchall()
            # Candidates without content words never look for near duplicates (the store skips them).
            assert sorted(row for row in found if cands[row[0]][1]) == definition(con, stored, cands, jw_floor,
                                                                                  jac_floor)

        check()


@pytest.mark.parametrize("name", ["near_jaro_winkler", "near_jaccard"])
def test_a_threshold_outside_zero_to_one_is_refused(name):
    with pytest.raises(DistillError, match=name):
        store.StoreSettings(**{name: 1.5})
