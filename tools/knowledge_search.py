"""``search_knowledge``: the user's documents as a LangChain tool (for ReAct agents)."""

from __future__ import annotations

import uuid

from langchain_core.tools import BaseTool, tool

from agent.retrieval.retriever import QuireRetriever


def knowledge_search_tool(user_id: uuid.UUID, k: int = 5) -> BaseTool:
    """A ``search_knowledge`` tool bound to one user's visible documents."""
    retriever = QuireRetriever(user_id=user_id, k=k)

    @tool
    async def search_knowledge(query: str) -> str:
        """Search the user's uploaded documents and books; returns passages with #chk_ ids to cite."""
        docs = await retriever.ainvoke(query)
        if not docs:
            return "No passage in the user's documents matches this query."
        return "\n\n".join(
            f"{d.metadata['id']} [{d.metadata['source']}]\n{d.page_content}" for d in docs
        )

    return search_knowledge
