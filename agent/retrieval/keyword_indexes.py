"""BM25 from an in-memory copy of each user's postings, checked against Postgres per search.

Postgres (``keyword_postings``) is the persistent, per-user, transactional index: ingestion
writes it in the document's transaction and a delete removes it. Scoring a 100k-chunk
library in SQL costs 20-30 ms, so each process also keeps a read-through copy of a reader's
postings in numpy arrays (exact Okapi BM25 in ~1-2 ms):

* Every search first reads the scope's fingerprint (the reader's library version, raised
  by triggers on every change they can see). A fingerprint seen before maps to a ready
  *view* (which rows are visible, N, avgdl); a new one lists the visible documents and
  loads only the documents that are new or changed since (incremental: an ingest loads
  one document, never the library). Documents no longer visible are masked at once and
  dropped from memory when an unfiltered search shows they are gone; the arrays are
  compacted when half are dead.
* Visibility always comes from Postgres, per search: the copy is never trusted for it.
* A load too big to do inside one search (a whole library after a restart) runs in the
  background while searches use the SQL scorer, so no search waits on it.
* Readers are kept least-recently-used first within ``bm25_memory_max_postings``.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import OrderedDict
from collections.abc import Sequence

from agent.db.chunks import ScoredChunkId
from agent.db.keyword_sql import BM25Params
from agent.db.postings import LibraryState, VisibleDocument, load_postings, visible_documents
from agent.db.scope import SearchScope
from agent.retrieval.keyword_index import ReaderIndex

logger = logging.getLogger(__name__)


def _log_failure(task: asyncio.Future) -> None:
    """Log a load that failed after the search awaiting it had given up."""
    if not task.cancelled() and task.exception() is not None:
        logger.warning("loading BM25 postings failed: %s", task.exception())


def _unfiltered(scope: SearchScope) -> bool:
    """Whether the scope sees everything its reader may read (its list is complete)."""
    return scope.include_shared and not scope.narrowed


class KeywordIndexes:
    """A process's in-memory BM25 copies, one per reader, least recently used evicted."""

    def __init__(self, max_postings: int, sync_load_tokens: int) -> None:
        self.max_postings = max_postings
        self.sync_load_tokens = sync_load_tokens
        self._readers: OrderedDict[uuid.UUID, ReaderIndex] = OrderedDict()

    def reader(self, user_id: uuid.UUID) -> ReaderIndex:
        """The reader's index (created empty on first use), marked most recently used."""
        index = self._readers.get(user_id)
        if index is None:
            index = self._readers[user_id] = ReaderIndex()
        self._readers.move_to_end(user_id)
        return index

    def nbytes(self) -> int:
        """Memory every reader's copy holds (:meth:`ReaderIndex.nbytes`)."""
        return sum(r.nbytes() for r in self._readers.values())

    def _evict(self, keep: ReaderIndex) -> None:
        total = sum(r.postings for r in self._readers.values())
        for user_id in list(self._readers):
            if total <= self.max_postings:
                break
            index = self._readers[user_id]
            if index is not keep and not index.load_lock.locked():
                total -= index.postings
                del self._readers[user_id]

    async def rankings(
        self,
        engine,
        scope: SearchScope,
        state: LibraryState,
        k: int,
        bm25: BM25Params,
    ) -> list[list[ScoredChunkId]] | None:
        """BM25 rankings of ``state.query_terms`` from memory, or ``None`` while a large
        load runs in the background (the caller scores in SQL meanwhile)."""
        index = self.reader(scope.user_id)
        view = index.view(state.fingerprint)
        if view is None:
            async with engine.connect() as conn:
                visible = await visible_documents(conn, scope)
            documents = visible.documents
            missing = index.missing(documents)
            if missing and sum(d.tokens for d in missing) > self.sync_load_tokens:
                self._load_in_background(engine, index, scope)
                return None
            if missing:
                # shielded: a search that runs out of time leaves the load to finish, so the
                # next one finds it done instead of starting it again (and timing out again)
                load = asyncio.ensure_future(self._load(engine, index, missing))
                load.add_done_callback(_log_failure)
                await asyncio.shield(load)
            if _unfiltered(scope):
                index.forget_missing(documents)
            gone = {d.id for d in index.missing(documents)}  # deleted between the two reads
            view = index.make_view(visible.fingerprint, [d for d in documents if d.id not in gone])
        # in a worker thread: the event loop meanwhile sends the dense read as soon as the
        # question's vector is ready (the compiled scoring loops release the GIL)
        return await asyncio.to_thread(index.score_all, view, state.query_terms, k, bm25)

    async def close(self) -> None:
        """Stop background loads (the process or event loop is ending)."""
        tasks = [r.background for r in self._readers.values() if r.background is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._readers.clear()

    async def warm(self, engine, scope: SearchScope) -> int:
        """Load everything ``scope`` sees now (benchmarks, evaluations); returns postings held."""
        index = self.reader(scope.user_id)
        async with engine.connect() as conn:
            visible = await visible_documents(conn, scope)
        await self._load(engine, index, index.missing(visible.documents))
        return index.postings

    async def _load(self, engine, index: ReaderIndex, documents: Sequence[VisibleDocument]) -> None:
        async with index.load_lock:
            todo = index.missing(documents)  # another search may have loaded them meanwhile
            if not todo:
                return
            async with engine.connect() as conn:
                conn = await conn.execution_options(isolation_level="REPEATABLE READ")
                async with conn.begin():
                    batch = await load_postings(conn, [d.id for d in todo])
            index.add(batch)
        self._evict(keep=index)

    def _load_in_background(self, engine, index: ReaderIndex, scope: SearchScope) -> None:
        if index.background is not None and not index.background.done():
            return

        async def load_all() -> None:
            try:
                async with engine.connect() as conn:
                    visible = await visible_documents(conn, scope)
                await self._load(engine, index, visible.documents)
                logger.info("BM25 copy of %s loaded: %d postings", scope.user_id, index.postings)
            except Exception:  # searches keep using SQL; the next one tries again
                logger.exception("loading the BM25 copy of %s failed", scope.user_id)

        index.background = asyncio.get_running_loop().create_task(load_all())
