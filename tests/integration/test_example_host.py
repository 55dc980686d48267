"""Quire's chat graph as a subgraph node, and its search graph as a tool of another graph."""

import json

from langchain_core.messages import AIMessageChunk, HumanMessage

from agent.retrieval.citations import cited_ids
from graphs.context import Context
from graphs.example_host import host_graph, search_graph_tool


async def test_chat_graph_runs_as_a_subgraph_and_streams_tokens(alice_reader):
    user, _ = alice_reader
    tokens, final = [], {}
    async for namespace, mode, payload in host_graph.astream(
        {"messages": [HumanMessage("Who is Dinah?")]},
        context=Context(user=user.name),
        stream_mode=["messages", "values"],
        subgraphs=True,
    ):
        if mode == "messages" and isinstance(payload[0], AIMessageChunk):
            tokens.append((namespace, payload[0].content))
        elif mode == "values" and not namespace:
            final = payload
    assert final["route"] == "hybrid" and final["label"] == "grounded"
    assert any(ns and ns[0].startswith("quire") for ns, _ in tokens)  # from inside the subgraph
    assert "".join(t for _, t in tokens).strip() and cited_ids(final["answer"])


async def test_search_graph_as_a_tool(alice_reader):
    user, _ = alice_reader
    search = search_graph_tool(user.name, top_k=2)
    result = json.loads(await search.ainvoke({"query": "the Mock Turtle"}))
    assert len(result["citations"]) == 2
    assert set(cited_ids(result["answerHints"])) == {c["id"] for c in result["citations"]}
