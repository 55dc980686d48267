"""The chat graph end to end on the real database, with the LLM-free extractive model."""

import uuid

import pytest
from langchain_core.messages import AIMessageChunk, HumanMessage
from sqlalchemy import text

from agent.db.chats import ChatOwnershipError, list_messages
from agent.retrieval.citations import cited_ids
from agent.retrieval.search import forget_question_vectors
from graphs.chat import graph
from graphs.context import Context


def _ask(question: str):
    return {"messages": [HumanMessage(question)]}


async def test_name_question_is_answered_directly_without_retrieval(services):
    state = await graph.ainvoke(_ask("What is your name?"), context=Context(user="graph-direct"))
    assert state["route"] == "direct"
    assert state["model_used"] == "direct_response"
    assert services.settings.assistant_name in state["answer"]
    assert state["citations"] == []


async def test_small_talk_gets_a_reply_without_retrieval(services):
    state = await graph.ainvoke(_ask("hello there!"), context=Context(user="graph-smalltalk"))
    assert state["route"] == "general"
    assert state["model_used"].startswith("general_")
    assert state["citations"] == [] and state["answer"]


async def test_hybrid_answer_cites_only_retrieved_chunks_and_is_saved(services, alice_reader):
    user, _ = alice_reader
    chat_id = str(uuid.uuid4())
    state = await graph.ainvoke(
        _ask("Who is Dinah? Is she Alice's cat?"), context=Context(user=user.name, chat_id=chat_id)
    )
    assert state["route"] == "hybrid"
    ids = cited_ids(state["answer"])
    assert ids, state["answer"]
    assert set(ids) == {c["id"] for c in state["citations"]}
    assert set(ids) <= set(state["chunk_map"])
    assert any("Dinah" in c["text"] for c in state["citations"])
    for c in state["citations"]:
        assert state["chunk_map"][c["id"]] == c["chunk_id"]
        assert c["document"] == "Alice’s Adventures in Wonderland"

    async with services.engine.connect() as conn:
        messages = await list_messages(conn, user.id, uuid.UUID(chat_id))
        usage = (
            await conn.execute(
                text("SELECT chat_messages, tokens_used FROM usage_monthly WHERE user_id = :u"),
                {"u": user.id},
            )
        ).one()
    assert [m.role for m in messages] == ["user", "assistant"]
    question, reply = messages
    assert question.content == "Who is Dinah? Is she Alice's cat?" and question.model_used is None
    assert reply.content == state["answer"]
    assert reply.route == "hybrid"
    assert reply.model_used == "investigator_extractive"
    assert reply.tokens_used and reply.tokens_used > 0
    assert reply.chunk_map == state["chunk_map"]
    assert {str(i) for i in reply.retrieved_chunk_ids} == set(state["chunk_map"].values())
    assert reply.sources and reply.sources[0].startswith("Alice’s Adventures in Wonderland")
    assert usage.chat_messages >= 1 and usage.tokens_used >= reply.tokens_used
    async with services.engine.connect() as conn:
        metrics = (
            await conn.execute(
                text("SELECT retrieval_metrics FROM chat_messages WHERE id = :m"), {"m": reply.id}
            )
        ).scalar()
    assert metrics == {**state["retrieval"], "routing": state["routing"]}
    assert metrics["routing"]["route"] == "hybrid" and reply.routing == state["routing"]
    assert metrics["query_type"] == "specific" and metrics["threshold"] == 0.7
    assert metrics["layer"] in ("hybrid", "low_threshold") and metrics["results"] >= 1
    assert metrics["context_chars"] > 0
    assert {"embed", "retrieve", "fuse", "total", "context"} <= set(metrics["stages_ms"])


async def test_answer_streams_token_by_token(services, alice_reader):
    user, _ = alice_reader
    tokens = []
    async for chunk, meta in graph.astream(
        _ask("What did the Mock Turtle sing?"),
        context=Context(user=user.name),
        stream_mode="messages",
    ):
        if (
            isinstance(chunk, AIMessageChunk)
            and meta["langgraph_node"] == "generate"
            and chunk.content
        ):
            tokens.append(chunk.content)
    assert len(tokens) > 3


async def test_user_without_documents_gets_no_citations_from_others(services, alice_reader):
    state = await graph.ainvoke(
        _ask("Who is Alice's cat?"), context=Context(user=f"empty-{uuid.uuid4().hex[:6]}")
    )
    assert state["route"] == "hybrid"
    assert state["citations"] == [] and cited_ids(state["answer"]) == []
    assert state["model_used"] == "no_context_response"


async def test_a_chat_cannot_be_continued_by_another_user(services, alice_reader):
    user, _ = alice_reader
    chat_id = str(uuid.uuid4())
    await graph.ainvoke(_ask("hi"), context=Context(user=user.name, chat_id=chat_id))
    with pytest.raises(ChatOwnershipError):
        await graph.ainvoke(_ask("hi"), context=Context(user="intruder", chat_id=chat_id))


async def test_a_retrieval_turn_embeds_the_question_once(services, alice_reader, monkeypatch):
    """The router, the documents and the earlier discussions read one question vector."""
    user, _ = alice_reader
    forget_question_vectors()  # kept from an earlier test's turn, it would not be embedded
    embedder = services.embeddings.embedder
    asked: list[str] = []
    real = embedder.embed_query

    def counting(text: str) -> list[float]:
        asked.append(text)
        return real(text)

    monkeypatch.setattr(embedder, "embed_query", counting)
    state = await graph.ainvoke(
        _ask("Where does the White Rabbit live?"),
        context=Context(user=user.name, chat_id=str(uuid.uuid4())),
    )
    assert state["route"] == "hybrid"
    assert state["retrieval"]["results"] >= 1
    assert asked == ["Where does the White Rabbit live?"]
