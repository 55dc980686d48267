"""Documents first, through the chat graph on the real database: trap questions ("who won",
"today", "the latest news"...) answered from the book with or without a web key, the web only
after a miss or when asked for, broad questions with the general settings, and the route
record (reason, mode, confidence) in the state and in the saved message."""

from __future__ import annotations

import uuid

import pytest
from langchain_core.messages import HumanMessage
from pydantic import SecretStr
from sqlalchemy import text

import agent.chat.retrieval_step as retrieval_step
import agent.chat.web as chat_web
from agent.ingest.pipeline import ingest_bytes
from agent.web_search import WebResult
from graphs.chat import graph
from graphs.context import Context
from tests.support.samples import alice_chapters

CAUCUS = "Who won the Caucus-race?"


def _ask(question: str):
    return {"messages": [HumanMessage(question)]}


@pytest.fixture(scope="module")
async def caucus_reader(services):
    """A user with chapter III of Alice in Wonderland (the Caucus-race); every question is
    asked in a new chat."""
    from agent.library.accounts import resolve_user

    user = await resolve_user(services, f"caucus-{uuid.uuid4().hex[:6]}")
    chapter = alice_chapters("CHAPTER III.", "CHAPTER IV.").encode()
    await ingest_bytes(services, user.id, chapter, "alice-3.txt", title="Alice chapter III")
    return user


@pytest.fixture
def web_calls(services, monkeypatch):
    """A web key and a fake SerpAPI search that records its queries."""
    calls: list[str] = []

    async def fake_search(query, settings):
        calls.append(query)
        return [WebResult("#web_1", "Scores", "https://news.example/s", "2-1.", "news.example")]

    monkeypatch.setattr(services.settings, "serpapi_api_key", SecretStr("test-key"))
    monkeypatch.setattr(chat_web, "search_web", fake_search)
    return calls


async def _saved_routing(services, message_id: str) -> dict:
    async with services.engine.connect() as conn:
        metrics = (
            await conn.execute(
                text("SELECT retrieval_metrics FROM chat_messages WHERE id = :m"),
                {"m": uuid.UUID(message_id)},
            )
        ).scalar()
    return metrics["routing"]


async def test_a_trap_question_is_answered_from_the_book_without_a_key(services, caucus_reader):
    state = await graph.ainvoke(_ask(CAUCUS), context=Context(user=caucus_reader.name))
    assert state["route"] == "hybrid" and "Web search" not in state["answer"]
    # cited: the race's passages (who won it, or the Caucus-race itself), not the web
    assert state["citations"] and any(
        "won" in c["text"] or "Caucus-race" in c["text"] for c in state["citations"]
    )
    assert state["route_reason"].startswith("specific question")
    assert "fresh facts" in state["route_reason"]
    saved = await _saved_routing(services, state["message_id"])
    assert saved == state["routing"]
    assert saved["route"] == "hybrid" and saved["mode"] == "specific"
    assert saved["reason"] == state["route_reason"]
    assert saved["confidence"] in ("high", "medium")


async def test_a_trap_question_stays_on_the_book_with_a_key(services, caucus_reader, web_calls):
    state = await graph.ainvoke(_ask(CAUCUS), context=Context(user=caucus_reader.name))
    assert state["route"] == "hybrid" and state["citations"]
    assert web_calls == []  # the book covered it: no web search at all


async def test_fresh_facts_the_book_misses_go_to_the_web_only_with_a_key(
    services, caucus_reader, monkeypatch
):
    question = "What is the exchange rate of the euro to the yen today?"
    off = await graph.ainvoke(_ask(question), context=Context(user=caucus_reader.name))
    assert off["route"] == "hybrid" and off["model_used"] == "no_context_response"
    assert "don't seem to cover" in off["answer"] and "not configured" in off["answer"]
    assert off["routing"]["confidence"] == "low"


async def test_fresh_facts_fall_back_to_the_web_after_a_miss(services, caucus_reader, web_calls):
    question = "What is the exchange rate of the euro to the yen today?"
    on = await graph.ainvoke(_ask(question), context=Context(user=caucus_reader.name))
    assert on["route"] == "web_search" and web_calls == [question]
    assert on["routing"]["reason"] == "documents did not cover it and it asks for fresh facts"
    assert on["routing"]["mode"] == "specific"  # the documents were searched first


async def test_an_explicit_web_request_goes_to_the_web_at_once(services, caucus_reader, web_calls):
    state = await graph.ainvoke(
        _ask("Search the web for the Caucus-race"), context=Context(user=caucus_reader.name)
    )
    assert state["route"] == "web_search" and state["routing"]["reason"] == "explicit web request"
    assert state["retrieval"] == {} and state["routing"]["mode"] is None
    assert web_calls == ["Search the web for the Caucus-race"]


@pytest.fixture
def searches(monkeypatch) -> list:
    """The turn's document searches, recorded as (options, max_chars, what was found)."""
    seen: list = []
    search = retrieval_step.knowledge_search

    async def recording(services, scope, query, options, **kwargs):
        found = await search(services, scope, query, options, **kwargs)
        seen.append((options, kwargs.get("max_chars"), found))
        return found

    monkeypatch.setattr(retrieval_step, "knowledge_search", recording)
    return seen


