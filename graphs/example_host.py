"""An example of Quire inside another graph (not served by default).

* ``host_graph``: a host graph whose ``quire`` node *is* the compiled ``chat`` graph (a
  subgraph sharing the ``messages`` key); the host adds its own ``label`` step afterwards.
* ``search_graph_tool``: the ``search`` graph wrapped as a LangChain tool, so any agent in
  another graph (e.g. ``create_react_agent``) can search a user's documents.
"""

from __future__ import annotations

import json
from typing import Annotated

from langchain_core.messages import AnyMessage
from langchain_core.tools import BaseTool, tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from graphs.chat import graph as chat_graph
from graphs.context import Context
from graphs.search import SearchContext
from graphs.search import graph as search_graph


class HostState(TypedDict, total=False):
    """The host's own state; ``messages`` and the answer fields are shared with Quire."""

    messages: Annotated[list[AnyMessage], add_messages]
    answer: str
    route: str
    citations: list[dict]
    label: str


def label(state: HostState) -> dict:
    """A host step after Quire: tag the reply by whether it cites the user's documents."""
    return {"label": "grounded" if state.get("citations") else "ungrounded"}


builder = StateGraph(HostState, context_schema=Context)
builder.add_node("quire", chat_graph)
builder.add_node("label", label)
builder.add_edge(START, "quire")
builder.add_edge("quire", "label")
builder.add_edge("label", END)
host_graph = builder.compile(name="host_example")


def search_graph_tool(user: str, top_k: int = 5) -> BaseTool:
    """The ``search`` graph as a tool bound to ``user`` (seed 004's JSON shape)."""

    @tool
    async def search_documents(query: str) -> str:
        """Search the user's documents; returns JSON with answerHints (passages with #chk_
        ids to cite), citations and searchMetadata."""
        result = await search_graph.ainvoke(
            {"query": query, "topK": top_k}, context=SearchContext(user=user)
        )
        return json.dumps(result)

    return search_documents
