"""End to end on the real packaged local model (llama.cpp, CPU): slow, so only a few."""

import pytest
from langchain_core.messages import HumanMessage

from agent.retrieval.citations import cited_ids
from graphs.chat import graph
from graphs.context import Context

pytestmark = pytest.mark.local_model


async def test_local_model_answers_with_valid_citations(services, alice_reader):
    user, _ = alice_reader
    state = await graph.ainvoke(
        {"messages": [HumanMessage("Who is Alice's cat?")]},
        context=Context(user=user.name, chat_model="local"),
    )
    assert state["route"] == "hybrid"
    assert state["model_used"].startswith("investigator_qwen2.5")
    assert "Dinah" in state["answer"]
    ids = cited_ids(state["answer"])
    assert ids and set(ids) == {c["id"] for c in state["citations"]}
    assert any("Dinah" in c["text"] for c in state["citations"])
    assert state["tokens_used"] > 100


async def test_local_model_streams_small_talk(services):
    chunks = []
    async for chunk, meta in graph.astream(
        {"messages": [HumanMessage("hello!")]},
        context=Context(user="local-smalltalk", chat_model="local"),
        stream_mode="messages",
    ):
        if meta["langgraph_node"] == "general" and chunk.content:
            chunks.append(chunk.content)
    assert len(chunks) > 2
