"""End to end on the real packaged local model (llama.cpp, CPU): slow, so only a few."""

import uuid

import pytest
from langchain_core.messages import HumanMessage
from sqlalchemy import text

from agent.retrieval.citations import cited_ids
from graphs.chat import graph
from graphs.context import Context

pytestmark = pytest.mark.local_model


async def test_local_model_answers_with_valid_citations(services, alice_reader):
    user, _ = alice_reader
    state = await graph.ainvoke(
        {"messages": [HumanMessage("Who is Dinah?")]},
        context=Context(user=user.name, chat_model="local"),
    )
    assert state["route"] == "hybrid"
    assert state["model_used"].startswith("investigator_qwen2.5")
    assert "cat" in state["answer"].lower()
    ids = cited_ids(state["answer"])
    assert ids and set(ids) == {c["id"] for c in state["citations"]}
    assert any("Dinah" in c["text"] for c in state["citations"])
    assert state["tokens_used"] > 100


async def test_local_model_is_not_misled_by_the_cheshire_cat(services, alice_reader):
    # The 1.5B model's prior says "the Cheshire Cat"; with the Cheshire passages as
    # distractors in a 4-passage context it answered so 2 times in 3. Two diverse passages
    # (MMR, one child per parent) keep it on the text.
    user, _ = alice_reader
    state = await graph.ainvoke(
        {"messages": [HumanMessage("Who is Alice's cat?")]},
        context=Context(user=user.name, chat_model="local"),
    )
    async with services.engine.connect() as conn:
        shown = await conn.execute(
            text("SELECT text FROM child_chunks WHERE id = ANY(:ids)"),
            {"ids": [uuid.UUID(i) for i in state["chunk_map"].values()]},
        )
        assert any("Dinah" in row.text for row in shown)
    ids = cited_ids(state["answer"])
    assert set(ids) == {c["id"] for c in state["citations"]}
    assert set(ids) <= set(state["chunk_map"])
    assert "Dinah" in state["answer"]
    assert any("Dinah" in c["text"] for c in state["citations"])


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
