"""Adaptive score fusion: each side weighted per query by how decisively it ranks."""

from __future__ import annotations

import pytest

from agent.retrieval.fusion import adaptive_fusion, min_max, relative_drop, weighted_rrf


def test_relative_drop_and_min_max():
    assert relative_drop([10.0, 8.0, 5.0, 2.5], depth=4) == pytest.approx(0.75)
    assert relative_drop([10.0, 8.0, 5.0, 2.5], depth=2) == pytest.approx(0.2)
    assert relative_drop([0.61, 0.60, 0.60], depth=10) == pytest.approx(0.01 / 0.61)
    assert relative_drop([3.0], depth=10) == 0.0 and relative_drop([], depth=10) == 0.0
    assert min_max([4.0, 2.0, 0.0]) == [1.0, 0.5, 0.0] and min_max([2.0, 2.0]) == [1.0, 1.0]


def _flat(prefix: str, n: int = 10, top: float = 0.62) -> list[tuple[str, float]]:
    return [(f"{prefix}{i}", top - 0.002 * i) for i in range(n)]


def test_a_standout_keyword_match_outweighs_a_flat_dense_list():
    dense = _flat("d")  # the vectors cannot tell their hits apart
    keyword = [("exact", 24.0)] + [(f"k{i}", 6.0 - 0.1 * i) for i in range(9)]
    fused = adaptive_fusion([(0.5, [dense]), (0.5, [keyword])])
    assert fused[0][0] == "exact"
    # weighted RRF with equal weights ranks the dense list's top hit level with it
    rrf = dict(weighted_rrf([[i for i, _ in dense], [i for i, _ in keyword]], [0.5, 0.5]))
    assert rrf["d0"] == rrf["exact"]


def test_a_decisive_dense_list_outweighs_a_flat_keyword_list():
    dense = [("para", 0.81)] + [(f"d{i}", 0.45 - 0.01 * i) for i in range(9)]
    keyword = [(f"k{i}", 7.0 - 0.05 * i) for i in range(10)]
    fused = adaptive_fusion([(0.5, [dense]), (0.5, [keyword])])
    assert fused[0][0] == "para"
    assert dict(fused)["para"] > dict(fused)["k0"]


def test_a_side_keeps_at_least_its_minimum_share():
    dense = [("a", 0.9), ("b", 0.1)]  # drop 0.89
    keyword = [("c", 5.0), ("b", 4.999)]  # drop ~0
    fused = dict(adaptive_fusion([(0.5, [dense]), (0.5, [keyword])], min_share=0.2))
    assert fused["a"] == pytest.approx(0.8)  # dense capped at 1 - 0.2
    assert fused["c"] == pytest.approx(0.2)  # keyword keeps 0.2
    assert fused["b"] == pytest.approx(0.0)


def test_several_lists_per_side_are_averaged_and_ties_keep_first_seen_order():
    one, two = [("x", 2.0), ("y", 1.0)], [("y", 2.0), ("x", 1.0)]
    fused = adaptive_fusion([(1.0, [one, two])])
    assert fused == [("x", 0.5), ("y", 0.5)]
    assert adaptive_fusion([(0.5, []), (0.5, [[]])]) == []


def test_an_exhausted_list_keeps_near_ties_near_equal():
    # two near-equal hits, all the library has: min-max alone would make them 1 and 0
    few = [("new", 5.0), ("old", 4.9)]
    assert min_max([5.0, 4.9], floor=0.0) == pytest.approx([1.0, 0.98])
    assert min_max([5.0, 4.9], floor=6.0) == pytest.approx([1.0, 0.0])  # floor above min: unused
    fused = dict(adaptive_fusion([(1.0, [few])], full_length=40))
    assert fused["old"] == pytest.approx(0.98)
    full = [(f"d{i}", 5.0 - 0.1 * i) for i in range(40)]  # as deep as asked: own floor
    assert dict(adaptive_fusion([(1.0, [full])], full_length=40))["d39"] == 0.0


def test_mmr_takes_the_next_best_passage_unless_it_repeats_the_first():
    import numpy as np

    from agent.retrieval.diversity import mmr_order

    # RRF-like scores of 8 candidates span ~0.002: scaled by the maximum alone, the last
    # one (unlike the first) beat the second (a little like it) on redundancy alone
    scores = [1 / (61 + i) for i in range(8)]
    angles = [0.0, np.arccos(0.3)] + [np.arccos(0.2)] * 5 + [np.pi / 2]
    vectors = np.array([[np.cos(a), np.sin(a)] for a in angles])
    assert mmr_order(scores, vectors, 2, lambda_mult=0.5) == [0, 1]
    # a second passage that repeats the first still gives way
    repeats = np.array([[1.0, 0.0], [1.0, 0.0], [0.3, 0.954]])
    assert mmr_order([3.0, 2.9, 2.8], repeats, 2, lambda_mult=0.5) == [0, 2]
    assert mmr_order([0.4, 0.4], repeats[:2], 2, lambda_mult=0.5) == [0, 1]  # equal scores
