"""Retrieved chunks built in memory, for tests of what is done with search results (context
building, conflicts, labels) without a database."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from agent.db.chunks import ChunkRecord
from agent.retrieval.citations import citation_id
from agent.retrieval.types import RetrievedChunk


def retrieved_chunk(
    text: str,
    *,
    cite_as: str | None = None,
    similarity: float = 0.8,
    **record: Any,
) -> RetrievedChunk:
    """A chunk of ``text`` in a book of its own (``record`` overrides any field of its
    :class:`ChunkRecord`), cited as ``cite_as`` or by its id, with score 1.0."""
    fields: dict[str, Any] = {
        "id": uuid.uuid4(),
        "document_id": uuid.uuid4(),
        "parent_id": None,
        "chunk_index": 0,
        "text": text,
        "chapter_title": None,
        "section_title": None,
        "page": None,
        "document_title": "Book",
        "author": None,
        "file_type": "txt",
        "doc_type": "BOOK",
        "owner_id": uuid.uuid4(),
        "document_created_at": datetime.now(UTC),
        "parent_text": None,
        "tags": [],
        "has_embedding": True,
        **record,
    }
    chunk = ChunkRecord(**fields)
    return RetrievedChunk(chunk, cite_as or citation_id(chunk.id), 1.0, similarity, None)
