"""Chapter requests: "summarize chapter 7", "what happens in 'A Mad Tea-Party'", "summary of
part two", "recap the third chapter".

The reference (:mod:`agent.chat.chapter_refs`) is resolved against the chapters of the books
in scope: the chosen book, else the user's only book, else every visible book (a book whose
title the message names narrows them). Chapters are the summary job's: runs of sections under
one chapter title, or parts of ``summary_parents_per_part`` sections in a book without
titles (:func:`agent.summaries.builder.group_chapters`), so their indexes are those of the
stored chapter summaries.

One chapter found: the answer comes from its stored summary, with the chapter's passages that
the summary draws on (and its opening one) to cite; without a stored summary, from the
chapter's passages spread over it, within the context budget. Citations are guarded like any
cited answer. A reference that fits several chapters, or none, is answered with the list of
chapters and a question: which one?
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from agent import prompts
from agent.chat.answering import Answer, answer_update, finish_grounded
from agent.chat.chapter_refs import (
    LAST,
    ChapterRef,
    chapter_reference,
    may_name_a_title,
    title_matches,
    title_number,
    titles_in_message,
)
from agent.db import chapters as store
from agent.db import summaries
from agent.db.chapters import BookRow, ChapterRun
from agent.db.chunks import fetch_chunks
from agent.db.scope import SearchScope
from agent.ingest.sentences import split_sentences
from agent.retrieval.citations import citation_id, cited_ids
from agent.retrieval.context import truncate_words
from agent.retrieval.types import RetrievedChunk, chunk_payload
from agent.services import Services
from agent.text import content_terms, content_words

ROUTE = "chapter_summary"
FROM_SUMMARY, FROM_PASSAGES, CHAPTER_LIST = (
    "chapter_summary_path",
    "chapter_passages_path",
    "chapter_list",
)
"""``model_used`` of the three outcomes: the stored summary, the chapter's passages, the
list of chapters (asking which one)."""
_LISTED_BOOKS = 5
"""Books whose chapters a reply to a reference that fits nothing lists (newest first)."""


@dataclass(frozen=True)
class Chapter:
    """One chapter of a book: its index among the book's chapters (as summaries store it),
    its title (``None`` for an untitled run), the heading shown, and its sections' span."""

    book: BookRow
    index: int
    title: str | None
    heading: str
    first_parent: int
    last_parent: int


@dataclass
class ChapterTurn:
    """What the chapter path has for a message: a finished ``answer`` (the list of chapters),
    or the ``messages`` for the model with the chapter's citable passages."""

    answer: Answer | None = None
    messages: list[BaseMessage] = field(default_factory=list)
    retrieved: list[dict] = field(default_factory=list)
    label: str = FROM_SUMMARY
    reason: str = ""
    """Why and from what the turn answered (the turn's ``route_reason``)."""


def book_chapters(book: BookRow, runs: list[ChapterRun], per_part: int) -> list[Chapter]:
    """The book's chapters from its runs of sections, numbered like the summary job's."""
    if not any(r.title for r in runs):  # no titles: parts of ``per_part`` sections
        if not runs:
            return []
        first, last, size = runs[0].first_parent, runs[-1].last_parent, max(1, per_part)
        starts = range(first, last + 1, size)
        return [
            Chapter(book, i, None, f"Part {i + 1}", start, min(last, start + size - 1))
            for i, start in enumerate(starts)
        ]
    return [
        Chapter(
            book,
            r.run,
            r.title,
            r.title or ("Opening" if r.run == 0 else f"Part {r.run + 1}"),
            r.first_parent,
            r.last_parent,
        )
        for r in runs
    ]


def _kind_fits(title_kind: str | None, wanted: str) -> bool:
    """A heading's kind answers a reference's: chapters and stories alike, bare numbers
    ("VII. ...") for either; parts and books only by name."""
    if wanted in ("chapter", "story"):
        return title_kind in (None, "chapter", "story")
    return title_kind == wanted


def by_number(chapters: list[Chapter], ref: ChapterRef) -> list[Chapter]:
    """The chapters numbered ``ref.number``: by the numbers in their headings when the book
    numbers them, else (chapters and stories) by position among the titled ones."""
    named = [c for c in chapters if c.title] or chapters
    if ref.number == LAST:
        return named[-1:]
    numbered = [(c, title_number(c.heading)) for c in chapters]
    fitting = [(c, n) for c, n in numbered if n and _kind_fits(n[0], ref.kind)]
    if fitting:
        return [c for c, n in fitting if n[1] == ref.number]
    if ref.kind in ("chapter", "story") and ref.number and 0 < ref.number <= len(named):
        return [named[ref.number - 1]]
    return []


def by_title(chapters: list[Chapter], wanted: str) -> list[Chapter]:
    """The chapters whose title is ``wanted`` (quoted), else those it is part of."""
    scored = [(title_matches(wanted, c.title), c) for c in chapters]
    best = max((s for s, _ in scored), default=0)
    return [c for s, c in scored if s and s == best]


