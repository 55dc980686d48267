"""Every path of the chat graph on the real database with fake or extractive models:
Path B (stored summary, ToC fallback), Path C (deep reasoning, planted conflict), the
relevance gate, web search (configured or not), book scope, corrections and memory."""

from __future__ import annotations

import uuid

import pytest
from langchain_core.messages import HumanMessage
from pydantic import SecretStr
from sqlalchemy import text

import agent.chat.web as chat_web
from agent import prompts
from agent.ingest.pipeline import ingest_bytes
from agent.memory.corrections import submit_correction
from agent.retrieval import held_words as held_words_module
from agent.retrieval.citations import cited_ids
from agent.summaries.builder import summarize_document
from agent.summaries.writers import ExtractiveSummaryWriter
from agent.web_search import WebResult
from graphs.chat import graph
from graphs.context import Context
from tests.support.fakes import RecordingModel, answer_with
from tests.support.samples import book_text


@pytest.fixture
def recorder(monkeypatch):
    return answer_with(monkeypatch, RecordingModel(prompts=[]))


def _ask(question: str):
    return {"messages": [HumanMessage(question)]}


async def _rows(services, chat_id: str):
    async with services.engine.connect() as conn:
        return (
            await conn.execute(
                text(
                    "SELECT role, content, route, model_used, retrieved_chunk_ids, sources, "
                    "chunk_map, tokens_used, retrieval_metrics FROM chat_messages "
                    "WHERE chat_id = :c ORDER BY created_at"
                ),
                {"c": uuid.UUID(chat_id)},
            )
        ).all()


async def test_path_b_uses_the_stored_summary_then_the_toc(services, new_user):
    user = await new_user("pathb")
    book = await ingest_bytes(services, user.id, book_text().encode(), "tale.txt")
    chat = str(uuid.uuid4())
    toc = await graph.ainvoke(
        _ask("Can you summarize this book?"), context=Context(user=user.name, chat_id=chat)
    )
    assert toc["route"] == "global_summary" and toc["model_used"] == "toc_fallback_path"
    await summarize_document(services, book.document_id, writer=ExtractiveSummaryWriter())
    stored = await graph.ainvoke(
        _ask("What is this book about?"), context=Context(user=user.name, chat_id=chat)
    )
    assert stored["model_used"] == "global_summary_path"
    rows = await _rows(services, chat)
    assert [r.model_used for r in rows if r.role == "assistant"] == [
        "toc_fallback_path",
        "global_summary_path",
    ]
    # a second book: "summarize" names no single book any more and takes Path A
    await ingest_bytes(services, user.id, b"A short note about walruses and oysters.", "n.txt")
    many = await graph.ainvoke(_ask("Summarize all my books"), context=Context(user=user.name))
    assert many["route"] == "hybrid"
    scoped = await graph.ainvoke(
        _ask("Give me an overview"), context=Context(user=user.name, book=str(book.document_id))
    )
    assert scoped["route"] == "global_summary"
    missing = await graph.ainvoke(_ask("overview"), context=Context(user=user.name, book="Nope"))
    assert "no document matching" in missing["answer"]


async def test_path_c_sees_both_sides_of_a_planted_conflict(services, new_user, recorder):
    user = await new_user("pathc")
    await ingest_bytes(
        services, user.id, b"The harbour bridge opened in 1921 after six years of work.", "a.txt"
    )
    await ingest_bytes(
        services, user.id, b"Records show the harbour bridge opened in 1932, not earlier.", "b.txt"
    )
    state = await graph.ainvoke(
        _ask("Why do the sources disagree on when the harbour bridge opened?"),
        context=Context(user=user.name),
    )
    assert state["route"] == "deep_reasoning"
    assert state["model_used"] == "deep_reasoner_extractive"
    system, human = recorder.prompts[-1]
    assert "1921" in human.content and "1932" in human.content  # both sides in the context
    assert "CONFLICT DETECTED" in system.content and "step by step" in system.content
    assert set(cited_ids(state["answer"])) <= set(state["chunk_map"])
    assert state["retrieval"]["query_type"] == "deep" and state["retrieval"]["threshold"] == 0.6


