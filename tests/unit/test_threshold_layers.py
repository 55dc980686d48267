"""The threshold admits the question; the fused ranking then fills the context down to the
admitted floor (``agent.retrieval.ranking.apply_layers``)."""

from __future__ import annotations

import uuid

from agent.db.chunks import ScoredChunkId
from agent.retrieval.ranking import apply_layers
from agent.retrieval.types import SearchOptions

A, B, C, D = (uuid.uuid4() for _ in range(4))
# fused order A, B, C, D; only B clears 0.7, A (the fused best) is just under it
SCORED = [(A, 0.9), (B, 0.8), (C, 0.6), (D, 0.5)]
SIMILARITY = {A: 0.69, B: 0.71, C: 0.55, D: 0.35}
DENSE = [[ScoredChunkId(cid, SIMILARITY[cid]) for cid in (B, A, C, D)]]


def _layers(threshold: float, floor: float | None, keyword_failed: bool = False):
    return apply_layers(
        SCORED,
        SIMILARITY,
        DENSE,
        SearchOptions(threshold=threshold),
        low_threshold=0.3,
        keyword_failed=keyword_failed,
        admitted_floor=floor,
    )


def test_an_admitted_question_keeps_the_fused_best_just_under_the_threshold():
    layer, chunks = _layers(0.7, 0.5)
    assert layer == "hybrid"
    assert [c for c, _ in chunks] == [A, B, C]  # fused order, down to the 0.5 floor
    # without a floor the threshold filters every chunk: the fused best is lost
    assert [c for c, _ in _layers(0.7, None)[1]] == [B]
    # a floor above the threshold does not raise it
    assert [c for c, _ in _layers(0.5, 0.6)[1]] == [A, B, C]


def test_a_question_no_chunk_admits_still_falls_back_as_before():
    layer, chunks = _layers(0.8, 0.5)
    assert layer == "low_threshold"  # nothing >= 0.8: the 0.3 layer, not the floor
    assert [c for c, _ in chunks] == [A, B, C, D]
    # with the keyword side failed the dense ranking is admitted the same way
    layer, chunks = _layers(0.7, 0.5, keyword_failed=True)
    assert layer == "vector" and [c for c, _ in chunks] == [B, A, C]
