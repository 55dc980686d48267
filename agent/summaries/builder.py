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
from agent.db.summaries import ChapterSummary, DocumentForSummary, ParentForSummary
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

    run = _SummaryRun(services, doc, parents, writer, force, progress)
    async with engine.begin() as conn:
        await store.set_summary_state(conn, document_id, "running", done=run.done, total=run.total)
    try:
        await run.sections()
        chapter_texts = await run.chapters(stored)
        book_written = await run.book(chapter_texts)
    except Exception as exc:
        async with engine.begin() as conn:
            await store.set_summary_state(
                conn, document_id, "failed", done=run.done, error=f"{type(exc).__name__}: {exc}"
            )
        raise
    return SummaryReport(
        document_id,
        run.model,
        len(run.changed),
        run.chapters_written,
        book_written,
        len(parents),
        len(run.parts),
        time.perf_counter() - started,
    )


class _SummaryRun:
    """One pass over a document: sections, then chapters, then the book, each stage writing
    only what is missing or stale, saving as it goes and counting progress."""

    def __init__(
        self,
        services: Services,
        doc: DocumentForSummary,
        parents: list[ParentForSummary],
        writer: SummaryWriter,
        force: bool,
        progress: ProgressFn | None,
    ) -> None:
        self.engine, self.settings = services.engine, services.settings
        self.doc, self.parents, self.writer, self.force = doc, parents, writer, force
        self.progress = progress
        self.model = writer.name
        self.parts = group_chapters(parents, self.settings.summary_parents_per_part)
        self.total = len(parents) + len(self.parts) + 1
        self.done = sum(self.section_done(p) for p in parents)
        self.texts: dict[uuid.UUID, str] = {p.id: p.concise_summary or "" for p in parents}
        self.topics: dict[uuid.UUID, list[str]] = {}
        self.changed: set[uuid.UUID] = set()
        self.chapters_written = 0

    def section_done(self, parent: ParentForSummary) -> bool:
        """Whether a section already has this writer's summary (and nothing forces a rewrite)."""
        return (
            not self.force and parent.summary_model == self.model and bool(parent.concise_summary)
        )

    def report(self, stage: Literal["sections", "chapters", "book"]) -> None:
        """Tell the caller how far the run is."""
        if self.progress:
            self.progress(SummaryProgress(stage, self.done, self.total))

    async def sections(self) -> None:
        """1. Summarize every section that has no current summary."""
        self.report("sections")
        for chapter in self.parts:
            for parent in chapter.parents:
                if self.section_done(parent):
                    continue
                summary = await self.writer.section(
                    self.doc.title, _section_heading(parent, chapter), parent.text
                )
                self.texts[parent.id], self.topics[parent.id] = summary.text, summary.topics
                self.changed.add(parent.id)
                self.done += 1
                async with self.engine.begin() as conn:
                    await store.save_section_summary(
                        conn, parent.id, summary.text, summary.topics, self.model
                    )
                    await store.set_summary_state(conn, self.doc.id, "running", done=self.done)
                self.report("sections")

    def chapter_fresh(self, chapter: Chapter, old: ChapterSummary | None) -> bool:
        """Whether a stored chapter summary still holds (same writer, title and sections)."""
        return (
            not self.force
            and old is not None
            and old.model == self.model
            and old.chapter_title == chapter.title
            and not any(p.id in self.changed for p in chapter.parents)
        )

    async def chapters(self, stored: dict[int, ChapterSummary]) -> list[tuple[str, str]]:
        """2. Summarize each chapter whose summary is missing or stale: ``(heading, text)``."""
        chapter_texts: list[tuple[str, str]] = []
        for chapter in self.parts:
            old = stored.get(chapter.index)
            if self.chapter_fresh(chapter, old):
                chapter_texts.append((chapter.heading, old.summary))
            else:
                chapter_texts.append((chapter.heading, await self.write_chapter(chapter)))
            self.done += 1
            self.report("chapters")
        async with self.engine.begin() as conn:
            await store.drop_chapters_from(conn, self.doc.id, len(self.parts))
        return chapter_texts

    async def write_chapter(self, chapter: Chapter) -> str:
        """Write and save one chapter's summary from its sections' summaries."""
        sections = fit_to_budget(
            [self.texts[p.id] for p in chapter.parents if self.texts[p.id]],
            self.settings.summary_chapter_input_chars,
        )
        summary = await self.writer.chapter(self.doc.title, chapter.heading, sections)
        labels = clean_labels(
            ", ".join(summary.topics + _chapter_topics(chapter, self.topics)), limit=6
        )
        record = ChapterSummary(chapter.index, chapter.title, summary.text, labels, self.model)
        async with self.engine.begin() as conn:
            await store.save_chapter_summary(conn, self.doc.id, record)
            await store.set_summary_state(conn, self.doc.id, "running", done=self.done + 1)
        self.chapters_written += 1
        return summary.text

    async def book(self, chapter_texts: list[tuple[str, str]]) -> bool:
        """3. The book's global summary, rewritten when a chapter changed: whether it was."""
        doc = self.doc
        stale = doc.summary_model != self.model or not doc.global_summary
        written = self.force or bool(self.chapters_written) or stale
        if written:
            combined = fit_to_budget(
                [f"{heading}: {text}" for heading, text in chapter_texts],
                self.settings.summary_global_input_chars,
            )
            summary = await self.writer.book(doc.title, doc.author, "\n".join(combined))
        else:
            summary = doc.global_summary
        async with self.engine.begin() as conn:
            await store.save_global_summary(conn, doc.id, summary, self.model)
        self.done = self.total
        self.report("book")
        return written
