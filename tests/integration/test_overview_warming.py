"""Warming the local model's prompt cache with book overviews: the opening sent is the Path B
prompt up to its question, a starting server sends those of the books summarized last, and a
book's opening goes to the model server once its summary is written."""

from __future__ import annotations

from dataclasses import replace

import pytest

from agent.chat.books import Book
from agent.chat.overview import (
    openings_to_warm,
    overview_openings,
    overview_prompt,
    warm_summary,
)
from agent.db import summaries
from agent.ingest.pipeline import ingest_bytes
from agent.summaries.worker import SummaryWorker
from tests.support.fakes import CountingWriter
from tests.support.model_server import stand_in_model_server
from tests.support.samples import book_text

TEXT = "The ferryman Osric rows pilgrims across the grey river every morning at six. " * 4


async def _summarized(services, user, name: str, summary: str):
    result = await ingest_bytes(services, user.id, f"{name}\n\n{TEXT}".encode(), f"{name}.txt")
    async with services.engine.begin() as conn:
        await summaries.save_global_summary(conn, result.document_id, summary, "test")
    return result.document_id


def _local(services, **changes):
    """The services with chat on the local model (and ``changes``) in their settings."""
    update = {"chat_model": "local", "local_chat_warm_prompts": True, **changes}
    settings = services.settings.model_copy(update=update)
    return replace(services, settings=settings)


async def test_an_opening_is_the_overview_prompt_up_to_its_question(services, new_user):
    user = await new_user("warm-prefix")
    document = await _summarized(services, user, "ferry", "Osric ferries pilgrims daily.")
    [opening] = await overview_openings(services, 1, [document])
    async with services.engine.connect() as conn:
        doc = await summaries.document_for_summary(conn, document)
    prompt = await overview_prompt(
        services, Book(document, doc.title, doc.author), "Summarize the book"
    )
    system, asked = prompt.messages
    assert [m["role"] for m in opening] == ["system", "user"]
    assert opening[0]["content"] == system.content
    assert "Osric ferries pilgrims daily." in opening[1]["content"]
    assert asked.content.startswith(opening[1]["content"])  # the cache's prefix
    assert asked.content[len(opening[1]["content"]) :] == "Summarize the book"


async def test_a_starting_server_warms_the_books_summarized_last(services, new_user):
    user = await new_user("warm-start")
    for n in range(3):
        await _summarized(services, user, f"book{n}", f"Summary number {n}.")
    local = _local(services, local_chat_warm_books=2)
    openings = await openings_to_warm(local)
    assert [("Summary number 2." in o[1]["content"]) for o in openings] == [True, False]
    assert "Summary number 1." in openings[1][1]["content"]
    # nothing when chat does not run on the local model, or the setting is 0
    assert await openings_to_warm(services) == []
    assert await openings_to_warm(_local(services, local_chat_warm_books=0)) == []
    assert await openings_to_warm(_local(services, local_chat_warm_prompts=False)) == []


@pytest.fixture
def model_server():
    """An HTTP server standing in for the model process: records what is posted to it."""
    with stand_in_model_server() as served:
        yield served


async def test_a_written_summary_is_sent_to_the_model_server(services, new_user, model_server):
    url, posted = model_server
    user = await new_user("warm-written")
    document = await _summarized(services, user, "river", "A river crossing at dawn.")
    assert await warm_summary(_local(services, local_model_url=url), document) == 1
    [(path, _, body)] = posted
    assert path == "/v1/chat/completions" and body["max_tokens"] == 1
    assert body["messages"] == (await overview_openings(services, 1, [document]))[0]
    # not warmed when chat runs elsewhere, nor for a book without a summary
    assert await warm_summary(services, document) == 0
    plain = await ingest_bytes(services, user.id, b"plain\n\n" + TEXT.encode(), "plain.txt")
    assert await warm_summary(_local(services, local_model_url=url), plain.document_id) == 0
    assert len(posted) == 1


async def test_the_summary_worker_warms_each_book_it_summarizes(
    services, new_user, model_server, monkeypatch
):
    url, posted = model_server
    user = await new_user("warm-worker")
    found = await ingest_bytes(services, user.id, book_text().encode(), "tale.txt")

    async def writer(settings, spec=None):
        return CountingWriter("worker-model")

    monkeypatch.setattr("agent.summaries.builder.summary_writer", writer)
    local = _local(services, local_model_url=url)
    assert await SummaryWorker(local).summarize(found.document_id)
    [opening] = await overview_openings(services, 1, [found.document_id])
    assert "Executive summary of" in opening[1]["content"]
    assert opening in [p.body["messages"] for p in posted]
