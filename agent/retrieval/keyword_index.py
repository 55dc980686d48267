"""One reader's in-memory copy of their BM25 postings: numpy arrays, scored exactly.

:class:`ReaderIndex` holds the postings of the documents a reader can see (append-only
arrays, dead slots masked, compacted when half are dead) and scores a question's terms by
MaxScore (:mod:`agent.retrieval.maxscore`) for one *view* (which rows are visible, N,
avgdl). :mod:`agent.retrieval.keyword_indexes` keeps one per reader and in step with
Postgres.
"""

from __future__ import annotations

import asyncio
import math
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from agent.db.chunks import ScoredChunkId
from agent.db.keyword_sql import BM25Params
from agent.db.postings import PostingsBatch, VisibleDocument
from agent.retrieval.maxscore import MaxScoreScratch, maxscore_top_k

_MAX_VIEWS = 16
_UUID_BYTES = 8 + 56 + 44  # list slot, uuid.UUID object, its int


@dataclass(frozen=True)
class _View:
    """Which rows one visible set may score, with its corpus statistics."""

    visible: np.ndarray | None
    """Per document slot; ``None``: every row in memory (no dead or hidden rows)."""
    n: float
    avgdl: float


class ReaderIndex:
    """One reader's visible documents' postings: append-only arrays with dead slots."""

    def __init__(self) -> None:
        self.slots: dict[str, int] = {}
        """Document id -> its current slot."""
        self._slot_version: list[str] = []
        self._slot_rows: list[int] = []
        self._slot_alive: list[bool] = []
        self.chunk_ids: list[uuid.UUID] = []
        self._chunk_doc: list[np.ndarray] = []
        self._chunk_tokens: list[np.ndarray] = []
        self._terms: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        self._bounds: dict[str, tuple[float, float]] = {}
        """Per term whose postings are merged and row-sorted: its largest tf and the
        fewest tokens of a chunk holding it (for MaxScore's bounds)."""
        self._scratch: MaxScoreScratch | None = None
        """MaxScore's arrays over the rows, kept zeroed between questions."""
        self.rows = 0
        self.dead_rows = 0
        self.postings = 0
        self._views: OrderedDict[str, _View] = OrderedDict()
        self.arrays_lock = threading.Lock()
        """Held while questions are scored (in a worker thread) and while the arrays change."""
        self.load_lock = asyncio.Lock()
        self.background: asyncio.Task | None = None

    def nbytes(self) -> int:
        """Memory the copy holds: its arrays, and its chunk ids (UUID objects, ~108 bytes each)."""
        arrays = sum(a.nbytes for a in (*self._chunk_doc, *self._chunk_tokens))
        arrays += sum(r.nbytes + tf.nbytes for parts in self._terms.values() for r, tf in parts)
        arrays += 0 if self._scratch is None else self._scratch.nbytes
        return arrays + len(self.chunk_ids) * _UUID_BYTES

    # --- keeping in step -------------------------------------------------------------

    def missing(self, documents: Iterable[VisibleDocument]) -> list[VisibleDocument]:
        """Documents not in memory, or in memory at another version."""
        out = []
        for doc in documents:
            slot = self.slots.get(doc.id)
            if slot is None or self._slot_version[slot] != doc.version:
                out.append(doc)
        return out

    def add(self, batch: PostingsBatch) -> None:
        """Append a loaded batch; an older version of any of its documents dies (after any
        question being scored: a load is rare, a question takes milliseconds)."""
        with self.arrays_lock:
            self._add(batch)

    def _add(self, batch: PostingsBatch) -> None:
        base = self.rows
        slot_of = np.empty(len(batch.documents), dtype=np.int32)
        per_doc = np.bincount(batch.chunk_doc, minlength=len(batch.documents))
        for i, doc in enumerate(batch.documents):
            old = self.slots.get(doc.id)
            if old is not None:
                self._kill(old)
            slot_of[i] = self.slots[doc.id] = len(self._slot_version)
            self._slot_version.append(doc.version)
            self._slot_rows.append(int(per_doc[i]))
            self._slot_alive.append(True)
        self.chunk_ids.extend(batch.chunk_ids)
        self._chunk_doc.append(slot_of[batch.chunk_doc])
        self._chunk_tokens.append(batch.chunk_tokens)
        for term, (rows, tf) in batch.terms.items():
            self._terms.setdefault(term, []).append((rows + np.int32(base), tf))
            self._bounds.pop(term, None)
        self.rows += len(batch.chunk_ids)
        self.postings += batch.postings
        self._views.clear()
        self._maybe_compact()

    def forget_missing(self, documents: Iterable[VisibleDocument]) -> None:
        """Drop documents absent from a complete (unfiltered) visible list: deleted or
        unshared. Only call with the list of an unfiltered scope."""
        present = {d.id for d in documents}
        gone = [doc_id for doc_id in self.slots if doc_id not in present]
        if not gone:
            return
        with self.arrays_lock:
            for doc_id in gone:
                self._kill(self.slots.pop(doc_id))
            self._views.clear()
            self._maybe_compact()

    def _kill(self, slot: int) -> None:
        if self._slot_alive[slot]:
            self._slot_alive[slot] = False
            self.dead_rows += self._slot_rows[slot]

    def _maybe_compact(self) -> None:
        if self.dead_rows and self.dead_rows * 2 >= self.rows:
            self._compact()

    def _compact(self) -> None:
        """Rewrite the arrays without dead rows (in memory; nothing is read again)."""
        alive = np.array(self._slot_alive, dtype=bool)
        chunk_doc = self._all(self._chunk_doc, np.int32)
        keep = alive[chunk_doc] if len(chunk_doc) else np.zeros(0, dtype=bool)
        new_row = (np.cumsum(keep) - 1).astype(np.int32)
        self.chunk_ids = [cid for cid, k in zip(self.chunk_ids, keep, strict=True) if k]
        self._chunk_doc = [chunk_doc[keep]]
        self._chunk_tokens = [self._all(self._chunk_tokens, np.float32)[keep]]
        postings = 0
        self._bounds.clear()
        for term in list(self._terms):
            rows, tf = _merged(self._terms[term])
            live = keep[rows]
            if live.any():
                self._terms[term] = [(new_row[rows[live]], tf[live])]
                postings += int(live.sum())
            else:
                del self._terms[term]
        self.rows = len(self.chunk_ids)
        self.postings = postings
        self.dead_rows = 0
        for slot, is_alive in enumerate(self._slot_alive):
            if not is_alive:
                self._slot_rows[slot] = 0
        self._views.clear()

    # --- views and scoring ---------------------------------------------------------------

    def view(self, fingerprint: str) -> _View | None:
        """The ready view of a visible set seen before, if any."""
        found = self._views.get(fingerprint)
        if found is not None:
            self._views.move_to_end(fingerprint)
        return found

    def make_view(self, fingerprint: str, documents: Sequence[VisibleDocument]) -> _View:
        """The view of ``documents`` (all in memory at their versions), kept for reuse as
        the view of the visible set ``fingerprint`` names."""
        slots = [self.slots[d.id] for d in documents]
        live = sum(self._slot_alive)
        n = float(sum(d.chunks for d in documents))
        avgdl = max(sum(d.tokens for d in documents) / max(n, 1.0), 1.0)
        if self.dead_rows == 0 and len(slots) == live:
            visible = None
        else:
            visible = np.zeros(len(self._slot_version), dtype=bool)
            visible[slots] = True
        made = _View(visible, n, avgdl)
        self._views[fingerprint] = made
        while len(self._views) > _MAX_VIEWS:
            self._views.popitem(last=False)
        return made

    def score_all(
        self, view: _View, questions: Sequence[Sequence[str]], k: int, bm25: BM25Params
    ) -> list[list[ScoredChunkId]]:
        """:meth:`score` for each question's terms, the arrays held still meanwhile (safe
        to call from a worker thread while the event loop loads other documents)."""
        with self.arrays_lock:
            return [self.score(view, terms, k, bm25) for terms in questions]

    def score(
        self, view: _View, terms: Sequence[str], k: int, bm25: BM25Params
    ) -> list[ScoredChunkId]:
        """Okapi BM25 of the visible rows for the distinct ``terms``, best ``k`` first
        (exact, by MaxScore: :mod:`agent.retrieval.maxscore`)."""
        if k <= 0 or not self.rows:
            return []
        chunk_tokens = self._all(self._chunk_tokens, np.float32)
        lists = self._term_lists(view, terms, bm25)
        if not lists:
            return []
        # one zeroed scratch per reader, taken while in use (a second caller allocates)
        scratch, self._scratch = self._scratch, None
        if scratch is None or not scratch.fits(len(chunk_tokens)):
            scratch = MaxScoreScratch.for_rows(len(chunk_tokens))
        try:
            candidates, scores = maxscore_top_k(lists, chunk_tokens, view.avgdl, bm25, k, scratch)
        finally:
            self._scratch = scratch
        ranked = sorted(
            ((self.chunk_ids[r], float(s)) for r, s in zip(candidates, scores, strict=True)),
            key=lambda hit: (-hit[1], hit[0]),
        )
        return [ScoredChunkId(cid, s) for cid, s in ranked[:k]]

    def _term_lists(
        self, view: _View, terms: Sequence[str], bm25: BM25Params
    ) -> list[tuple[float, float, np.ndarray, np.ndarray]]:
        """``(score bound, idf, rows, tf)`` of each distinct term's visible postings,
        highest bound (rarest) first."""
        chunk_doc = self._all(self._chunk_doc, np.int32)
        lists = []
        for term in dict.fromkeys(terms):
            if term not in self._terms:
                continue
            rows, tf = self._postings(term)
            max_tf, min_dl = self._bounds[term]
            if view.visible is not None:
                keep = view.visible[chunk_doc[rows]]
                rows, tf = rows[keep], tf[keep]
            df = len(rows)
            if not df:
                continue
            idf = math.log(1 + (view.n - df + 0.5) / (df + 0.5))
            # no posting scores more than the largest tf in the shortest chunk would
            norm = bm25.k1 * (1 - bm25.b + bm25.b * min_dl / view.avgdl)
            lists.append((idf * max_tf * (bm25.k1 + 1) / (max_tf + norm), idf, rows, tf))
        lists.sort(key=lambda t: (-t[0], len(t[2])))
        return lists

    def _postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """The term's postings in one pair of arrays sorted by row, its bounds computed."""
        parts = self._terms[term]
        if term not in self._bounds:
            rows, tf = _merged(parts)
            order = np.argsort(rows, kind="stable")
            parts[:] = [(rows[order], tf[order])]
            chunk_tokens = self._all(self._chunk_tokens, np.float32)
            self._bounds[term] = (float(tf.max()), float(chunk_tokens[rows].min()))
        return parts[0]

    @staticmethod
    def _all(parts: list[np.ndarray], dtype) -> np.ndarray:
        if len(parts) > 1:
            parts[:] = [np.concatenate(parts)]
        return parts[0] if parts else np.zeros(0, dtype=dtype)


def _merged(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """A term's postings parts (one per load) as one pair of arrays, in load order."""
    return np.concatenate([r for r, _ in parts]), np.concatenate([t for _, t in parts])