async def test_path_c_compares_from_passages_on_each_subject(services, new_user, recorder):
    user = await new_user("compare")
    await ingest_bytes(
        services,
        user.id,
        b"The harbour bridge opened in 1921 after six years of work. It carries two lanes.",
        "bridge.txt",
    )
    await ingest_bytes(
        services,
        user.id,
        b"The river tunnel opened in 1964. Trains use it every ten minutes at rush hour.",
        "tunnel.txt",
    )
    both = await graph.ainvoke(
        _ask("Compare the harbour bridge and the river tunnel."), context=Context(user=user.name)
    )
    assert both["route"] == "deep_reasoning"
    _, human = recorder.prompts[-1]
    assert "1921" in human.content and "1964" in human.content  # a passage on each side
    assert both["retrieval"]["queries"][:2] == ["the harbour bridge", "the river tunnel"]
    assert "missing_subjects" not in both["retrieval"]

    one = await graph.ainvoke(
        _ask("Compare the harbour bridge and the Golden Gate."), context=Context(user=user.name)
    )
    assert one["route"] == "deep_reasoning"
    assert one["retrieval"]["missing_subjects"] == ["the Golden Gate"]
    lead = prompts.MISSING_SUBJECTS.format(names="the Golden Gate")
    assert one["answer"].startswith(lead)
    assert set(cited_ids(one["answer"])) <= set(one["chunk_map"])

    neither = await graph.ainvoke(
        _ask("Compare the Golden Gate and the Brooklyn Bridge."), context=Context(user=user.name)
    )
    assert neither["model_used"] == "no_context_response"  # the documents do not cover it


async def test_relevance_gate_says_the_documents_do_not_cover_it(services, new_user):
    user = await new_user("gate")
    await ingest_bytes(services, user.id, b"The bakery sells rye bread on market days.", "a.txt")
    state = await graph.ainvoke(
        _ask("Explain quantum chromodynamics gauge symmetry"), context=Context(user=user.name)
    )
    assert state["model_used"] == "no_context_response"
    assert "don't seem to cover" in state["answer"] and state["citations"] == []


@pytest.fixture
async def notebook_reader(services, new_user, monkeypatch):
    """A user with one notebook entry that no question is near (every similarity layer
    out of reach, and no one chunk holding the question's words)."""
    user = await new_user("own-words")
    body = (
        b"Instruments: multiprobe number two (serial MP2-0448), kept for the whole season"
        b" by Ewan Lutterworth."
    )
    await ingest_bytes(services, user.id, body, "notebook.txt")
    for name in ("threshold_specific", "threshold_fallback", "threshold_sentence"):
        monkeypatch.setattr(services.settings, name, 0.995)
    monkeypatch.setattr(held_words_module, "WORDS_HELD_SHARE", 1.01)
    return user


async def test_a_question_in_the_documents_words_is_answered_from_them(notebook_reader):
    """No passage is near the question, but the notebook holds its words: it is answered
    from the passages, not as uncovered from general knowledge (where a small model makes
    up a serial number)."""
    state = await graph.ainvoke(
        _ask("Which serial number has the multiprobe we kept?"),
        context=Context(user=notebook_reader.name),
    )
    assert state["retrieval"]["layer"] == "question_words"
    assert state["model_used"] != "no_context_response" and "MP2-0448" in state["answer"]
    assert set(cited_ids(state["answer"])) <= set(state["chunk_map"]) and state["citations"]


async def test_a_question_naming_what_the_documents_use_gets_no_general_answer(
    notebook_reader, recording
):
    """A question the notebook cannot answer, about someone it names: "not covered",
    naming him, with no general answer made up and no model call; a question naming
    nothing of the notebook's still gets its general answer."""
    state = await graph.ainvoke(
        _ask("What is Ewan's favourite colour?"), context=Context(user=notebook_reader.name)
    )
    assert state["retrieval"]["layer"] == "any_embedded"
    assert state["retrieval"]["known_names"] == ["Ewan"]
    assert state["answer"] == prompts.NOT_COVERED_NAMED.format(names="“Ewan”")
    assert state["model_used"] == "no_context_response" and recording.prompts == []
    general = await graph.ainvoke(
        _ask("What is the capital of Peru?"), context=Context(user=notebook_reader.name)
    )
    assert general["retrieval"]["known_names"] == [] and len(recording.prompts) == 1
    assert "From general knowledge" in general["answer"]


async def test_a_fresh_facts_question_only_in_the_documents_words_goes_to_the_web(
    services, notebook_reader, monkeypatch
):
    """The notebook holds the question's words but no passage is near it: with a web key, a
    question wanting today's facts goes to the web, as when nothing was found."""

    async def fake_search(query, settings):
        return [WebResult("#web_1", "Probes", "https://probes.example", "£900.", "probes.example")]

    monkeypatch.setattr(services.settings, "serpapi_api_key", SecretStr("test-key"))
    monkeypatch.setattr(chat_web, "search_web", fake_search)
    monkeypatch.setattr(held_words_module, "KNOWN_WORDS_SHARE", 0.1)  # "latest", "price"
    state = await graph.ainvoke(
        _ask("What is the latest price of the multiprobe we kept?"),
        context=Context(user=notebook_reader.name),
    )
    assert state["retrieval"]["layer"] == "question_words"
    assert state["route"] == "web_search" and state["sources"] == ["https://probes.example"]


