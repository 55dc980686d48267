"""Exact top-k Okapi BM25 over in-memory postings by MaxScore (Turtle and Flood, 1995).

Terms are scored in full, highest score bound (rarest) first, until the bounds of the terms
left add up to less than the k-th best score so far: a row none of the scored terms matched
cannot reach the top k any more. The terms left are then only looked up for the candidate
rows that can still reach the top k, by binary search in their row-sorted postings. So a
question's common words cost a lookup per surviving candidate, not a pass over most of the
library. (The threshold algorithm, reading each term's best postings first, was tried and
lost: on the 1M-chunk benchmark it could prove the top 40 for only 44 of 200 questions.)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agent.db.keyword_sql import BM25Params

TermList = tuple[float, float, np.ndarray, np.ndarray]
"""``(score bound, idf, rows sorted ascending, term frequencies)`` of one query term."""


def maxscore_top_k(
    lists: Sequence[TermList],
    chunk_tokens: np.ndarray,
    avgdl: float,
    bm25: BM25Params,
    k: int,
    scratch: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The rows that can be among the best ``k`` (ties at the edge all kept) and their exact
    BM25 scores; ``lists`` ordered by bound, highest first.

    Scores accumulate in one array over the library's rows, so each term costs its own
    postings only; the best ``k`` so far are kept beside it (the k-th best score is what the
    terms left must beat). A row met by the scored terms whose score plus every bound left
    falls short of that is dropped before its other terms are looked up. ``scratch``, a
    zeroed float64 array at least as long as ``chunk_tokens``, is used as that array and
    left zeroed (a 1M-row library need not allocate and clear 8 MB per question).
    """

    def partial(idf: float, rows: np.ndarray, tf: np.ndarray) -> np.ndarray:
        tf64 = tf.astype(np.float64)
        norm = bm25.k1 * (1 - bm25.b + bm25.b * chunk_tokens[rows].astype(np.float64) / avgdl)
        return idf * tf64 * (bm25.k1 + 1) / (tf64 + norm)

    acc = np.zeros(len(chunk_tokens)) if scratch is None else scratch[: len(chunk_tokens)]
    remaining = sum(t[0] for t in lists)
    best = np.zeros(0, dtype=np.int64)  # rows of the k best scores so far
    kth = 0.0
    done = 0
    scored: list[np.ndarray] = []  # the rows of the terms scored in full
    try:
        while done < len(lists):
            bound, idf, rows, tf = lists[done]
            acc[rows] += partial(idf, rows, tf)  # a term's rows are distinct
            scored.append(rows)
            remaining -= bound
            done += 1
            best, kth = _k_best(acc, rows, best, k)
            if done < len(lists) and len(best) >= k and remaining < kth:
                break  # a row none of these matched cannot reach the top k
        candidates = _union(scored, len(acc))
        scores = acc[candidates]
    finally:
        for rows in scored:
            acc[rows] = 0.0
    for bound, idf, rows, tf in lists[done:]:
        if len(best) >= k:  # rows that cannot reach the k-th best even with every term left
            alive = scores + remaining >= kth
            candidates, scores = candidates[alive], scores[alive]
        at = np.minimum(np.searchsorted(rows, candidates), len(rows) - 1)
        found = rows[at] == candidates
        scores[found] += partial(idf, rows[at[found]], tf[at[found]])
        remaining -= bound
    if len(candidates) > k:
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        keep = scores >= kth  # ties at the edge all stay
        candidates, scores = candidates[keep], scores[keep]
    return candidates, scores


def _union(row_lists: list[np.ndarray], rows: int) -> np.ndarray:
    """The distinct rows of sorted, distinct ``row_lists``, ascending: one list as it is,
    several merged, or marked in a mask when they cover much of the library."""
    if len(row_lists) == 1:
        return row_lists[0]
    total = sum(len(r) for r in row_lists)
    if total * 16 < rows:
        return np.unique(np.concatenate(row_lists))
    mask = np.zeros(rows, dtype=bool)
    for r in row_lists:
        mask[r] = True
    return np.flatnonzero(mask)


def _k_best(
    acc: np.ndarray, rows: np.ndarray, best: np.ndarray, k: int
) -> tuple[np.ndarray, float]:
    """The ``k`` best rows after a term added to ``rows`` (only they, or the ``k`` best
    before, can be among them now) and the k-th best score (0 with fewer than ``k``)."""
    at = np.minimum(np.searchsorted(rows, best), max(len(rows) - 1, 0))
    pool = np.concatenate([rows, best[rows[at] != best]]) if len(rows) else best
    if len(pool) > k:
        pool = pool[np.argpartition(-acc[pool], k - 1)[:k]]
    return pool, (float(acc[pool].min()) if len(pool) >= k else 0.0)
