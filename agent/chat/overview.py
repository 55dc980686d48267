"""Path B: a book's overview from its stored executive summary, or from its table of
contents when no summary exists yet (seed 000's ToC fallback)."""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass

from langchain_core.messages import (
    BaseMessage,
    HumanMessage,
    SystemMessage,
    convert_to_openai_messages,
)

from agent import prompts
from agent.chat.books import Book
from agent.db import summaries
from agent.db.summaries import TableOfContents
from agent.model_server.endpoint import ready_model_url
from agent.model_server.warm import warm_openings
from agent.services import Services

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OverviewPrompt:
    """Messages for the overview and the ``model_used`` label of the path taken."""

    messages: list[BaseMessage]
    label: str


def format_toc(toc: TableOfContents) -> str:
    """Numbered chapters with their sections, then the topic labels."""
    lines = []
    for number, (chapter, sections) in enumerate(toc.chapters, start=1):
        line = f"{number}. {chapter or '(untitled opening)'}"
        if sections:
            line += " — sections: " + "; ".join(sections[:8])
        lines.append(line)
    if toc.topics:
        lines.append("Topics: " + ", ".join(toc.topics))
    return "\n".join(lines)


def summary_messages(name: str, book: Book, summary: str, question: str) -> list[BaseMessage]:
    """The Path B messages presenting ``book``'s stored ``summary``: the system prompt, the
    book and its summary, then the question last (the rest is a prefix a model may cache)."""
    author = f" by {book.author}" if book.author else ""
    return [
        SystemMessage(prompts.BOOK_OVERVIEW_SYSTEM.format(name=name)),
        HumanMessage(
            prompts.BOOK_OVERVIEW_USER.format(
                title=book.title, author=author, summary=summary, question=question
            )
        ),
    ]


async def overview_prompt(services: Services, book: Book, question: str) -> OverviewPrompt | None:
    """The Path B prompt for ``book``; ``None`` when it has neither summary nor chapters."""
    settings = services.settings
    name = settings.assistant_name
    author = f" by {book.author}" if book.author else ""
    async with services.engine.connect() as conn:
        doc = await summaries.document_for_summary(conn, book.id)
        if doc and doc.global_summary:
            return OverviewPrompt(
                summary_messages(name, book, doc.global_summary, question), "global_summary_path"
            )
        toc = await summaries.table_of_contents(
            conn,
            book.id,
            max_chapters=settings.toc_max_chapters,
            max_topics=settings.toc_max_topics,
        )
    if toc is None or not any(chapter for chapter, _ in toc.chapters):
        return None
    return OverviewPrompt(
        [
            SystemMessage(prompts.TOC_OVERVIEW_SYSTEM.format(name=name)),
            HumanMessage(
                prompts.TOC_OVERVIEW_USER.format(
                    title=book.title, author=author, toc=format_toc(toc), question=question
                )
            ),
        ],
        "toc_fallback_path",
    )


async def overview_openings(
    services: Services, limit: int, document_ids: list[uuid.UUID] | None = None
) -> list[list[dict]]:
    """The Path B prompts of the books summarized last (or of ``document_ids``) without their
    question, as chat-completion messages: what the local model's prompt cache is warmed
    with, so a request for a book's summary reads only its question."""
    name = services.settings.assistant_name
    async with services.engine.connect() as conn:
        docs = await summaries.summarized_documents(conn, limit, document_ids)
    return [
        convert_to_openai_messages(
            summary_messages(name, Book(d.id, d.title, d.author), d.global_summary or "", "")
        )
        for d in docs
    ]


def _warms_summaries(services: Services) -> bool:
    """Whether book summaries are presented by the local model and its cache is warmed."""
    settings = services.settings
    return (
        settings.chat_model == "local"
        and settings.local_chat_warm_prompts
        and settings.local_chat_warm_books > 0
    )


async def openings_to_warm(services: Services) -> list[list[dict]]:
    """What a starting server warms besides the system prompts: the overview openings of the
    ``local_chat_warm_books`` books summarized last (none unless chat runs locally)."""
    if not _warms_summaries(services):
        return []
    try:
        return await overview_openings(services, services.settings.local_chat_warm_books)
    except Exception as exc:  # the server starts all the same; the summaries read cold
        log.warning("could not read the book overviews to warm: %s", exc)
        return []


async def warm_summary(services: Services, document_id: uuid.UUID) -> int:
    """Warm the local model's prompt cache with a just-summarized book's overview opening
    (when chat runs locally); how many openings were cached."""
    if not _warms_summaries(services):
        return 0
    url = ready_model_url(services.settings)  # a model still loading is not waited for
    if url is None:
        return 0
    try:
        openings = await overview_openings(services, 1, [document_id])
        return await asyncio.to_thread(warm_openings, url, openings) if openings else 0
    except Exception as exc:  # a cold cache costs seconds later, not the summary
        log.warning("could not warm the summary of %s: %s", document_id, exc)
        return 0
