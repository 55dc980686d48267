"""Planted conflicts on the real Postgres: both sides survive diversity (MMR), the top k and
the context budget, and the answer (extractive model) cites both and asks which source to
trust, on Path A and Path C; the conflicts are recorded with the turn."""

from __future__ import annotations

import uuid

import pytest
from langchain_core.messages import HumanMessage
from sqlalchemy import text

from agent.db.scope import SearchScope
from agent.ingest.pipeline import ingest_bytes
from agent.retrieval.citations import cited_ids
from agent.retrieval.knowledge import knowledge_response, knowledge_search
from agent.retrieval.search import SearchOptions, clear_search_cache
from graphs.chat import graph
from graphs.context import Context

BRIDGE_A = "The harbour bridge at Kestrel Bay opened in 1921 after six years of work."
BRIDGE_B = "The harbour bridge at Kestrel Bay opened in 1932 after six years of work."
FILLERS = [
    "The harbour master of Kestrel Bay keeps a log of every ship and its cargo.",
    "Fishing boats leave the harbour at dawn and return with herring and mackerel.",
    "A toll was charged at the harbour gate until the town council abolished it.",
    "The harbour walls were built of granite brought by cart from the hills.",
]


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_search_cache()
    yield
    clear_search_cache()


async def _library(services, user) -> dict[str, uuid.UUID]:
    """Two documents that disagree on a year, and four about the same harbour that don't."""
    docs = {}
    for name, body in [("a", BRIDGE_A), ("b", BRIDGE_B)] + [
        (f"filler{i}", f) for i, f in enumerate(FILLERS)
    ]:
        doc = await ingest_bytes(services, user.id, body.encode(), f"{name}.txt")
        docs[name] = doc.document_id
    return docs


QUESTION = "When did the harbour bridge at Kestrel Bay open?"


async def test_both_sides_survive_diversity_the_top_k_and_the_budget(
    services, new_user, monkeypatch
):
    user = await new_user("conflicts")
    docs = await _library(services, user)
    scope = SearchScope(user_id=user.id)
    sides = {docs["a"], docs["b"]}

    # near-identical passages: MMR weighted to diversity keeps one of them and spends the
    # other slot elsewhere (at 0.5 the fillers are too far below to win the slot)
    monkeypatch.setattr(
        services, "settings", services.settings.model_copy(update={"mmr_lambda": 0.3})
    )
    plain = await knowledge_search(
        services, scope, QUESTION, SearchOptions(k=2, keep_conflicts=False)
    )
    plain_docs = {c.record.document_id for c in plain.result.chunks}
    assert len(plain_docs & sides) == 1 and plain.result.conflicts == []

    for k, budget in [(2, None), (3, 200), (1, 120)]:
        found = await knowledge_search(
            services, scope, QUESTION, SearchOptions(k=k), max_chars=budget
        )
        kept = {c.record.document_id for c in found.context.chunks}
        assert sides <= kept, (k, budget)
        [conflict] = found.conflicts
        assert conflict.kind == "year"
        assert {conflict.first_value, conflict.second_value} == {"1921", "1932"}
        assert set(conflict.ids) <= set(found.context.chunk_map)
    # the search API's shape names them too, and tells a model using it what to do
    response = knowledge_response(found)
    assert response["searchMetadata"]["conflicts"] == [conflict.as_dict()]
    assert "## Conflicts" in response["answerHints"] and conflict.first in response["answerHints"]


async def test_a_side_just_under_the_threshold_is_kept_with_its_partner(services, new_user):
    user = await new_user("conflict-threshold")
    runs = "The Kestrel Bay ferry runs on Sundays during the summer season."
    does_not = "The Kestrel Bay ferry does not run on Sundays during the summer season."
    ids = {}
    for name, body in [("runs", runs), ("not", does_not), ("f0", FILLERS[0]), ("f1", FILLERS[1])]:
        doc = await ingest_bytes(services, user.id, body.encode(), f"{name}.txt")
        ids[name] = doc.document_id
    scope = SearchScope(user_id=user.id)
    question = "Does the Kestrel Bay ferry run on Sundays?"
    # the negation is less similar to the question (0.69 against 0.87 with the local
    # embedder): the 0.7 threshold alone would keep only one side
    alone = await knowledge_search(
        services, scope, question, SearchOptions(k=2, threshold=0.7, keep_conflicts=False)
    )
    assert {c.record.document_id for c in alone.context.chunks} == {ids["runs"]}
    both = await knowledge_search(services, scope, question, SearchOptions(k=2, threshold=0.7))
    assert {c.record.document_id for c in both.context.chunks} == {ids["runs"], ids["not"]}
    [conflict] = both.conflicts
    assert conflict.kind == "negation"


def _ask(question: str):
    return {"messages": [HumanMessage(question)]}


async def _saved_metrics(services, chat_id: str) -> dict:
    async with services.engine.connect() as conn:
        return (
            await conn.execute(
                text(
                    "SELECT retrieval_metrics FROM chat_messages WHERE chat_id = :c "
                    "AND role = 'assistant'"
                ),
                {"c": uuid.UUID(chat_id)},
            )
        ).scalar_one()


@pytest.mark.parametrize(
    ("question", "route"),
    [
        (QUESTION, "hybrid"),
        (
            "Why do the sources disagree on when the harbour bridge at Kestrel Bay opened?",
            "deep_reasoning",
        ),
    ],
)
async def test_the_answer_cites_both_sides_and_asks_which_to_trust(
    services, new_user, question, route
):
    user = await new_user("conflict-answer")
    docs = await _library(services, user)
    state = await graph.ainvoke(_ask(question), context=Context(user=user.name, top_k=2))
    assert state["route"] == route
    [conflict] = state["conflicts"]
    sides = {conflict["first"], conflict["second"]}
    by_id = {c["id"]: c["document_id"] for c in state["citations"]}
    assert {by_id[cid] for cid in sides} == {str(docs["a"]), str(docs["b"])}
    answer = state["answer"]
    # the extractive model quotes one sentence; the other side is added with its id
    assert sides <= set(cited_ids(answer))
    assert "1921" in answer and "1932" in answer
    assert "Which source should I trust" in answer
    saved = await _saved_metrics(services, state["chat_id"])
    assert saved["conflicts"] == state["conflicts"]


async def test_no_conflict_no_section(services, new_user):
    user = await new_user("conflict-none")
    for i, body in enumerate(FILLERS):
        await ingest_bytes(services, user.id, body.encode(), f"f{i}.txt")
    state = await graph.ainvoke(
        _ask("What do the fishing boats bring back?"), context=Context(user=user.name)
    )
    assert state["conflicts"] == []
    assert "Conflict detected" not in state["answer"] and "trust" not in state["answer"]
