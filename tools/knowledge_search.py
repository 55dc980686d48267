"""``search_knowledge``: the user's documents as a LangChain tool (for ReAct agents).

It returns seed 004's shape as JSON: ``answerHints`` (context with ``#chk_`` ids to cite),
``citations`` and ``searchMetadata``.
"""

from __future__ import annotations

import json
import uuid

from langchain_core.tools import BaseTool, tool

from agent.db.scope import SearchScope
from agent.retrieval.knowledge import knowledge_response, knowledge_search
from agent.retrieval.search import SearchOptions
from agent.services import get_services


def knowledge_search_tool(
    user_id: uuid.UUID,
    k: int = 5,
    *,
    document_ids: tuple[uuid.UUID, ...] | None = None,
    corpus: str | None = None,
) -> BaseTool:
    """A ``search_knowledge`` tool bound to one user's visible documents."""
    scope = SearchScope(user_id=user_id, document_ids=document_ids, corpus=corpus)

    @tool
    async def search_knowledge(query: str) -> str:
        """Search the user's uploaded documents and books. Returns JSON with answerHints
        (passages labelled with #chk_ ids to cite), citations and searchMetadata."""
        services = await get_services()
        found = await knowledge_search(
            services, scope, query, SearchOptions(k=k, query_type="tool")
        )
        return json.dumps(knowledge_response(found, services.settings.snippet_chars))

    return search_knowledge
