"""Ranking metrics with the BEIR / pytrec_eval definitions.

``ranked`` is a list of document ids, best first (no duplicates); ``qrels`` maps the judged
document ids of one query to their graded relevance (``> 0`` means relevant).

* nDCG@k: gain = relevance (linear, as trec_eval's ``ndcg_cut``), discount ``log2(rank + 1)``;
  the ideal DCG sorts every judged relevance of the query, so unretrieved relevant
  documents lower the score.
* Recall@k: relevant documents in the top ``k`` / all relevant documents of the query.
* MRR@k: ``1 / rank`` of the first relevant document within the top ``k``, else 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def dcg(gains: Sequence[float]) -> float:
    """Discounted cumulative gain of gains listed by rank (rank 1 first)."""
    return sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, start=1))


def ndcg_at_k(ranked: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """Normalized DCG of the top ``k``; 0 when the query has no relevant document."""
    ideal = dcg(sorted((r for r in qrels.values() if r > 0), reverse=True)[:k])
    if ideal <= 0:
        return 0.0
    gains = [max(qrels.get(doc, 0), 0) for doc in ranked[:k]]
    return dcg(gains) / ideal


def recall_at_k(ranked: Sequence[str], qrels: Mapping[str, int], k: int = 100) -> float:
    """Share of the query's relevant documents found in the top ``k``."""
    relevant = {doc for doc, r in qrels.items() if r > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def mrr_at_k(ranked: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """Reciprocal rank of the first relevant document in the top ``k`` (0 if none)."""
    for rank, doc in enumerate(ranked[:k], start=1):
        if qrels.get(doc, 0) > 0:
            return 1.0 / rank
    return 0.0


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean (0 for no values)."""
    return sum(values) / len(values) if values else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation (numpy's default)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