@pytest.mark.parametrize(
    ("question", "mode", "k", "threshold"),
    [
        ("Tell me about the Dodo", "general", 10, 0.5),
        ("What themes run through the Caucus-race?", "general", 10, 0.5),
        ("What does the Dodo propose?", "specific", 5, 0.7),
        ("Why does the Mouse tell a long tale?", "deep", 15, 0.6),
    ],
)
async def test_broad_questions_search_with_the_general_settings(
    services, caucus_reader, searches, question, mode, k, threshold
):
    state = await graph.ainvoke(_ask(question), context=Context(user=caucus_reader.name))
    assert [(o.k, o.threshold, o.query_type) for o, _, _ in searches] == [(k, threshold, mode)]
    assert state["retrieval"]["query_type"] == mode and state["routing"]["mode"] == mode
    assert state["retrieval"]["threshold"] == threshold


async def test_fixed_replies_say_why_with_no_confidence(services, caucus_reader):
    for question, route, reason in [
        ("What is your name?", "direct", "name question: a fixed reply"),
        ("hello!", "general", "small talk: no retrieval"),
    ]:
        state = await graph.ainvoke(_ask(question), context=Context(user=caucus_reader.name))
        assert state["route"] == route and state["route_reason"] == reason
        assert state["routing"] == {
            "route": route,
            "reason": reason,
            "mode": None,
            "confidence": "n/a",
        }


@pytest.mark.parametrize(
    ("spec", "passages", "budget"),
    [("local", "local_top_k_deep", "local_deep_context_chars"), ("openai:x", "top_k_deep", None)],
)
async def test_deep_reasoning_on_the_cpu_model_reads_fewer_passages(
    services, alice_reader, monkeypatch, searches, spec, passages, budget
):
    # the 1.5B model reads ~110 prompt tokens/s: Path C gets a few focused passages there,
    # and the seed's 15 within the larger budget on a hosted model
    from langchain_core.language_models import FakeListChatModel

    from agent.db.scope import SearchScope

    user, book = alice_reader
    settings = services.settings
    monkeypatch.setattr(settings, "query_expansion", False)
    state = {
        "question": "Why does Alice keep changing size, and how does she feel about it?",
        "chat_id": str(uuid.uuid4()),
        "route": "deep_reasoning",
        "memory": {},
    }
    update = await retrieval_step.retrieve_context(
        services,
        state,
        model=FakeListChatModel(responses=["unused"]),
        spec=spec,
        scope=SearchScope(user_id=user.id, document_ids=(book.document_id,)),
    )
    [(options, max_chars, found)] = searches
    assert options.k == getattr(settings, passages) and options.query_type == "deep"
    assert max_chars == (getattr(settings, budget) if budget else settings.max_context_chars)
    assert 0 < len(found.result.chunks) <= options.k
    # the hosted model's context is longer than the CPU model's whole budget
    fits = len(update["context"]) <= settings.local_deep_context_chars
    assert fits == (spec == "local"), len(update["context"])


async def test_the_cpu_model_fills_a_fresh_question_and_keeps_a_follow_up_to_the_threshold(
    services, alice_reader, monkeypatch, searches
):
    # filling past the threshold gives the 1.5B model the fused ranking's second passage; a
    # follow-up continuing its chat's exchange keeps to the threshold, since every passage
    # the exchange did not show is read afresh; a new question in that chat fills again
    from langchain_core.language_models import FakeListChatModel

    from agent.chat.follow_up import EXCHANGES, Exchange, scope_key
    from agent.db.scope import SearchScope

    user, book = alice_reader
    settings = services.settings
    monkeypatch.setattr(settings, "query_expansion", False)
    scope = SearchScope(user_id=user.id, document_ids=(book.document_id,))
    chat = str(uuid.uuid4())
    question = "What is the Caterpillar smoking when Alice meets it?"

    async def context(state: dict) -> dict:
        return await retrieval_step.retrieve_context(
            services, state, model=FakeListChatModel(responses=["-"]), spec="local", scope=scope
        )

    state = {"question": question, "chat_id": chat, "route": "hybrid", "memory": {}}
    fresh = await context(state)
    EXCHANGES.remember(chat, Exchange((), "-", tuple(fresh["retrieved"]), scope_key(state)))
    try:
        await context({**state, "question": "What else does it do?"})
        await context({**state, "question": "Who won the Caucus-race?"})
    finally:
        EXCHANGES.forget(chat)
    monkeypatch.setattr(settings, "threshold_admitted_floor_local", None)
    await context({**state, "chat_id": str(uuid.uuid4())})
    (filled, _, found), (follow_up, _, _), (new_topic, _, _), (_, _, filtered) = searches
    assert filled.admitted_floor == 0.5 and new_topic.admitted_floor == 0.5
    assert follow_up.admitted_floor is None
    assert len(found.context.chunks) > len(filtered.context.chunks)
    assert "hookah" in fresh["context"]
