"""Indexing a BEIR corpus for ``quire eval retrieval``: one pasted-text document per
abstract (``title + "\\n\\n" + text``) through the real ingestion code, as one user in a
dedicated corpus.

The mapping from our document ids to BEIR ids is kept in a JSON cache (under
``$QUIRE_HOME/eval/`` by default) so that a rerun skips re-ingesting (re-ingesting would
only report duplicates, but re-parsing thousands of documents still costs time).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import text as sql

from agent.ingest.sources import IngestRequest, ingest_source
from agent.services import Services
from bench.eval_retrieval_data import BeirDataset
from bench.progress import Progress


@dataclass
class IndexInfo:
    """How the corpus got into the index."""

    documents: int
    chunks: int = 0
    ingested: int = 0
    duplicates: int = 0
    failed: list[str] = field(default_factory=list)
    seconds: float = 0.0
    """This run's indexing time (checking the cache only, when nothing was missing)."""
    from_cache: bool = False
    indexed_seconds: float | None = None
    """How long the indexing run that built the cached index took."""
    doc_types: dict[str, int] = field(default_factory=dict)
    """Ingestion's document type per abstract (USER, SENSITIVE, FAQ, BOOK)."""


async def _ready_documents(
    services: Services, user_id: uuid.UUID, corpus: str
) -> dict[uuid.UUID, tuple[str, int]]:
    """The user's ready documents in ``corpus``: id -> (doc type, chunk count)."""
    async with services.engine.connect() as conn:
        rows = await conn.execute(
            sql(
                "SELECT d.id, d.doc_type, (SELECT count(*) FROM child_chunks c "
                "WHERE c.document_id = d.id) AS chunks FROM documents d "
                "WHERE d.user_id = :u AND d.corpus = :c AND d.status = 'ready'"
            ),
            {"u": user_id, "c": corpus},
        )
        return {r.id: (r.doc_type, int(r.chunks)) for r in rows}


def _load_cache(path: Path | None) -> dict:
    if path is None or not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _as_uuid(raw: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(raw)
    except (TypeError, ValueError):
        return None


@dataclass
class _Indexing:
    """One indexing run: what it ingests into, and the BEIR id -> document id it grows."""

    services: Services
    user_id: uuid.UUID
    dataset: BeirDataset
    corpus: str
    mapping: dict[str, str]
    info: IndexInfo

    async def ingest(self, beir: str) -> None:
        """Ingest one abstract (a failure is counted, never raised)."""
        title = self.dataset.corpus[beir][0].strip() or f"{self.dataset.name} {beir}"
        text = self.dataset.document_text(beir)
        request = IngestRequest(text=text, title=title, corpus=self.corpus)
        try:
            result = await ingest_source(self.services, self.user_id, request)
        except Exception as exc:  # one unreadable abstract must not stop the run
            self.info.failed.append(f"{beir}: {type(exc).__name__}: {exc}")
        else:
            self.mapping[beir] = str(result.document_id)
            if result.status == "duplicate":
                self.info.duplicates += 1
            else:
                self.info.ingested += 1

    async def ingest_all(
        self, todo: list[str], concurrency: int, progress: Progress | None
    ) -> None:
        """Ingest ``todo`` with ``concurrency`` workers, reporting each one done."""
        total, done = len(self.dataset.corpus), len(self.mapping)
        queue: asyncio.Queue[str] = asyncio.Queue()
        for beir in todo:
            queue.put_nowait(beir)

        async def worker() -> None:
            nonlocal done
            while not queue.empty():
                await self.ingest(queue.get_nowait())
                done += 1
                if progress:
                    progress("index", done, total)

        await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))

    def save(self, path: Path) -> None:
        """Write the cache a later run starts from."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps(
                {
                    "dataset": self.dataset.name,
                    "corpus": self.corpus,
                    "user_id": str(self.user_id),
                    "embedding_model": self.services.embeddings.name,
                    "index_seconds": self.info.seconds,
                    "mapping": self.mapping,
                },
                indent=1,
            )
        )

    async def by_document(self) -> dict[uuid.UUID, list[str]]:
        """Document id -> BEIR ids; counts the stored chunks and document types."""
        stored = await _ready_documents(self.services, self.user_id, self.corpus)
        by_document: dict[uuid.UUID, list[str]] = {}
        for beir, doc in self.mapping.items():
            by_document.setdefault(uuid.UUID(doc), []).append(beir)
        self.info.chunks = sum(stored[d][1] for d in by_document if d in stored)
        self.info.doc_types = dict(Counter(stored[d][0] for d in by_document if d in stored))
        return by_document


async def index_corpus(
    services: Services,
    user_id: uuid.UUID,
    dataset: BeirDataset,
    corpus: str,
    *,
    cache_path: Path | None = None,
    concurrency: int = 2,
    progress: Progress | None = None,
) -> tuple[dict[uuid.UUID, list[str]], IndexInfo]:
    """Ingest every corpus document not yet indexed; return document id -> BEIR ids.

    Documents whose cached id is still stored are skipped. Identical texts are one document
    (ingestion reports the second as a duplicate), so one id may stand for several BEIR ids.
    """
    started = time.perf_counter()
    stored = await _ready_documents(services, user_id, corpus)
    cached = _load_cache(cache_path)
    mapping: dict[str, str] = {
        str(beir): str(doc)
        for beir, doc in dict(cached.get("mapping") or {}).items()
        if beir in dataset.corpus and _as_uuid(doc) in stored
    }
    todo = [beir for beir in dataset.corpus if beir not in mapping]
    info = IndexInfo(documents=len(dataset.corpus), from_cache=not todo)
    if not todo:
        info.indexed_seconds = cached.get("index_seconds")
    if progress:
        progress("index", len(mapping), len(dataset.corpus))
    run = _Indexing(services, user_id, dataset, corpus, mapping, info)
    try:
        await run.ingest_all(todo, concurrency, progress)
    finally:  # an interrupted run keeps what it indexed
        info.seconds = round(time.perf_counter() - started, 2)
        if todo:
            info.indexed_seconds = info.seconds
            if cache_path is not None:
                run.save(cache_path)
    return await run.by_document(), info
