"""Result-list diversity: one passage per parent, and maximal marginal relevance (MMR)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def limit_per_group(
    ranked: Sequence[T], k: int, per_group: int, group: Callable[[T], Hashable | None]
) -> list[T]:
    """The best ``k`` items with at most ``per_group`` from any group (``None``: no group).

    Neighbouring child chunks overlap and share their parent's context, so several of them
    spend the context budget on one passage (the parent-document retriever's rule).
    """
    counts: dict[Hashable, int] = {}
    picked: list[T] = []
    for item in ranked:
        key = group(item)
        if key is not None:
            if counts.get(key, 0) >= per_group:
                continue
            counts[key] = counts.get(key, 0) + 1
        picked.append(item)
        if len(picked) == k:
            break
    return picked


def mmr_order(
    relevance: Sequence[float], vectors: np.ndarray, k: int, lambda_mult: float
) -> list[int]:
    """Indices of ``k`` items chosen by MMR: ``λ·relevance − (1−λ)·max cosine to chosen``.

    ``relevance`` (the fused scores) is min-max scaled to [0, 1] over the pool, so it spans
    as much as the cosines it is weighed against: scaled by its maximum alone, RRF's
    near-flat scores (1/61 … 1/68) left every pick after the first to redundancy, the
    passage least like the first rather than the next best. Measured on 107 answerable
    questions of three sets (local model's 2-passage context): the answer in the context
    82 times against 75. ``vectors`` are L2-normalised rows.
    """
    n = len(relevance)
    if n == 0:
        return []
    rel = np.asarray(relevance, dtype=np.float64)
    spread = rel.max() - rel.min()
    rel = (rel - rel.min()) / spread if spread > 0 else np.ones(n)
    sims = vectors @ vectors.T
    chosen = [int(np.argmax(rel))]
    while len(chosen) < min(k, n):
        redundancy = sims[:, chosen].max(axis=1)
        score = lambda_mult * rel - (1 - lambda_mult) * redundancy
        score[chosen] = -np.inf
        chosen.append(int(np.argmax(score)))
    return chosen
