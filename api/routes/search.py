"""API routes: knowledge search over the documents the user can read (seed 004's shape)."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from fastapi import APIRouter
from pydantic import Field, StringConstraints

from agent.db.scope import SearchScope
from agent.retrieval.knowledge import knowledge_response, knowledge_search
from agent.retrieval.search import SearchOptions
from api.deps import RequestBody, ServicesDep, UserDep, time_window

router = APIRouter(tags=["search"])


class SearchRequest(RequestBody):
    """``POST /api/search`` body."""

    query: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=4000)]
    k: int | None = Field(default=None, ge=1, le=100)
    corpus: str | None = None
    document_ids: list[uuid.UUID] | None = Field(default=None, max_length=500)
    mode: Literal["hybrid", "dense", "bm25"] = "hybrid"
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    expand: bool = False
    rerank: bool = False
    since: Annotated[str, StringConstraints(strip_whitespace=True, max_length=64)] | None = None
    """Only documents created since (ISO date or date-time, 24h, 48h, 7d, 1w or all)."""
    until: Annotated[str, StringConstraints(strip_whitespace=True, max_length=64)] | None = None
    """Only documents created before (ISO date: that whole day included, or an age)."""


@router.post("/search")
async def search(body: SearchRequest, services: ServicesDep, user: UserDep) -> dict:
    """Search the user's own and shared documents: ``{answerHints, citations, searchMetadata}``.

    The scope is always the authenticated user; ``corpus``, ``document_ids`` and the
    ``since``/``until`` window only narrow it (ids of documents the user cannot read simply
    match nothing). An unreadable window: 422 ``invalid_time_window``.
    """
    settings = services.settings
    window = time_window(body.since, body.until)
    scope = SearchScope(
        user_id=user.id,
        document_ids=tuple(body.document_ids) if body.document_ids is not None else None,
        corpus=body.corpus,
    )
    scope = window.narrow(scope)
    options = SearchOptions(
        k=body.k or settings.top_k_specific,
        mode=body.mode,
        threshold=body.threshold,
        expand=body.expand,
        rerank=body.rerank,
        query_type="knowledge_search",
    )
    found = await knowledge_search(services, scope, body.query, options)
    response = knowledge_response(found, settings.snippet_chars)
    response["searchMetadata"]["timeWindow"] = window.as_dict() if window.is_set else None
    return response
