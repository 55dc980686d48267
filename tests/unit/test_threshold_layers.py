"""With an admitted floor the threshold admits the question and the fused ranking fills the
results down to the floor; without one it filters every chunk
(``agent.retrieval.ranking.apply_layers``, ``agent.chat.retrieval_step._search_options``)."""

from __future__ import annotations

import uuid

from agent.chat.retrieval_step import _search_options
from agent.config import Settings
from agent.db.chunks import ScoredChunkId
from agent.retrieval.ranking import apply_layers
from agent.retrieval.types import SearchOptions

A, B, C, D = (uuid.uuid4() for _ in range(4))
# fused order A, B, C, D; only B clears 0.7, A (the fused best) is just under it
SCORED = [(A, 0.9), (B, 0.8), (C, 0.6), (D, 0.5)]
SIMILARITY = {A: 0.69, B: 0.71, C: 0.55, D: 0.35}
DENSE = [[ScoredChunkId(cid, SIMILARITY[cid]) for cid in (B, A, C, D)]]


def _ids(threshold: float, floor: float | None, keyword_failed: bool = False):
    layer, chunks = apply_layers(
        SCORED,
        SIMILARITY,
        DENSE,
        SearchOptions(threshold=threshold, admitted_floor=floor),
        low_threshold=0.3,
        keyword_failed=keyword_failed,
    )
    return layer, [c for c, _ in chunks]


def test_an_admitted_question_is_filled_from_the_fused_ranking_down_to_the_floor():
    assert _ids(0.7, 0.5) == ("hybrid", [A, B, C])
    # without a floor the threshold filters: the fused best is lost for a lesser chunk
    assert _ids(0.7, None) == ("hybrid", [B])
    # a floor above the threshold does not raise it
    assert _ids(0.5, 0.6) == ("hybrid", [A, B, C])
    # with the keyword side failed the dense ranking is admitted the same way
    assert _ids(0.7, 0.5, keyword_failed=True) == ("vector", [B, A, C])


def test_a_question_no_chunk_admits_still_falls_back_as_before():
    assert _ids(0.8, 0.5) == ("low_threshold", [A, B, C, D])  # the 0.3 layer, not the floor


def test_hosted_models_fill_and_the_local_model_fills_but_on_path_c_and_follow_ups():
    settings = Settings(threshold_admitted_floor=0.45, threshold_admitted_floor_local=0.55)
    assert _search_options(settings, "openai:gpt-4o-mini", "specific", None).admitted_floor == 0.45
    assert _search_options(settings, "local", "specific", None).admitted_floor == 0.55
    # Path C's several passages, and a follow-up whose unshown passages are all read afresh
    assert _search_options(settings, "local", "deep", None).admitted_floor is None
    assert (
        _search_options(settings, "local", "specific", None, continuing=True).admitted_floor is None
    )
    hosted = _search_options(settings, "openai:x", "specific", None, continuing=True)
    assert hosted.admitted_floor == 0.45
    # a reader who prefers first-token time to grounding turns the local fill off
    filtering = Settings(threshold_admitted_floor_local=None)
    assert _search_options(filtering, "local", "specific", None).admitted_floor is None
