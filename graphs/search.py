"""The ``search`` graph: knowledge search as a graph or subgraph (seed 004's API shape).

    START -> search -> END

Input: ``query`` plus optional filters and switches; output: ``answerHints`` (markdown for
a model), ``citations`` (with query-aware snippets) and ``searchMetadata``. Other graphs
can add it as a node, or call the ``search_knowledge`` tool built on the same service.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from agent.db.scope import SearchScope, window_start
from agent.library.accounts import resolve_user
from agent.retrieval.knowledge import knowledge_response, knowledge_search
from agent.retrieval.search import SearchOptions
from agent.retrieval.time_window import parse_time_window
from agent.services import get_services


@dataclass(kw_only=True)
class SearchContext:
    """Whose documents are searched."""

    user: str = field(
        default="local",
        metadata={"description": "User name whose documents (and shares) are searched."},
    )


class SearchInput(TypedDict, total=False):
    """A query and optional filters (seed 004 request fields)."""

    query: str
    topK: int
    corpus: str
    documentIds: list[str]
    docTypes: list[str]
    timeWindow: str
    since: str
    until: str
    mode: str
    similarityThreshold: float
    enableQueryExpansion: bool
    rerank: bool


class SearchOutput(TypedDict, total=False):
    """Seed 004 response fields."""

    answerHints: str
    citations: list[dict]
    searchMetadata: dict


class SearchState(SearchInput, SearchOutput, total=False):
    """Input and output together."""


def search_options(request: SearchInput, default_k: int) -> SearchOptions:
    """Seed 004 request fields as :class:`SearchOptions`."""
    return SearchOptions(
        k=max(1, min(int(request.get("topK") or default_k), 100)),
        mode=request.get("mode") or "hybrid",  # type: ignore[arg-type]
        threshold=request.get("similarityThreshold"),
        expand=bool(request.get("enableQueryExpansion")),
        rerank=bool(request.get("rerank")),
        query_type="knowledge_search",
    )


def search_scope(user_id: uuid.UUID, request: SearchInput) -> SearchScope:
    """Seed 004 filter fields as a :class:`SearchScope` for ``user_id``; ``since``/``until``
    (:mod:`agent.retrieval.time_window`) narrow it further."""
    ids = request.get("documentIds")
    types = request.get("docTypes")
    scope = SearchScope(
        user_id=user_id,
        document_ids=tuple(uuid.UUID(i) for i in ids) if ids else None,
        corpus=request.get("corpus"),
        doc_types=tuple(t.upper() for t in types) if types else None,
        created_after=window_start(request.get("timeWindow")),  # type: ignore[arg-type]
    )
    window = parse_time_window(request.get("since"), request.get("until"))
    return window.narrow(scope)


async def run_search(state: SearchState, runtime: Runtime[SearchContext]) -> dict:
    """Search the user's visible documents and answer in seed 004's shape."""
    services = await get_services()
    user = await resolve_user(services, (runtime.context or SearchContext()).user)
    found = await knowledge_search(
        services,
        search_scope(user.id, state),
        state.get("query", ""),
        search_options(state, services.settings.top_k_specific),
    )
    return knowledge_response(found, services.settings.snippet_chars)


builder = StateGraph(
    SearchState, input_schema=SearchInput, output_schema=SearchOutput, context_schema=SearchContext
)
builder.add_node("search", run_search)
builder.add_edge(START, "search")
builder.add_edge("search", END)
graph = builder.compile(name="search")
