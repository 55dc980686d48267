"""Quire's hybrid search as a LangChain ``BaseRetriever`` (for chains, tools and subgraphs)."""

from __future__ import annotations

import uuid

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from agent.db.scope import SearchScope
from agent.retrieval.hybrid import hybrid_search
from agent.retrieval.types import RetrievedChunk, chunk_payload
from agent.services import get_services


def to_document(chunk: RetrievedChunk) -> Document:
    """A retrieved chunk as a LangChain ``Document`` (child text, citation in metadata)."""
    metadata = chunk_payload(chunk)
    del metadata["text"], metadata["context_text"]
    metadata["parent_text"] = chunk.record.parent_text
    return Document(id=metadata["chunk_id"], page_content=chunk.record.text, metadata=metadata)


class QuireRetriever(BaseRetriever):
    """Hybrid (pgvector + BM25, weighted RRF) search over one user's visible documents."""

    user_id: uuid.UUID
    k: int = 5
    document_ids: tuple[uuid.UUID, ...] | None = None
    corpus: str | None = None

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        services = await get_services()
        scope = SearchScope(
            user_id=self.user_id, document_ids=self.document_ids, corpus=self.corpus
        )
        return [to_document(c) for c in await hybrid_search(services, scope, query, self.k)]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        raise NotImplementedError("QuireRetriever is async: use ainvoke")
