"""With an admitted floor the threshold admits the question and the fused ranking fills the
results down to the floor; without one it filters every chunk
(``agent.retrieval.ranking.apply_layers``, ``agent.chat.retrieval_step.search_options``)."""

from __future__ import annotations

import uuid

from agent.chat.retrieval_step import search_options
from agent.config import Settings
from agent.db.chunks import ScoredChunkId
from agent.retrieval.ranking import apply_layers
from agent.retrieval.types import SearchOptions

A, B, C, D = (uuid.uuid4() for _ in range(4))
# fused order A, B, C, D; only B clears 0.7, A (the fused best) is just under it
SCORED = [(A, 0.9), (B, 0.8), (C, 0.6), (D, 0.5)]
SIMILARITY = {A: 0.69, B: 0.71, C: 0.55, D: 0.35}
DENSE = [[ScoredChunkId(cid, SIMILARITY[cid]) for cid in (B, A, C, D)]]


def _ids(
    threshold: float, floor: float | None, keyword_failed: bool = False, fill_to: int | None = None
):
    layer, chunks = apply_layers(
        SCORED,
        SIMILARITY,
        DENSE,
        SearchOptions(threshold=threshold, admitted_floor=floor, fill_to=fill_to),
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


def test_a_fill_up_to_a_count_adds_the_best_below_the_threshold_only_while_short():
    # one chunk clears 0.7: the fused best under it joins it, in fused order
    assert _ids(0.7, 0.5, fill_to=2) == ("hybrid", [A, B])
    assert _ids(0.7, 0.5, fill_to=5) == ("hybrid", [A, B, C])  # never below the floor
    # as many as asked clear the threshold: nothing is added
    assert _ids(0.5, 0.3, fill_to=2) == ("hybrid", [A, B, C])
    assert _ids(0.7, 0.5, fill_to=1) == ("hybrid", [B])


def test_a_question_no_chunk_admits_still_falls_back_as_before():
    assert _ids(0.8, 0.5) == ("low_threshold", [A, B, C, D])  # the 0.3 layer, not the floor


def test_hosted_models_fill_and_the_local_model_fills_but_on_follow_ups_and_path_c_to_k():
    settings = Settings(threshold_admitted_floor=0.45, threshold_admitted_floor_local=0.55)
    assert search_options(settings, "openai:gpt-4o-mini", "specific", None).admitted_floor == 0.45
    assert search_options(settings, "local", "specific", None).admitted_floor == 0.55
    # Path C fills only up to its passages (a short article: one alone clears 0.6)
    deep = search_options(settings, "local", "deep", None)
    assert (deep.admitted_floor, deep.fill_to) == (0.55, settings.local_top_k_deep)
    assert search_options(settings, "openai:x", "deep", None).fill_to is None
    assert search_options(settings, "local", "specific", None).fill_to is None
    # a follow-up whose unshown passages are all read afresh keeps to the threshold
    assert (
        search_options(settings, "local", "specific", None, continuing=True).admitted_floor is None
    )
    hosted = search_options(settings, "openai:x", "specific", None, continuing=True)
    assert hosted.admitted_floor == 0.45
    # a reader who prefers first-token time to grounding turns the local fill off
    filtering = Settings(threshold_admitted_floor_local=None)
    assert search_options(filtering, "local", "specific", None).admitted_floor is None
