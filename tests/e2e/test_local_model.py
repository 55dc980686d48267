"""End to end on the real packaged local model (llama.cpp, CPU): slow, so only a few."""

import asyncio
import uuid

import httpx
import pytest
from langchain_core.messages import HumanMessage
from sqlalchemy import text

from agent.ingest.pipeline import ingest_bytes
from agent.retrieval.citations import cited_ids
from graphs.chat import graph
from graphs.context import Context
from tests.support.background import cancel_background

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
    # The 1.5B model's prior says "the Cheshire Cat", and the Cheshire passages rank first
    # for any question about Alice's cat; with them as distractors in a 4-passage context it
    # answered so 2 times in 3. Two passages (the best, then MMR's next best of another
    # parent) keep Dinah's in the context and the model on the text. ("Who is Alice's cat?"
    # ranks Dinah's passage 5th, below five of the Cat's: README, "A second passage".)
    user, _ = alice_reader
    state = await graph.ainvoke(
        {"messages": [HumanMessage("What is the name of Alice's cat?")]},
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


# --- one turn per path on the real local model: the path, its label, citations that resolve
# and every field of the saved message --------------------------------------------------------

LOCAL = "qwen2.5"


async def _saved_answer(services, chat_id: str):
    async with services.engine.connect() as conn:
        return (
            await conn.execute(
                text(
                    "SELECT route, model_used, content, retrieved_chunk_ids, sources, chunk_map, "
                    "citations, tokens_used, retrieval_metrics, citations_removed "
                    "FROM chat_messages WHERE chat_id = :c AND role = 'assistant'"
                ),
                {"c": uuid.UUID(chat_id)},
            )
        ).one()


async def _local_turn(question: str, **context):
    return await graph.ainvoke(
        {"messages": [HumanMessage(question)]}, context=Context(chat_model="local", **context)
    )


async def test_local_direct_and_general_paths(services, new_user):
    user = await new_user("local-direct")
    name = await _local_turn("What is your name?", user=user.name)
    assert name["route"] == "direct" and name["model_used"] == "direct_response"
    assert services.settings.assistant_name in name["answer"]
    hello = await _local_turn("Good morning!", user=user.name)
    assert hello["route"] == "general" and hello["model_used"].startswith(f"general_{LOCAL}")
    row = await _saved_answer(services, hello["chat_id"])
    assert row.content == hello["answer"] and row.tokens_used > 0


async def test_local_global_summary_path(services, new_user):
    from agent.summaries.builder import summarize_document
    from agent.summaries.writers import ExtractiveSummaryWriter
    from tests.support.samples import book_text

    user = await new_user("local-overview")
    book = await ingest_bytes(services, user.id, book_text().encode(), "tale.txt")
    await summarize_document(services, book.document_id, writer=ExtractiveSummaryWriter())
    state = await _local_turn("Summarize the book", user=user.name)
    assert state["route"] == "global_summary" and state["model_used"] == "global_summary_path"
    assert len(state["answer"].split()) > 30
    row = await _saved_answer(services, state["chat_id"])
    assert row.route == "global_summary" and row.sources == state["sources"] and row.tokens_used > 0


async def test_local_deep_reasoning_surfaces_a_planted_conflict(services, new_user):
    user = await new_user("local-deep")
    await ingest_bytes(
        services, user.id, b"The harbour bridge opened in 1921 after six years of work.", "a.txt"
    )
    await ingest_bytes(
        services, user.id, b"Records show the harbour bridge opened in 1932, not earlier.", "b.txt"
    )
    state = await _local_turn(
        "Why do the sources disagree on when the harbour bridge opened?", user=user.name
    )
    assert state["route"] == "deep_reasoning"
    assert state["model_used"].startswith(f"deep_reasoner_{LOCAL}")
    assert "1921" in state["answer"] and "1932" in state["answer"]
    ids = cited_ids(state["answer"])
    assert set(ids) <= set(state["chunk_map"])
    row = await _saved_answer(services, state["chat_id"])
    assert row.retrieval_metrics["query_type"] == "deep" and row.chunk_map == state["chunk_map"]
    assert row.citations_removed == state["citations_removed"]


async def test_local_not_covered_answers_generally_and_says_so(services, new_user):
    user = await new_user("local-gate")
    await ingest_bytes(services, user.id, b"The bakery sells rye bread on market days.", "a.txt")
    state = await _local_turn("What is the capital of Peru?", user=user.name)
    assert state["model_used"] == "no_context_response" and state["citations"] == []
    assert "don't seem to cover" in state["answer"] and "Lima" in state["answer"]
    # the general answer is marked as not coming from the documents, whatever the model says
    assert "From general knowledge, not from your documents: " in state["answer"]


async def test_local_web_search_path_cites_web_results(services, new_user, monkeypatch):
    from pydantic import SecretStr

    import agent.chat.web as chat_web
    from agent.web_search import WebResult

    async def fake_search(query, settings):  # never the network
        return [
            WebResult(
                "#web_1",
                "Harbour festival moved",
                "https://news.example/festival",
                "The harbour festival will take place on 12 June this year, a week later.",
                "news.example",
            )
        ]

    monkeypatch.setattr(services.settings, "serpapi_api_key", SecretStr("test-key"))
    monkeypatch.setattr(chat_web, "search_web", fake_search)
    user = await new_user("local-web")
    state = await _local_turn("What is the latest news about the harbour festival?", user=user.name)
    assert state["route"] == "web_search" and state["model_used"].startswith(f"web_search_{LOCAL}")
    assert "12 June" in state["answer"] or "June 12" in state["answer"]
    assert state["sources"] == ["https://news.example/festival"]
    assert all(c["kind"] == "web" for c in state["citations"])


# --- the real local model, in its own process ----------------------------------------------------


async def test_local_model_ranks_the_answer_first_and_prefix_reuse_changes_nothing():
    from agent.config import Settings
    from agent.model_server.client import LocalServerChat, likelihood_scores
    from agent.models import achat_model
    from agent.retrieval.rerank import llm_scores

    model = await achat_model("local", Settings(), 0.0)
    assert isinstance(model, LocalServerChat)
    question = "What is the boiling point of water at sea level?"
    passages = [
        "The French Revolution began in 1789 with the storming of the Bastille.",
        "At sea level, pure water boils at 100 degrees Celsius (212 degrees Fahrenheit); "
        "at higher altitudes the boiling point is lower.",
        "A binary search tree keeps its keys in sorted order for fast lookup.",
        "Penguins are flightless birds that live mostly in the Southern Hemisphere.",
    ]
    cached = await likelihood_scores(model, question, passages, 600)
    assert max(range(len(passages)), key=cached.__getitem__) == 1
    assert cached[1] == 1.0 and max(cached[0], cached[2], cached[3]) < 0.8
    scratch = await likelihood_scores(model, question, passages, 600, reuse=False)
    # llama.cpp splits the batches differently with and without the cache: logits differ
    # in the last digits
    assert cached == pytest.approx(scratch, abs=0.05)
    # the dispatcher reaches the same scorer, on a 0-10 scale
    scaled = await llm_scores(model, question, passages, passage_chars=600)
    assert scaled == pytest.approx([10 * s for s in cached], abs=0.5)
    assert await likelihood_scores(model, question, [], 600) == []
    # and the model still chats afterwards (the shared context was left consistent)
    reply = await model.ainvoke("Reply with the single word: ready", max_tokens=5)
    assert reply.content.strip()


async def test_the_model_writes_on_from_the_words_it_is_given():
    """The model process continues a reply from given words (what a restated answer is
    finished with: agent.chat.restated_answer), on the line they start."""
    from agent.chat.answering import grounded_messages
    from agent.config import Settings
    from agent.model_server.client import continue_reply
    from agent.models import achat_model

    settings = Settings()
    model = await achat_model("local", settings, 0.0)
    question = "What does Dinah catch?"
    messages = grounded_messages(settings.assistant_name, question, DINAH_BLOCK, examples=True)
    prefix = "Dinah, Alice's cat, catches"
    text, tokens = await continue_reply(model, messages, prefix, max_tokens=24)
    assert "\n" not in text and tokens > 0
    assert "mice" in text.lower(), text  # the passage's word, after the prefix's
    assert not text.lstrip().lower().startswith("dinah")  # written on, not started afresh
    # a prompt cut short still answers (the reply limit), and an empty prefix is refused
    short, _ = await continue_reply(model, messages, prefix, max_tokens=1)
    assert len(short.split()) <= 2
    with pytest.raises(httpx.HTTPStatusError):
        await continue_reply(model, messages, "", max_tokens=8)


async def test_the_prompt_cache_spares_warmed_system_prompts_and_continued_exchanges():
    """Warmed system prompts and a continued exchange are not read again (the model
    process's prompt cache), even after another prompt ran in between."""
    from langchain_core.messages import AIMessage

    from agent.chat.answering import grounded_messages
    from agent.config import Settings
    from agent.model_server.warm import warm_messages, warm_prompt_cache
    from agent.models import achat_model

    # earlier tests' chat summaries still writing would share the model with these calls
    # (a yielded call's tokens land in llama.cpp's counters, which the usage reads)
    await cancel_background()
    settings = Settings()
    model = await achat_model("local", settings, 0.0)
    warmed = await asyncio.to_thread(warm_prompt_cache, model.server_url, settings)
    assert warmed == len(warm_messages(settings))

    async def ask(messages) -> tuple[str, int, int]:
        text, usage = "", {}
        async for chunk in model.astream(messages, max_tokens=24):
            text += chunk.content
            usage = chunk.usage_metadata or usage
        cached = (usage.get("input_token_details") or {}).get("cache_read", 0)
        return text, usage["input_tokens"], cached

    # the grounded opening: system prompt and worked examples, as a hybrid answer sends it
    first = grounded_messages(settings.assistant_name, "Who is Dinah?", DINAH_BLOCK, examples=True)
    reply, read, cached = await ask(first)
    assert cached > 400 and read - cached < 150, (read, cached)  # the question alone is read
    await ask([HumanMessage("Say hello to the Mock Turtle.")])  # another prompt in between
    follow_up = [*first, AIMessage(reply), HumanMessage("Question: What does Dinah catch?")]
    _, read, cached = await ask(follow_up)
    assert read - cached < 40, (read, cached)  # only the new question was read


async def test_a_warmed_book_overview_reads_only_the_question(services, new_user):
    """A book's overview opening, warmed as a server does when the summary is written,
    leaves only the request to read when its summary is asked for."""
    from agent.chat.books import Book
    from agent.chat.overview import overview_openings, overview_prompt
    from agent.db import summaries
    from agent.model_server.warm import warm_openings
    from agent.models import achat_model

    await cancel_background()  # as above: no earlier turn's summary shares the model
    user = await new_user("warm-overview")
    body = "The lamplighter Ines climbs the harbour tower each dusk to light its lamp. " * 4
    found = await ingest_bytes(services, user.id, body.encode(), "lamplighter.txt")
    summary = "Ines, a lamplighter, keeps a harbour light burning through a long winter. " * 3
    async with services.engine.begin() as conn:
        await summaries.save_global_summary(conn, found.document_id, summary, "test")
        doc = await summaries.document_for_summary(conn, found.document_id)
    model = await achat_model("local", services.settings, 0.0)
    openings = await overview_openings(services, 1, [found.document_id])
    assert await asyncio.to_thread(warm_openings, model.server_url, openings) == 1
    await model.ainvoke([HumanMessage("Say hello to the Mock Turtle.")], max_tokens=4)
    prompt = await overview_prompt(
        services, Book(doc.id, doc.title, doc.author), "Summarize the book"
    )
    usage = {}
    async for chunk in model.astream(prompt.messages, max_tokens=8):
        usage = chunk.usage_metadata or usage
    cached = (usage.get("input_token_details") or {}).get("cache_read", 0)
    assert usage["input_tokens"] > 100 and usage["input_tokens"] - cached < 15, usage


DINAH_BLOCK = (
    "#chk_0a1b2c3d [Alice]\n“Dinah’s our cat. And she’s such a capital one for catching mice "
    "you can’t think! And oh, I wish you could see her after the birds!”"
)
