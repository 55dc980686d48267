"""Pre-computed summaries of books and long documents (seed 000, Path B).

Three levels, each stored with the model that wrote it: a 3-4 sentence summary and topic
labels per parent chunk (section), a chapter summary combined from its sections, and one
executive summary per document from the combined chapter summaries (input capped).

The job is resumable: every summary is committed as soon as it is written, and a rerun
skips what the same model already wrote, so a killed job continues where it stopped and a
new model rewrites everything. A per-document advisory lock keeps two workers apart.
Documents are searchable from ingestion on; summaries never block them.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from agent.db import summaries as store
from agent.db.summaries import ChapterSummary, ParentForSummary
from agent.services import Services
from agent.summaries.writers import SummaryWriter, clean_labels, summary_writer

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SummaryProgress:
    """Where a summary job is: ``done`` of ``total`` steps, in ``stage``."""

    stage: Literal["sections", "chapters", "book"]
    done: int
    total: int


ProgressFn = Callable[[SummaryProgress], None]


@dataclass(frozen=True)
class SummaryReport:
    """What one run of the job wrote."""

    document_id: uuid.UUID
    model: str
    sections_written: int
    chapters_written: int
    book_written: bool
    sections: int
    chapters: int
    seconds: float


class SummaryBusy(RuntimeError):
    """Another worker is summarizing this document right now."""


class NothingToSummarize(ValueError):
    """The document has no sections (short documents are not summarized)."""


@dataclass(frozen=True)
class Chapter:
    """Consecutive parents under one chapter heading (or a numbered part without one)."""

    index: int
    title: str | None
    heading: str
    parents: list[ParentForSummary]


def group_chapters(parents: list[ParentForSummary], per_part: int) -> list[Chapter]:
    """Runs of parents sharing a chapter title; without any titles, parts of ``per_part``."""
    if not any(p.chapter_title for p in parents):
        runs = [parents[i : i + per_part] for i in range(0, len(parents), max(1, per_part))]
        return [Chapter(i, None, f"Part {i + 1}", run) for i, run in enumerate(runs)]
    chapters: list[Chapter] = []
    for parent in parents:
        if chapters and chapters[-1].title == parent.chapter_title:
            chapters[-1].parents.append(parent)
            continue
        index = len(chapters)
        heading = parent.chapter_title or ("Opening" if index == 0 else f"Part {index + 1}")
        chapters.append(Chapter(index, parent.chapter_title, heading, [parent]))
    return chapters


def fit_to_budget(texts: list[str], budget: int) -> list[str]:
    """Shorten each text (at a word boundary) so that together they fit in ``budget`` chars."""
    if sum(len(t) for t in texts) <= budget or not texts:
        return texts
    share = max(80, budget // len(texts))
    fitted = []
    for text in texts:
        if len(text) > share:
            cut = text[:share]
            text = (cut.rsplit(" ", 1)[0] if " " in cut else cut) + " ..."
        fitted.append(text)
    return fitted


def _section_heading(parent: ParentForSummary, chapter: Chapter) -> str:
    parts = [chapter.heading, parent.section_title or ""]
    return ", ".join(p for p in parts if p) or f"Section {parent.chunk_index + 1}"


def _chapter_topics(chapter: Chapter, written: dict[uuid.UUID, list[str]]) -> list[str]:
    labels: dict[str, int] = {}
    for parent in chapter.parents:
        for label in written.get(parent.id, parent.topic_labels):
            labels[label] = labels.get(label, 0) + 1
    return [label for label, _ in sorted(labels.items(), key=lambda kv: -kv[1])]


async def summarize_document(
    services: Services,
    document_id: uuid.UUID,
    *,
    writer: SummaryWriter | None = None,
    force: bool = False,
    progress: ProgressFn | None = None,
) -> SummaryReport:
    """Write whatever summaries the document lacks for the writer's model (all if ``force``).

    Raises :class:`SummaryBusy` if another worker holds the document, and
    :class:`NothingToSummarize` for documents without sections.
    """
    settings = services.settings
    writer = writer or await summary_writer(settings)
    started = time.perf_counter()
    async with services.engine.connect() as raw:
        lock = await raw.execution_options(isolation_level="AUTOCOMMIT")
        if not await store.try_lock_document(lock, document_id):
            raise SummaryBusy(f"document {document_id} is being summarized by another worker")
        try:
            return await _run(services, document_id, writer, force, progress, started)
        finally:
            await store.unlock_document(lock, document_id)


async def _run(
    services: Services,
    document_id: uuid.UUID,
    writer: SummaryWriter,
    force: bool,
    progress: ProgressFn | None,
    started: float,
) -> SummaryReport:
    settings = services.settings
    engine = services.engine
    async with engine.connect() as conn:
        doc = await store.document_for_summary(conn, document_id)
        parents = await store.parents_for_summary(conn, document_id) if doc else []
        stored = {c.chapter_index: c for c in await store.chapter_summaries(conn, document_id)}
    if doc is None:
        raise NothingToSummarize(f"document {document_id} does not exist")
    if not parents:
        async with engine.begin() as conn:
            await store.set_summary_state(conn, document_id, "none", done=0, total=0)
        raise NothingToSummarize(f"{doc.title} is too short to need summaries")

    chapters = group_chapters(parents, settings.summary_parents_per_part)
    total = len(parents) + len(chapters) + 1
    model = writer.name

    def section_done(p: ParentForSummary) -> bool:
        return not force and p.summary_model == model and bool(p.concise_summary)

    done = sum(section_done(p) for p in parents)
    async with engine.begin() as conn:
        await store.set_summary_state(conn, document_id, "running", done=done, total=total)

    def report(stage: Literal["sections", "chapters", "book"]) -> None:
        if progress:
            progress(SummaryProgress(stage, done, total))

    try:
        # 1. sections
        texts: dict[uuid.UUID, str] = {p.id: p.concise_summary or "" for p in parents}
        topics: dict[uuid.UUID, list[str]] = {}
        changed: set[uuid.UUID] = set()
        report("sections")
        for chapter in chapters:
            for parent in chapter.parents:
                if section_done(parent):
                    continue
                summary = await writer.section(
                    doc.title, _section_heading(parent, chapter), parent.text
                )
                texts[parent.id], topics[parent.id] = summary.text, summary.topics
                changed.add(parent.id)
                done += 1
                async with engine.begin() as conn:
                    await store.save_section_summary(
                        conn, parent.id, summary.text, summary.topics, model
                    )
                    await store.set_summary_state(conn, document_id, "running", done=done)
                report("sections")

        # 2. chapters
        chapters_written = 0
        chapter_texts: list[tuple[str, str]] = []
        for chapter in chapters:
            old = stored.get(chapter.index)
            fresh = (
                not force
                and old is not None
                and old.model == model
                and old.chapter_title == chapter.title
                and not any(p.id in changed for p in chapter.parents)
            )
            if fresh:
                chapter_texts.append((chapter.heading, old.summary))
            else:
                sections = fit_to_budget(
                    [texts[p.id] for p in chapter.parents if texts[p.id]],
                    settings.summary_chapter_input_chars,
                )
                summary = await writer.chapter(doc.title, chapter.heading, sections)
                labels = clean_labels(
                    ", ".join(summary.topics + _chapter_topics(chapter, topics)), limit=6
                )
                record = ChapterSummary(chapter.index, chapter.title, summary.text, labels, model)
                async with engine.begin() as conn:
                    await store.save_chapter_summary(conn, document_id, record)
                    await store.set_summary_state(conn, document_id, "running", done=done + 1)
                chapter_texts.append((chapter.heading, summary.text))
                chapters_written += 1
            done += 1
            report("chapters")
        async with engine.begin() as conn:
            await store.drop_chapters_from(conn, document_id, len(chapters))

        # 3. the book
        book_written = False
        if force or chapters_written or doc.summary_model != model or not doc.global_summary:
            combined = fit_to_budget(
                [f"{heading}: {text}" for heading, text in chapter_texts],
                settings.summary_global_input_chars,
            )
            summary = await writer.book(doc.title, doc.author, "\n".join(combined))
            book_written = True
        else:
            summary = doc.global_summary
        async with engine.begin() as conn:
            await store.save_global_summary(conn, document_id, summary, model)
        done = total
        report("book")
    except Exception as exc:
        async with engine.begin() as conn:
            await store.set_summary_state(
                conn, document_id, "failed", done=done, error=f"{type(exc).__name__}: {exc}"
            )
        raise
    return SummaryReport(
        document_id,
        model,
        len(changed),
        chapters_written,
        book_written,
        len(parents),
        len(chapters),
        time.perf_counter() - started,
    )
