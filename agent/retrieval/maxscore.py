"""Exact top-k Okapi BM25 over in-memory postings by MaxScore (Turtle and Flood, 1995).

Terms are scored in full, highest score bound (rarest) first, until the bounds of the terms
left add up to less than the k-th best score so far: a row none of the scored terms matched
cannot reach the top k any more. The terms left are then only looked up for the candidate
rows that can still reach the top k (a binary search each in the row-sorted postings, or
one pass over the postings when the candidates are many). So a question's common words
cost a lookup per surviving candidate, not a pass over most of the library. (The threshold
algorithm, reading each term's best postings first, was tried and lost: on the 1M-chunk
benchmark it could prove the top 40 for only 44 of 200 questions.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from agent.db.keyword_sql import BM25Params

TermList = tuple[float, float, np.ndarray, np.ndarray]
"""``(score bound, idf, rows sorted ascending, term frequencies)`` of one query term."""


@dataclass
class MaxScoreScratch:
    """Arrays over a library's rows that MaxScore uses and leaves zeroed, so a 1M-row
    library need not allocate and clear them for every question."""

    scores: np.ndarray
    """float64: the scores accumulated by the terms scored in full."""
    positions: np.ndarray
    """int32: 1 + a candidate's place in the candidate list (0: not a candidate)."""

    @classmethod
    def for_rows(cls, rows: int) -> MaxScoreScratch:
        """Zeroed arrays for ``rows`` rows."""
        return cls(np.zeros(rows), np.zeros(rows, dtype=np.int32))

    def fits(self, rows: int) -> bool:
        """Whether the arrays cover ``rows`` rows."""
        return len(self.scores) >= rows

    @property
    def nbytes(self) -> int:
        """Memory the arrays hold."""
        return self.scores.nbytes + self.positions.nbytes


def maxscore_top_k(
    lists: Sequence[TermList],
    chunk_tokens: np.ndarray,
    avgdl: float,
    bm25: BM25Params,
    k: int,
    scratch: MaxScoreScratch | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The rows that can be among the best ``k`` (ties at the edge all kept) and their exact
    BM25 scores; ``lists`` ordered by bound, highest first.

    Scores accumulate in one array over the library's rows, so each term costs its own
    postings only; the best ``k`` so far are kept beside it (the k-th best score is what the
    terms left must beat). A row met by the scored terms whose score plus every bound left
    falls short of that is dropped before its other terms are looked up. ``scratch`` (sized
    for at least ``len(chunk_tokens)`` rows, zeroed) is used and left zeroed.
    """
    c0, c1 = bm25.k1 * (1 - bm25.b), bm25.k1 * bm25.b / avgdl

    def partial(idf: float, rows: np.ndarray, tf: np.ndarray) -> np.ndarray:
        # idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)), in place
        out = chunk_tokens[rows].astype(np.float64)
        out *= c1
        out += c0
        tf64 = tf.astype(np.float64)
        out += tf64
        np.divide(tf64, out, out=out)
        out *= idf * (bm25.k1 + 1)
        return out

    n = len(chunk_tokens)
    scratch = scratch if scratch is not None else MaxScoreScratch.for_rows(n)
    acc = scratch.scores[:n]
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
        floor = kth - remaining if len(best) >= k else 0.0
        if floor > 0 and sum(len(r) for r in scored) * 4 > n:
            # the scored rows cover much of the library: one pass finds those still alive
            candidates = np.flatnonzero(acc >= floor)
        else:
            candidates = _union(scored, n)
        scores = acc[candidates]
    finally:
        for rows in scored:
            acc[rows] = 0.0
    for bound, idf, rows, tf in lists[done:]:
        if len(best) >= k:  # rows that cannot reach the k-th best even with every term left
            alive = scores + remaining >= kth
            if not alive.all():
                candidates, scores = candidates[alive], scores[alive]
        found, at = _lookup(rows, candidates, scratch.positions)
        scores[found] += partial(idf, rows[at], tf[at])
        remaining -= bound
    if len(candidates) > k:
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        keep = scores >= kth  # ties at the edge all stay
        candidates, scores = candidates[keep], scores[keep]
    return candidates, scores


def _lookup(
    rows: np.ndarray, candidates: np.ndarray, positions: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Which ``candidates`` a term's sorted ``rows`` hold: the places of those candidates
    and of their postings. A binary search per candidate, or, when the candidates are many
    beside the postings, one pass over the postings through ``positions`` (left zeroed)."""
    if len(candidates) * 16 > len(rows):
        positions[candidates] = np.arange(1, len(candidates) + 1, dtype=np.int32)
        hit = positions[rows]
        positions[candidates] = 0
        at = np.flatnonzero(hit)
        return hit[at] - 1, at
    at = np.minimum(np.searchsorted(rows, candidates), len(rows) - 1)
    found = np.flatnonzero(rows[at] == candidates)
    return found, at[found]


def _union(row_lists: list[np.ndarray], rows: int) -> np.ndarray:
    """The distinct rows of sorted, distinct ``row_lists``, ascending: one list as it is,
    several merged, or marked in a mask when they cover much of the library."""
    if len(row_lists) == 1:
        return row_lists[0]
    total = sum(len(r) for r in row_lists)
    if total * 16 < rows:
        # a stable sort (timsort) merges the sorted lists in near-linear time: ~17x faster
        # than np.unique's quicksort on three lists of 60k rows
        merged = np.sort(np.concatenate(row_lists), kind="stable")
        distinct = np.empty(len(merged), dtype=bool)
        distinct[:1] = True
        np.not_equal(merged[1:], merged[:-1], out=distinct[1:])
        return merged[distinct]
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
