"""The inner loops of MaxScore (:mod:`agent.retrieval.maxscore`), compiled by numba.

Each loop is one pass over a term's postings that numpy would take three to six passes
and temporary arrays for (gather the chunk lengths, the BM25 arithmetic, a fancy-index
scatter, then a partition). Compiled at first use for the CPU it runs on (cached beside
this module, keyed by that CPU), so nothing tuned to another machine is shipped. The
loops release the GIL: a question scored in a worker thread leaves the event loop free.

The arithmetic is numpy's, operation for operation and in float64, so the scores equal
those of the SQL path (:mod:`agent.db.keyword_sql`) and of the unit tests' reference.
"""

from __future__ import annotations

import numpy as np
from numba import njit


def compiled(function):
    """``function`` compiled by numba, releasing the GIL, cached on disk where numba can
    write (beside the module, else the user's cache folder); compiled afresh in each
    process where it cannot (a read-only install without a home folder)."""
    try:
        return njit(cache=True, nogil=True)(function)
    except RuntimeError:  # numba found no writable cache location
        return njit(nogil=True)(function)


@compiled
def _bm25(tf, dl, c0, c1, weight):  # pragma: no cover - compiled
    """One posting's BM25, ``weight * tf / (dl * c1 + c0 + tf)`` in numpy's order and in
    float64 (``weight`` = idf * (k1 + 1); ``c0``, ``c1`` fold k1, b and avgdl)."""
    t = np.float64(tf)
    return t / (dl * c1 + c0 + t) * weight


@compiled
def add_term(acc, rows, tf, chunk_tokens, c0, c1, weight):  # pragma: no cover - compiled
    """Add each of a term's postings' BM25 (:func:`_bm25`) to ``acc`` at its row."""
    for i in range(rows.shape[0]):
        r = rows[i]
        acc[r] += _bm25(tf[i], chunk_tokens[r], c0, c1, weight)


@compiled
def clear_rows(acc, rows):  # pragma: no cover - compiled
    """Zero ``acc`` at ``rows`` (MaxScore leaves its scratch as it found it)."""
    for i in range(rows.shape[0]):
        acc[rows[i]] = 0.0


@compiled
def best_rows(acc, rows, best, k, kth, mark):  # pragma: no cover - compiled
    """The ``k`` best rows after a term added to ``rows`` and the k-th best score (0 with
    fewer than ``k`` rows scored).

    Only ``rows`` changed, so the best are among them and the ``best`` before; a row of
    ``rows`` under the k-th best score before (``kth``: scores only grow) cannot be one.
    A min-heap of ``k`` keeps them (ties at the edge broken by order: the k-th best score
    is what MaxScore needs). ``mark`` (int32 over the rows, zeroed) keeps a row in both
    ``rows`` and ``best`` from counting twice."""
    heap_rows = np.empty(k, dtype=np.int64)
    heap_values = np.empty(k)
    size = 0
    for i in range(best.shape[0]):
        mark[best[i]] = 1
        size = _push(heap_rows, heap_values, size, best[i], acc[best[i]])
    for i in range(rows.shape[0]):
        r = rows[i]
        value = acc[r]
        if mark[r] == 0 and value >= kth and (size < k or value > heap_values[0]):
            size = _push(heap_rows, heap_values, size, r, value)
    for i in range(best.shape[0]):
        mark[best[i]] = 0
    return heap_rows[:size].copy(), (heap_values[0] if size == k else 0.0)


@compiled
def _push(heap_rows, heap_values, size, row, value):  # pragma: no cover - compiled
    """Put ``row`` into the min-heap of at most ``len(heap_rows)``; returns its size."""
    if size < heap_rows.shape[0]:
        at = size
        size += 1
        while at > 0:  # sift up
            parent = (at - 1) // 2
            if heap_values[parent] <= value:
                break
            heap_rows[at], heap_values[at] = heap_rows[parent], heap_values[parent]
            at = parent
        heap_rows[at], heap_values[at] = row, value
        return size
    if value <= heap_values[0]:
        return size
    at = 0
    while True:  # replace the root, sift down
        child = 2 * at + 1
        if child >= size:
            break
        if child + 1 < size and heap_values[child + 1] < heap_values[child]:
            child += 1
        if heap_values[child] >= value:
            break
        heap_rows[at], heap_values[at] = heap_rows[child], heap_values[child]
        at = child
    heap_rows[at], heap_values[at] = row, value
    return size


@compiled
def take_reaching(acc, rows, floor, mark, out_rows, out_scores, m):  # pragma: no cover
    """Append the rows of ``rows`` scored at least ``floor`` and not marked yet (marking
    them) to ``out_rows``/``out_scores`` from ``m``; returns the new count. Unmark and
    clear after the last list (:func:`clear_rows`, :func:`unmark`)."""
    for i in range(rows.shape[0]):
        r = rows[i]
        if mark[r] == 0 and acc[r] >= floor:
            mark[r] = 1
            out_rows[m] = r
            out_scores[m] = acc[r]
            m += 1
    return m


@compiled
def unmark(mark, rows):  # pragma: no cover - compiled
    """Zero ``mark`` at ``rows``."""
    for i in range(rows.shape[0]):
        mark[rows[i]] = 0


@compiled
def add_term_at(
    scores, candidates, count, rows, tf, chunk_tokens, c0, c1, weight, remaining, kth, mark
):  # pragma: no cover - compiled
    """Add a term's BM25 to the scores of the distinct ``candidates[:count]`` its
    ascending ``rows`` hold, after dropping those whose score plus ``remaining`` (every
    bound left, this term's included) falls short of ``kth``; returns the new count.

    Many candidates beside the postings: marked (``mark``, left zeroed) and found in one
    pass over the postings; few: a binary search each."""
    kept = 0
    for i in range(count):
        if scores[i] + remaining >= kth:
            candidates[kept], scores[kept] = candidates[i], scores[i]
            kept += 1
    n = rows.shape[0]
    if n == 0 or kept == 0:
        return kept
    if kept * 16 > n:
        for i in range(kept):
            mark[candidates[i]] = i + 1
        for j in range(n):
            at = mark[rows[j]]
            if at:
                scores[at - 1] += _bm25(tf[j], chunk_tokens[rows[j]], c0, c1, weight)
        for i in range(kept):
            mark[candidates[i]] = 0
        return kept
    for i in range(kept):
        want = candidates[i]
        j = np.searchsorted(rows, want)
        if j < n and rows[j] == want:
            scores[i] += _bm25(tf[j], chunk_tokens[want], c0, c1, weight)
    return kept
