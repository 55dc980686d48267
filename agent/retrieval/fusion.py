"""Weighted reciprocal rank fusion (seed 002 step 3).

``score(d) = sum_i weight_i / (k + rank_i(d))`` over the ranked lists that contain ``d``
(ranks start at 1). This is the formula of LangChain's ``EnsembleRetriever``; it is kept here
as a small function because callers need the fused scores, not only the order.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def weighted_rrf(
    ranked_lists: Sequence[Sequence[K]], weights: Sequence[float], k: int = 60
) -> list[tuple[K, float]]:
    """Fuse ranked lists of ids into one list of ``(id, score)``, best first.

    Ties keep the order in which ids were first seen, so results are deterministic.
    """
    if len(ranked_lists) != len(weights):
        raise ValueError("one weight per ranked list")
    scores: dict[K, float] = {}
    for ranking, weight in zip(ranked_lists, weights, strict=True):
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))