async def test_web_search_path(services, new_user, monkeypatch):
    user = await new_user("web")
    off = await graph.ainvoke(
        _ask("What is the latest news about AI?"), context=Context(user=user.name)
    )
    # no key: the documents first, then a plain "not covered, web search not configured"
    assert off["route"] == "hybrid" and "SERPAPI_API_KEY" in off["answer"]
    assert "don't seem to cover" in off["answer"] and off["model_used"] == "no_context_response"
    assert "not configured" in off["routing"]["reason"]

    async def fake_search(query, settings):
        return [
            WebResult(
                "#web_1",
                "AI news",
                "https://news.example/ai",
                "Models got smaller.",
                "news.example",
            )
        ]

    monkeypatch.setattr(services.settings, "serpapi_api_key", SecretStr("test-key"))
    monkeypatch.setattr(chat_web, "search_web", fake_search)
    on = await graph.ainvoke(
        _ask("What is the latest news about AI?"), context=Context(user=user.name)
    )
    assert on["route"] == "web_search" and on["model_used"] == "web_search_extractive"
    assert on["sources"] == ["https://news.example/ai"]
    # nothing in the (empty) library: the web after the documents missed
    assert on["routing"]["reason"] == "documents did not cover it and it asks for fresh facts"
    assert on["retrieval"]["layer"] in ("any_embedded", "any_chunk", "none")


async def test_a_correction_reaches_its_user_only(services, new_user, recorder):
    alice, bob = await new_user("corr"), await new_user("corr")
    for user in (alice, bob):
        await ingest_bytes(
            services,
            user.id,
            f"The lighthouse lamp is lit at dusk. ({user.name})".encode(),
            "l.txt",
        )
    await submit_correction(
        services,
        alice.id,
        "The lamp is lit at six o'clock sharp, not at dusk.",
        question="When is the lighthouse lamp lit?",
    )
    await graph.ainvoke(_ask("When is the lighthouse lamp lit?"), context=Context(user=alice.name))
    assert "six o'clock" in recorder.prompts[-1][-1].content
    await graph.ainvoke(_ask("When is the lighthouse lamp lit?"), context=Context(user=bob.name))
    assert "six o'clock" not in recorder.prompts[-1][-1].content


async def test_follow_ups_use_memory_and_every_field_is_saved(services, new_user):
    user = await new_user("memory")
    await ingest_bytes(
        services,
        user.id,
        b"The walrus and the carpenter walked on the beach eating oysters.",
        "w.txt",
    )
    chat = str(uuid.uuid4())
    ctx = Context(user=user.name, chat_id=chat)
    await graph.ainvoke(_ask("Who walked with the walrus on the beach?"), context=ctx)
    follow = await graph.ainvoke(_ask("What did they eat?"), context=ctx)
    assert follow["route"] == "hybrid"
    rows = await _rows(services, chat)
    assert [r.role for r in rows] == ["user", "assistant"] * 2
    answer = rows[-1]
    assert answer.route == "hybrid" and answer.model_used == "investigator_extractive"
    assert answer.retrieved_chunk_ids and answer.chunk_map and answer.sources
    assert answer.tokens_used > 0 and answer.retrieval_metrics["results"] >= 1
    async with services.engine.connect() as conn:
        summary = (
            await conn.execute(
                text("SELECT conversation_summary FROM chats WHERE id = :c"), {"c": uuid.UUID(chat)}
            )
        ).scalar()
    assert "walrus" in summary.lower() and "eat" in summary.lower()


async def test_monthly_limit_refuses_before_any_work(services, new_user, monkeypatch):
    user = await new_user("limit")
    await ingest_bytes(services, user.id, b"The bakery sells rye bread.", "b.txt")
    monkeypatch.setattr(services.settings, "monthly_message_limit", 1)
    chat = str(uuid.uuid4())
    ok = await graph.ainvoke(
        _ask("What does the bakery sell?"), context=Context(user=user.name, chat_id=chat)
    )
    assert ok["route"] == "hybrid"
    refused = await graph.ainvoke(_ask("What else?"), context=Context(user=user.name, chat_id=chat))
    assert "limit of 1 messages" in refused["answer"] and refused["model_used"] == "monthly_limit"
    assert len(await _rows(services, chat)) == 2  # the refused turn is neither saved nor counted