def by_written_title(chapters: list[Chapter], message: str) -> list[Chapter]:
    """The chapters whose title's name the message writes out (the longest name found)."""
    found = titles_in_message(message, [c.title for c in chapters])
    return [c for c in chapters if found and c.title == found[0]]


def named_books(message: str, books: list[BookRow]) -> list[BookRow]:
    """The books whose title the message names (most of its words), else all of them."""
    words = content_terms(message)
    named = []
    for book in books:
        title = set(content_words(book.title))
        if title and len(title & words) >= max(1, round(0.6 * len(title))):
            named.append(book)
    return named or books


def match_chapters(message: str, library: dict[BookRow, list[Chapter]]) -> list[Chapter]:
    """The chapters of ``library`` (books in scope and their chapters) that ``message``
    names: one, several (ambiguous) or none."""
    books = named_books(message, list(library)) if len(library) > 1 else list(library)
    chapters = [c for b in books for c in library[b]]
    ref = chapter_reference(message)
    if ref is None:
        return by_written_title(chapters, message)
    if ref.kind == "title":
        return by_title(chapters, ref.title or "")
    return [c for b in books for c in by_number(library[b], ref)]


def _book_name(book: BookRow) -> str:
    return f"{book.title} by {book.author}" if book.author else book.title


def chapter_list(library: dict[BookRow, list[Chapter]], most: int) -> str:
    """Each book's chapters, at most ``most`` a book."""
    blocks = []
    for book, chapters in library.items():
        # an untitled run before (or between) titled chapters is no chapter to ask for
        chapters = [c for c in chapters if c.title] or chapters
        lines = [f"- {c.heading}" for c in chapters[:most]]
        if len(chapters) > most:
            lines.append(f"- … and {len(chapters) - most} more")
        blocks.append(f"Chapters of {_book_name(book)}:\n" + "\n".join(lines))
    return "\n\n".join(blocks)


def clarifying_answer(
    message: str, found: list[Chapter], library: dict[BookRow, list[Chapter]], most: int
) -> Answer:
    """The reply to a reference that fits several chapters (listed) or none (the books'
    chapters listed), asking which one."""
    ref = chapter_reference(message)
    phrase = ref.phrase if ref else "that chapter"
    if found:
        choices = "\n".join(f"- {c.heading} ({_book_name(c.book)})" for c in found)
        text = prompts.CHAPTER_AMBIGUOUS.format(phrase=phrase, choices=choices)
    else:
        named = named_books(message, list(library))  # the books the message names, else all
        shown = {b: library[b] for b in named[:_LISTED_BOOKS]}
        where = ", ".join(_book_name(b) for b in shown)
        text = prompts.CHAPTER_MISSING.format(
            phrase=phrase, where=where, chapters=chapter_list(shown, most)
        )
    return Answer(text=text, route=ROUTE, model_used=CHAPTER_LIST)


async def load_library(services: Services, scope: SearchScope) -> dict[BookRow, list[Chapter]]:
    """The books in ``scope`` that have chapters, with their chapters (newest books first)."""
    async with services.engine.connect() as conn:
        books = await store.books_with_sections(conn, scope)
        runs = await store.chapter_runs(conn, [b.id for b in books]) if books else {}
    per_part = services.settings.summary_parents_per_part
    library = {b: book_chapters(b, runs.get(b.id, []), per_part) for b in books}
    return {b: chapters for b, chapters in library.items() if chapters}


async def titles_for_routing(services: Services, scope: SearchScope, message: str) -> list[str]:
    """The chapter titles of the books in ``scope`` when routing needs them to recognise an
    unquoted title ("what happens in A Mad Tea-Party"); none otherwise (no query)."""
    if not may_name_a_title(message):
        return []
    async with services.engine.connect() as conn:
        return await store.chapter_titles(conn, scope)


def pick_cited(summary: str, chunks: list[tuple[uuid.UUID, str]], most: int) -> list[int]:
    """Positions of the chunks to cite beside a chapter summary: the chapter's opening chunk,
    then the one each summary sentence draws on most (two shared words or more), in
    reading order, at most ``most``."""
    terms = [content_terms(t) for _, t in chunks]
    chosen = [0]
    for sentence in split_sentences(summary):
        words = content_terms(sentence)
        overlap, best = max((len(words & t), -i) for i, t in enumerate(terms))
        best = -best  # the earliest of equally good chunks
        if overlap >= 2 and best not in chosen:
            chosen.append(best)
    return sorted(chosen[: max(1, most)])


def spread(count: int, most: int) -> list[int]:
    """``most`` positions spread evenly over ``count`` items (all when they fit)."""
    if count <= most:
        return list(range(count))
    return sorted({round(i * (count - 1) / max(1, most - 1)) for i in range(most)})


async def _stored_summary(conn, chapter: Chapter) -> str | None:
    """The chapter's stored summary, if it is still the chapter's (same index and title)."""
    for stored in await summaries.chapter_summaries(conn, chapter.book.id):
        if stored.chapter_index == chapter.index and stored.chapter_title == chapter.title:
            return stored.summary
    return None


