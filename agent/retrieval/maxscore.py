"""Exact top-k Okapi BM25 over in-memory postings by MaxScore (Turtle and Flood, 1995).

Terms are scored in full, highest score bound (rarest) first, until the bounds of the terms
left add up to less than the k-th best score so far: a row none of the scored terms matched
cannot reach the top k any more. The terms left are then only looked up for the candidate
rows, by binary search in their row-sorted postings. Sums are taken over the rows touched,
never over the whole library, so a question's common words cost a lookup per candidate,
not a pass over most of the library.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agent.db.chunks import BM25Params

TermList = tuple[float, float, np.ndarray, np.ndarray]
"""``(score bound, idf, rows sorted ascending, term frequencies)`` of one query term."""


def maxscore_top_k(
    lists: Sequence[TermList], chunk_tokens: np.ndarray, avgdl: float, bm25: BM25Params, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The rows that can be among the best ``k`` (ties at the edge all kept) and their exact
    BM25 scores; ``lists`` ordered by bound, highest first."""

    def partial(idf: float, rows: np.ndarray, tf: np.ndarray) -> np.ndarray:
        tf64 = tf.astype(np.float64)
        norm = bm25.k1 * (1 - bm25.b + bm25.b * chunk_tokens[rows].astype(np.float64) / avgdl)
        return idf * tf64 * (bm25.k1 + 1) / (tf64 + norm)

    remaining = sum(t[0] for t in lists)
    seen_rows: list[np.ndarray] = []
    seen_scores: list[np.ndarray] = []
    done = 0
    while done < len(lists):
        bound, idf, rows, tf = lists[done]
        seen_rows.append(rows)
        seen_scores.append(partial(idf, rows, tf))
        remaining -= bound
        done += 1
        candidates, scores = _sum_by_row(seen_rows, seen_scores)
        if done < len(lists) and len(candidates) >= k:
            kth = np.partition(scores, len(scores) - k)[len(scores) - k]
            if remaining < kth:  # a row none of these matched cannot reach the top k
                break
    for _, idf, rows, tf in lists[done:]:
        at = np.minimum(np.searchsorted(rows, candidates), len(rows) - 1)
        found = rows[at] == candidates
        scores[found] += partial(idf, rows[at[found]], tf[at[found]])
    if len(candidates) > k:
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        best = scores >= kth  # ties at the edge all stay
        candidates, scores = candidates[best], scores[best]
    return candidates, scores


def _sum_by_row(rows: list[np.ndarray], scores: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows (sorted) and their summed scores, over the rows touched only."""
    unique, inverse = np.unique(np.concatenate(rows), return_inverse=True)
    return unique, np.bincount(inverse, weights=np.concatenate(scores), minlength=len(unique))
