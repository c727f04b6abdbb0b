"""The near-duplicate index's keys: every pair of wordings at or above the Jaccard floor shares one, few others do."""

from __future__ import annotations

import random
from itertools import combinations

import pytest

from distiller.errors import DistillError
from distiller.store import beliefs as store
from distiller.store import word_index
from distiller.store.bulk import pack
from distiller.store.db import connect


def keys_of(con, wordings: list[tuple[str, ...]], group: str = "preference") -> dict[int, set[int]]:
    found: dict[int, set[int]] = {i: set() for i in range(len(wordings))}
    source = word_index.SOURCE_ROWS
    for i, key in con.execute(
        f"SELECT id::BIGINT, key FROM {word_index.keys(source)}",
        {"rows": pack(id=[str(i) for i in range(len(wordings))], scope=["agent:main"] * len(wordings),
                      category=[group] * len(wordings), subject=["user"] * len(wordings),
                      words=[" ".join(w) for w in wordings], indexed=[""] * len(wordings))},
    ).fetchall():
        found[i].add(key)
    return found


def jaccard(a: tuple[str, ...], b: tuple[str, ...]) -> float:
    return len(set(a) & set(b)) / len(set(a) | set(b))


def test_every_pair_at_or_above_the_floor_shares_a_key_and_most_pairs_below_do_not(tmp_path):
    rng = random.Random(7)
    vocabulary = [f"w{i}" for i in range(14)]  # small, so that many pairs are near and many just miss
    wordings = [tuple(rng.sample(vocabulary, rng.randint(1, 12))) for _ in range(400)]
    with connect(tmp_path / "d.duckdb") as con:
        keys = keys_of(con, wordings)
    near = shared = far_sharing = far = 0
    for i, j in combinations(range(len(wordings)), 2):
        share = bool(keys[i] & keys[j])
        if jaccard(wordings[i], wordings[j]) >= word_index.INDEX_JACCARD:
            near += 1
            shared += share
        else:
            far += 1
            far_sharing += share
    assert near > 1000 and shared == near
    assert far_sharing < far / 3  # sharing any word, as a word index would, is nearly all of them


@pytest.mark.parametrize(("n", "expected"), [(1, 1), (2, 1), (3, 3 + 1), (4, 4), (6, 10), (10, 35)])
def test_a_wording_of_n_words_gets_the_words_pairs_or_prefix_triples_it_needs(tmp_path, n, expected):
    with connect(tmp_path / "d.duckdb") as con:
        assert len(keys_of(con, [tuple(f"w{i}" for i in range(n))])[0]) == expected


def test_the_same_words_in_another_category_share_no_key(tmp_path):
    with connect(tmp_path / "d.duckdb") as con:
        words = ("like", "green", "tea", "morning")
        assert not keys_of(con, [words])[0] & keys_of(con, [words], "goal")[0]


def test_a_threshold_below_what_the_index_serves_is_refused():
    with pytest.raises(DistillError, match="near_jaccard"):
        store.StoreSettings(near_jaccard=word_index.INDEX_JACCARD - 0.1)