def _passages_block(payloads: list[dict]) -> str:
    blocks = []
    for p in payloads:
        page = f" (page {p['page']})" if p.get("page") is not None else ""
        blocks.append(f"Passage {p['id']}{page}:\n{p['context_text']}")
    return "\n\n".join(blocks)


def chapter_messages(
    name: str, chapter: Chapter, summary: str | None, payloads: list[dict], question: str
) -> list[BaseMessage]:
    """The prompt: the stored summary (when there is one) and the passages to cite.

    Passages are introduced as ``Passage #chk_... (page N):`` lines rather than opening with
    their id, and the book and chapter share the first line: the summary, not a header, is
    what an extractive stand-in quotes first.
    """
    book = chapter.book
    author = f" by {book.author}" if book.author else ""
    summary_block = prompts.CHAPTER_SUMMARY_BLOCK.format(summary=summary) if summary else ""
    system = prompts.CHAPTER_SYSTEM if summary else prompts.CHAPTER_PASSAGES_SYSTEM
    return [
        SystemMessage(system.format(name=name)),
        HumanMessage(
            prompts.CHAPTER_USER.format(
                title=book.title,
                author=author,
                chapter=chapter.heading,
                summary=summary_block,
                passages=_passages_block(payloads),
                question=question,
            )
        ),
    ]


async def _passages(
    conn, scope: SearchScope, chapter: Chapter, summary: str | None, budget: int, most: int
) -> list[dict]:
    """The citable payloads of the chapter's chosen chunks, each cut to its share of the
    budget left after the summary."""
    chunks = await store.chapter_chunks(
        conn, chapter.book.id, chapter.first_parent, chapter.last_parent
    )
    if not chunks:
        return []
    room = max(400, budget - len(summary or ""))
    if summary:
        positions = pick_cited(summary, chunks, most)
    else:
        positions = spread(len(chunks), max(1, room // 650))
    ids = [chunks[i][0] for i in positions]
    records = await fetch_chunks(conn, scope, ids)
    share = max(200, room // max(1, len(ids)))
    payloads = []
    for chunk_id in ids:
        if chunk_id not in records:
            continue
        found = RetrievedChunk(records[chunk_id], citation_id(chunk_id), 1.0, None, None, "chapter")
        payloads.append(chunk_payload(found, context_text=truncate_words(found.record.text, share)))
    return payloads


async def chapter_turn(
    services: Services, question: str, scope: SearchScope, *, spec: str
) -> ChapterTurn | None:
    """The chapter path for ``question`` in ``scope`` (answered by the model named by
    ``spec``); ``None`` when no book in scope has chapters (Path A answers instead)."""
    settings = services.settings
    library = await load_library(services, scope)
    if not library:
        return None
    found = match_chapters(question, library)
    if len(found) != 1:
        answer = clarifying_answer(question, found, library, settings.toc_max_chapters)
        why = "several chapters fit" if found else "no chapter fits"
        return ChapterTurn(answer=answer, label=CHAPTER_LIST, reason=f"chapter request: {why}")
    chapter = found[0]
    async with services.engine.connect() as conn:
        summary = await _stored_summary(conn, chapter)
        budget = settings.context_budget(spec, "chapter")
        payloads = await _passages(conn, scope, chapter, summary, budget, settings.top_k(spec))
    basis = "its stored summary" if summary else "its passages (no summary stored yet)"
    return ChapterTurn(
        messages=chapter_messages(settings.assistant_name, chapter, summary, payloads, question),
        retrieved=payloads,
        label=FROM_SUMMARY if summary else FROM_PASSAGES,
        reason=f"chapter request: {chapter.heading} of {chapter.book.title}, from {basis}",
    )


def chapter_update(turn: ChapterTurn | None) -> dict:
    """The chat state's update for a finished chapter turn (its answer, the passages it was
    given and why); without one (no book in scope has chapters), the fallback to Path A
    with the general settings."""
    if turn is None or turn.answer is None:
        return {
            "route": "hybrid",
            "search_mode": "general",
            "route_reason": "chapter request, but no book in scope has chapters: answered "
            "from its passages (general settings)",
        }
    return {**answer_update(turn.answer), "retrieved": turn.retrieved, "route_reason": turn.reason}


def finish_chapter_answer(raw: str, turn: ChapterTurn, *, tokens: int) -> Answer:
    """The model's answer with its citations guarded against the chapter's passages; when
    none survives, a pointer to where the chapter opens."""
    answer = finish_grounded(
        raw, turn.retrieved, route=ROUTE, model_used=turn.label, tokens_used=tokens
    )
    if turn.retrieved and not cited_ids(answer.text):
        opening = prompts.CHAPTER_OPENS_AT.format(citation=turn.retrieved[0]["id"])
        answer = finish_grounded(
            f"{raw.rstrip()}\n\n{opening}",
            turn.retrieved,
            route=ROUTE,
            model_used=turn.label,
            tokens_used=tokens,
        )
    return answer
