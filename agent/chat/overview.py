"""Path B: a book's overview from its stored executive summary, or from its table of
contents when no summary exists yet (seed 000's ToC fallback)."""

from __future__ import annotations

from dataclasses import dataclass

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from agent import prompts
from agent.chat.books import Book
from agent.db import summaries
from agent.db.summaries import TableOfContents
from agent.services import Services


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


async def overview_prompt(services: Services, book: Book, question: str) -> OverviewPrompt | None:
    """The Path B prompt for ``book``; ``None`` when it has neither summary nor chapters."""
    settings = services.settings
    name = settings.assistant_name
    author = f" by {book.author}" if book.author else ""
    async with services.engine.connect() as conn:
        doc = await summaries.document_for_summary(conn, book.id)
        if doc and doc.global_summary:
            return OverviewPrompt(
                [
                    SystemMessage(prompts.BOOK_OVERVIEW_SYSTEM.format(name=name)),
                    HumanMessage(
                        prompts.BOOK_OVERVIEW_USER.format(
                            title=book.title,
                            author=author,
                            summary=doc.global_summary,
                            question=question,
                        )
                    ),
                ],
                "global_summary_path",
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
