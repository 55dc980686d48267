"""The ``since``/``until`` window on the real Postgres: every retrieval query respects it
(dense, BM25 in SQL and from the in-memory copy, the last-resort layer), per user, with time
decay still ordering what is inside; and chat turns set it through the graph Context."""

from __future__ import annotations

import uuid

import pytest
from langchain_core.messages import HumanMessage
from sqlalchemy import text

from agent.db.scope import SearchScope
from agent.ingest.pipeline import ingest_bytes
from agent.retrieval.knowledge import knowledge_search
from agent.retrieval.search import SearchOptions, clear_search_cache, search
from agent.retrieval.time_window import parse_time_window
from graphs.chat import graph
from graphs.context import Context

# how many days old each document is made, and its text: each mentions quartz
AGES = {
    "ancient": (40, "The lens of the old Leith lighthouse is made of quartz, ground by hand."),
    "lastweek": (5, "The Dundee quarry sells crystals made of quartz at the winter market."),
    "today": (0.2, "The Aberdeen harbour clock is made of quartz and keeps good time."),
}


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_search_cache()
    yield
    clear_search_cache()


async def _aged_library(services, user) -> dict[str, uuid.UUID]:
    """The three documents for ``user``, created ``AGES`` days ago: name -> document id."""
    ids = {}
    for name, (days, body) in AGES.items():
        doc = await ingest_bytes(
            services, user.id, f"{body} ({uuid.uuid4().hex[:6]})".encode(), f"{name}.txt"
        )
        async with services.engine.begin() as conn:
            await conn.execute(
                text(
                    "UPDATE documents SET created_at = now() - make_interval(secs => :s) "
                    "WHERE id = :d"
                ),
                {"s": days * 86400, "d": doc.document_id},
            )
        ids[name] = doc.document_id
    return ids


def _found(result, ids: dict[str, uuid.UUID]) -> set[str]:
    by_id = {v: k for k, v in ids.items()}
    return {by_id.get(c.record.document_id, "someone else's") for c in result.chunks}


WINDOWS = [
    (None, None, {"ancient", "lastweek", "today"}),
    ("7d", None, {"lastweek", "today"}),
    ("48h", None, {"today"}),
    (None, "7d", {"ancient"}),
    ("30d", "24h", {"lastweek"}),
    ("all", "all", {"ancient", "lastweek", "today"}),
]


@pytest.mark.parametrize("memory_bm25", [True, False])
async def test_every_retrieval_path_keeps_to_the_window(
    services, new_user, monkeypatch, memory_bm25
):
    monkeypatch.setattr(services.settings, "bm25_memory_index", memory_bm25)
    user, other = await new_user("window"), await new_user("window-other")
    ids = await _aged_library(services, user)
    await _aged_library(services, other)  # recent documents of someone else: never seen
    for since, until, expected in WINDOWS:
        scope = parse_time_window(since, until).narrow(SearchScope(user_id=user.id))
        for mode in ("hybrid", "dense", "bm25"):
            found = await search(services, scope, "quartz", SearchOptions(k=10, mode=mode))
            assert _found(found, ids) == expected, (since, until, mode)
        # the fallback layers down to "any chunk" stay inside the window too
        layered = await search(
            services, scope, "zebra xylophone", SearchOptions(k=10, threshold=0.99)
        )
        assert _found(layered, ids) <= expected, (since, until)


async def test_time_decay_still_orders_inside_the_window(services, new_user, monkeypatch):
    user = await new_user("window-decay")
    ids = await _aged_library(services, user)
    scope = parse_time_window("30d").narrow(SearchScope(user_id=user.id))
    monkeypatch.setattr(services.settings, "time_decay_half_life_days", 0.5)
    monkeypatch.setattr(services.settings, "mmr_lambda", 1.0)
    decayed = await knowledge_search(services, scope, "quartz", SearchOptions(k=5))
    assert [c.record.document_id for c in decayed.result.chunks] == [
        ids["today"],
        ids["lastweek"],
    ]
    assert decayed.result.chunks[1].score < decayed.result.chunks[0].score


def _ask(question: str):
    return {"messages": [HumanMessage(question)]}


async def _context_documents(services, state, names: dict[str, str]) -> set[str]:
    """The names of the documents whose chunks were in the turn's context."""
    chunk_ids = [uuid.UUID(c) for c in state["chunk_map"].values()]
    async with services.engine.connect() as conn:
        found = await conn.execute(
            text("SELECT document_id FROM child_chunks WHERE id = ANY(:ids)"), {"ids": chunk_ids}
        )
        return {names[str(d)] for d in found.scalars()}


async def test_chat_turns_take_the_window_from_the_graph_context(services, new_user):
    user = await new_user("window-chat")
    ids = await _aged_library(services, user)
    names = {str(v): k for k, v in ids.items()}
    question = "What is made of quartz?"
    chat = str(uuid.uuid4())
    recent = await graph.ainvoke(
        _ask(question), context=Context(user=user.name, chat_id=chat, since="7d", top_k=5)
    )
    assert await _context_documents(services, recent, names) == {"lastweek", "today"}
    assert recent["time_window"]["since"] is not None
    assert recent["time_window"]["until"] is None
    old = await graph.ainvoke(
        _ask(question), context=Context(user=user.name, chat_id=chat, until="7d", top_k=5)
    )
    assert await _context_documents(services, old, names) == {"ancient"}, old
    async with services.engine.connect() as conn:
        saved = (
            (
                await conn.execute(
                    text(
                        "SELECT retrieval_metrics FROM chat_messages WHERE chat_id = :c "
                        "AND role = 'assistant' ORDER BY created_at"
                    ),
                    {"c": uuid.UUID(chat)},
                )
            )
            .scalars()
            .all()
        )
    assert saved[0]["time_window"]["since"] == recent["time_window"]["since"]
    assert saved[1]["time_window"] == old["time_window"]
    # the next turn without a window sees everything again
    everything = await graph.ainvoke(
        _ask(question), context=Context(user=user.name, chat_id=chat, top_k=5)
    )
    assert await _context_documents(services, everything, names) == set(AGES)
    assert not everything["time_window"].get("since")


async def test_an_unreadable_window_in_the_context_is_refused_plainly(services, new_user):
    user = await new_user("window-bad")
    await _aged_library(services, user)
    state = await graph.ainvoke(
        _ask("What is made of quartz?"),
        context=Context(user=user.name, since="2025-03-05", until="2025-03-01"),
    )
    assert "must be after 'since'" in state["answer"] and state["citations"] == []
    bad = await graph.ainvoke(
        _ask("What is made of quartz?"), context=Context(user=user.name, since="last tuesday")
    )
    assert "cannot read the time 'last tuesday'" in bad["answer"]
