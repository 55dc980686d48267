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
from agent.retrieval import bm25_kernels as kernels

TermList = tuple[float, float, np.ndarray, np.ndarray]
"""``(score bound, idf, rows sorted ascending, term frequencies)`` of one query term."""


@dataclass
class MaxScoreScratch:
    """Arrays over a library's rows that MaxScore uses and leaves zeroed, so a 1M-row
    library need not allocate and clear them for every question."""

    scores: np.ndarray
    """float64: the scores accumulated by the terms scored in full."""
    positions: np.ndarray
    """int32: rows marked while a set of rows is gathered (0: unmarked)."""

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
    for at least ``len(chunk_tokens)`` rows, zeroed) is used and left zeroed. The loops are
    compiled (:mod:`agent.retrieval.bm25_kernels`).
    """
    c0, c1 = bm25.k1 * (1 - bm25.b), bm25.k1 * bm25.b / avgdl
    k1p1 = bm25.k1 + 1
    n = len(chunk_tokens)
    scratch = scratch if scratch is not None else MaxScoreScratch.for_rows(n)
    acc, mark = scratch.scores[:n], scratch.positions[:n]
    remaining = _bounds_left(lists, 0)
    best = np.zeros(0, dtype=np.int64)  # rows of the k best scores so far
    kth = 0.0
    done = 0
    scored: list[np.ndarray] = []  # the rows of the terms scored in full
    try:
        while done < len(lists):
            bound, idf, rows, tf = lists[done]
            kernels.add_term(acc, rows, tf, chunk_tokens, c0, c1, idf * k1p1)
            scored.append(rows)
            done += 1
            remaining = _bounds_left(lists, done)
            best, kth = kernels.best_rows(acc, rows, best, k, kth, mark)
            if done < len(lists) and len(best) >= k and remaining < kth:
                break  # a row none of these matched cannot reach the top k
        floor = kth - remaining if len(best) >= k else 0.0
        candidates, scores = _take_reaching(acc, scored, floor, mark)
    finally:
        for rows in scored:
            kernels.clear_rows(acc, rows)
    count = len(candidates)
    for _bound, idf, rows, tf in lists[done:]:
        # rows that cannot reach the k-th best even with every term left are dropped
        cut = kth if len(best) >= k else -np.inf
        count = kernels.add_term_at(
            scores,
            candidates,
            count,
            rows,
            tf,
            chunk_tokens,
            c0,
            c1,
            idf * k1p1,
            remaining,
            cut,
            mark,
        )
        done += 1
        remaining = _bounds_left(lists, done)
    candidates, scores = candidates[:count], scores[:count]
    if count > k:
        kth = np.partition(scores, count - k)[count - k]
        keep = scores >= kth  # ties at the edge all stay
        candidates, scores = candidates[keep], scores[keep]
    return candidates, scores


def _bounds_left(lists: Sequence[TermList], done: int) -> float:
    """The bounds of the terms after the first ``done`` added up afresh (0.0 when none is
    left): subtracting each from a running sum left a residue of about 1e-16, and a floor
    of ``kth - remaining`` then dropped the row tied with the k-th best score."""
    return float(sum(t[0] for t in lists[done:]))


def _take_reaching(
    acc: np.ndarray, row_lists: list[np.ndarray], floor: float, mark: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``row_lists`` scored at least ``floor`` (in no order) and their
    scores (``mark`` is used and left zeroed)."""
    total = sum(len(r) for r in row_lists)
    rows = np.empty(total, dtype=np.int64)
    scores = np.empty(total)
    found = 0
    for listed in row_lists:
        found = kernels.take_reaching(acc, listed, floor, mark, rows, scores, found)
    rows, scores = rows[:found], scores[:found]
    kernels.unmark(mark, rows)
    return rows, scores


def compile_kernels() -> None:
    """Compile the scoring loops for the copy's array types (or load them from numba's
    cache: ~2 s the first time on a machine, milliseconds after), so that no question
    waits for it. Scores a tiny library that takes every path once."""
    tokens = np.full(4096, 12.0, dtype=np.float32)
    rare, common, middle = (np.arange(0, 4096, step, dtype=np.int32) for step in (64, 1, 8))
    lists = [
        (10.0, 5.0, rare, np.ones(len(rare), dtype=np.float32)),
        (1.0, 0.4, common, np.ones(len(common), dtype=np.float32)),  # a binary search each
        (0.5, 0.2, middle, np.ones(len(middle), dtype=np.float32)),  # one marked pass
    ]
    maxscore_top_k(lists, tokens, 12.0, BM25Params(), 4)
