"""MaxScore against Okapi BM25 computed for every row."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agent.db.keyword_sql import BM25Params
from agent.retrieval import bm25_kernels
from agent.retrieval.maxscore import MaxScoreScratch, compile_kernels, maxscore_top_k

BM25 = BM25Params()


def _factors(tf, lengths, avgdl):
    tf = tf.astype(np.float64)
    return tf * (BM25.k1 + 1) / (tf + BM25.k1 * (1 - BM25.b + BM25.b * lengths / avgdl))


def _term_lists(seed: int, n_rows: int, shares: list[float]):
    """Random row-sorted postings for terms found in ``shares`` of the rows; a few rows
    repeat a word, as real answers do."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(3, 60, n_rows).astype(np.float32)
    avgdl = float(tokens.mean())
    lists = []
    for share in shares:
        rows = np.flatnonzero(rng.random(n_rows) < share).astype(np.int32)
        tf = np.where(rng.random(len(rows)) < 0.05, rng.integers(2, 9, len(rows)), 1)
        tf = tf.astype(np.int32)
        idf = math.log(1 + (n_rows - len(rows) + 0.5) / (len(rows) + 0.5))
        bound = idf * float(_factors(tf, tokens[rows], avgdl).max()) if len(rows) else 0.0
        lists.append((bound, idf, rows, tf))
    lists.sort(key=lambda t: -t[0])
    return tokens, avgdl, [t for t in lists if len(t[2])]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("k", [1, 10, 40])
def test_maxscore_equals_every_row_scored(seed, k):
    shares = [0.0005, 0.003, 0.05, 0.4, 0.9, 0.6][: 2 + seed % 5]
    tokens, avgdl, lists = _term_lists(seed, 20_000, shares)
    expected = np.zeros(len(tokens))
    for _, idf, rows, tf in lists:
        expected[rows] += idf * _factors(tf, tokens[rows], avgdl)
    kth = np.sort(expected)[::-1][k - 1]
    want = np.flatnonzero((expected >= kth) & (expected > 0))  # ties at the edge kept
    rows, scores = maxscore_top_k(lists, tokens, avgdl, BM25, k)
    assert set(rows.tolist()) == set(want.tolist())
    assert scores == pytest.approx(expected[rows])


def test_fewer_matches_than_k_are_all_returned():
    tokens = np.full(5_000, 10.0, dtype=np.float32)
    rows = np.array([3, 70, 900], dtype=np.int32)
    tf = np.array([1, 2, 1], np.int32)
    lists = [(3.0, 2.0, rows, tf)]
    found, scores = maxscore_top_k(lists, tokens, 10.0, BM25, 10)
    assert found.tolist() == [3, 70, 900] and scores.argmax() == 1


def test_a_reused_scratch_is_left_zeroed_and_gives_the_same_top_k():
    """The reader's scratch arrays are reused from question to question: they must come back
    zeroed, and results must not depend on them (several terms scored in full included)."""
    scratch = MaxScoreScratch.for_rows(25_000)
    for seed in range(12):
        shares = [0.0005, 0.003, 0.05, 0.4, 0.9, 0.6][: 1 + seed % 6]
        tokens, avgdl, lists = _term_lists(seed, 20_000, shares)
        fresh = maxscore_top_k(lists, tokens, avgdl, BM25, 10)
        reused = maxscore_top_k(lists, tokens, avgdl, BM25, 10, scratch)
        assert np.array_equal(np.sort(fresh[0]), np.sort(reused[0]))
        assert np.allclose(fresh[1][np.argsort(fresh[0])], reused[1][np.argsort(reused[0])])
        assert not scratch.scores.any() and not scratch.positions.any()


@pytest.mark.parametrize("seed", range(6))
def test_only_common_terms_are_exact(seed):
    """Questions made only of common words (every term in a large share of the rows): the
    scored rows cover much of the library, and the terms left are looked up by one marked
    pass over their postings."""
    shares = [0.3, 0.45, 0.6, 0.7, 0.8][: 3 + seed % 3]
    tokens, avgdl, lists = _term_lists(100 + seed, 30_000, shares)
    expected = np.zeros(len(tokens))
    for _, idf, rows, tf in lists:
        expected[rows] += idf * _factors(tf, tokens[rows], avgdl)
    for k in (1, 40):
        kth = np.sort(expected)[::-1][k - 1]
        rows, scores = maxscore_top_k(lists, tokens, avgdl, BM25, k)
        assert set(rows.tolist()) == set(np.flatnonzero(expected >= kth).tolist())
        assert scores == pytest.approx(expected[rows])


@pytest.mark.parametrize("seed", range(4))
def test_scores_are_numpys_to_the_last_bit(seed):
    """The compiled loops do numpy's arithmetic in numpy's order (the memory copy and the
    SQL path agree on ties): every returned score equals the array computation exactly."""
    tokens, avgdl, lists = _term_lists(200 + seed, 20_000, [0.002, 0.05, 0.5, 0.8])
    c0, c1 = BM25.k1 * (1 - BM25.b), BM25.k1 * BM25.b / avgdl
    expected = np.zeros(len(tokens))
    for _, idf, rows, tf in lists:  # in the order MaxScore adds them
        den = tokens[rows].astype(np.float64) * c1 + c0 + tf.astype(np.float64)
        expected[rows] += tf.astype(np.float64) / den * (idf * (BM25.k1 + 1))
    rows, scores = maxscore_top_k(lists, tokens, avgdl, BM25, 40)
    assert len(rows) >= 40 and np.array_equal(scores, expected[rows])


def test_kernels_are_compiled_for_the_copys_arrays():
    """compile_kernels() readies the loops for the reader's types (int32 rows, float32 term
    frequencies and lengths): a server's first question does not wait for numba."""
    compile_kernels()
    arrays = [tuple(str(a.dtype) for a in sig[1:4]) for sig in bm25_kernels.add_term.signatures]
    assert ("int32", "float32", "float32") in arrays
    for kernel in (bm25_kernels.best_rows, bm25_kernels.add_term_at, bm25_kernels.take_reaching):
        assert kernel.signatures


def test_kernels_compile_where_numba_cannot_cache():
    """Where numba finds no writable cache location (here: a function with no source file)
    the loops are still compiled, just not cached."""
    namespace: dict = {}
    exec("def twice(x):\n    return 2 * x", namespace)
    assert bm25_kernels.compiled(namespace["twice"])(21) == 42


def test_the_row_at_the_kth_score_stays_when_the_bounds_do_not_add_up_exactly():
    """Three terms whose bounds, summed then taken off one by one, leave -1e-15 (not 0):
    scored in full (fewer than ``k`` rows match the first two), the k-th best row must
    still reach the floor ``kth - remaining``."""
    bounds = [3.944, 4.753, 0.654]
    assert sum(bounds) - bounds[0] - bounds[1] - bounds[2] < 0  # the residue this is about
    tokens = np.full(10, 10.0, dtype=np.float32)
    one = np.ones(3, np.int32)
    lists = [
        (bounds[0], 1.5, np.array([0, 1, 2], np.int32), one),
        (bounds[1], 2.0, np.array([3, 4, 5], np.int32), one),
        (bounds[2], 0.3, np.array([6, 7, 8], np.int32), np.array([3, 2, 1], np.int32)),
    ]
    rows, _ = maxscore_top_k(lists, tokens, 10.0, BM25, 7)
    assert sorted(rows.tolist()) == [0, 1, 2, 3, 4, 5, 6]
