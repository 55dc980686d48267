"""Fusing the dense and keyword rankings: adaptive score fusion (the default) or weighted
reciprocal rank fusion (seed 002 step 3).

RRF: ``score(d) = sum_i weight_i / (k + rank_i(d))`` over the ranked lists that contain ``d``
(ranks start at 1), the formula of LangChain's ``EnsembleRetriever``; kept here as a small
function because callers need the fused scores, not only the order. It ignores how far apart
the scores are, so on keyword-like queries over long articles it lost to BM25 alone;
:func:`adaptive_fusion` weighs each side by how decisively it ranks, per query.
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


def relative_drop(scores: Sequence[float], depth: int) -> float:
    """How sharply a ranking's scores fall from its top hit to its ``depth``-th (or last):
    ``(s1 - s_depth) / |s1|``. A standout hit (an exact rare-word match in BM25) falls far;
    a flat list, where the retriever cannot tell its hits apart, hardly at all."""
    if len(scores) < 2 or not scores[0]:
        return 0.0
    return max((scores[0] - scores[min(depth, len(scores)) - 1]) / abs(scores[0]), 0.0)


def min_max(scores: Sequence[float], floor: float | None = None) -> list[float]:
    """Scores rescaled to [0, 1] within their list (all 1 when they are equal); ``floor``,
    when given and lower than the list's minimum, maps to 0 instead of that minimum."""
    lo, hi = min(scores), max(scores)
    if floor is not None:
        lo = min(lo, floor)
    return [(s - lo) / (hi - lo) if hi > lo else 1.0 for s in scores]


def adaptive_fusion(
    sides: Sequence[tuple[float, Sequence[Sequence[tuple[K, float]]]]],
    depth: int = 10,
    min_share: float = 0.15,
    full_length: int | None = None,
) -> list[tuple[K, float]]:
    """Score-aware fusion of two sides (dense and keyword), weighted per query.

    ``sides`` holds each side's base weight and its ranked lists of ``(id, score)``, best
    first (several lists per side when the query was expanded). Each list's scores are
    min-max rescaled; a side's lists are averaged; the two sides are mixed convexly with
    shares proportional to ``base weight x mean relative drop`` of their lists
    (:func:`relative_drop`), kept within ``[min_share, 1 - min_share]``. So a question whose
    BM25 list has one standout match leans on BM25, and a paraphrase that BM25 scores flat
    leans on the vectors: measured, this beats both sides alone on SciFact, book chapters
    with factoid questions and keyword queries over the Python reference, where equal-weight
    RRF lost to BM25 (``quire eval retrieval``). Ties keep first-seen order.

    A list shorter than ``full_length`` (the depth asked of the retriever) holds every match
    there is, so its floor is 0, a non-match's score, not its own last hit: two near-equal
    hits in a small library stay near-equal instead of becoming 1 and 0.
    """
    weights, fused_sides = [], []
    for base, lists in sides:
        lists = [lst for lst in lists if lst]
        if not lists:
            continue
        drops = [relative_drop([s for _, s in lst], depth) for lst in lists]
        weights.append(base * max(sum(drops) / len(drops), 1e-6))
        side: dict[K, float] = {}
        for lst in lists:
            exhausted = full_length is not None and len(lst) < full_length
            scaled = min_max([s for _, s in lst], 0.0 if exhausted else None)
            for (item, _), score in zip(lst, scaled, strict=True):
                side[item] = side.get(item, 0.0) + score / len(lists)
        fused_sides.append(side)
    if not fused_sides:
        return []
    shares = [w / sum(weights) for w in weights]
    if len(shares) == 2:
        first = min(max(shares[0], min_share), 1 - min_share)
        shares = [first, 1 - first]
    scores: dict[K, float] = {}
    for share, side in zip(shares, fused_sides, strict=True):
        for item, score in side.items():
            scores[item] = scores.get(item, 0.0) + share * score
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))
