"""Sentence-aware chunking: parent/child for long-form text, flat overlapping chunks otherwise.

Long form (seed 002 2.4.2): paragraphs are grouped into parents of up to ``parent_max``
characters (a new chapter always starts a new parent); each parent is cut into children of
``child_min``..``child_max`` characters with a 2-sentence overlap. Only children are embedded.
Short or unstructured documents get flat chunks (``user_chunk_*``) with a 1-sentence overlap,
PII-heavy ones small chunks without overlap, FAQs one chunk per question and answer.
Every chunk keeps the chapter, section and page of the text it starts with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agent.config import Settings
from agent.ingest.detect import is_question
from agent.ingest.document import Paragraph, ended
from agent.ingest.sentences import split_sentences


@dataclass(frozen=True)
class Sentence:
    """A sentence and where it comes from."""

    text: str
    page: int | None
    chapter: str | None
    section: str | None


@dataclass
class ChunkDraft:
    """A chunk before it has ids and embeddings; parents carry their children."""

    text: str
    chapter: str | None
    section: str | None
    page: int | None
    page_end: int | None = None
    children: list[ChunkDraft] = field(default_factory=list)


def _sentences(paragraphs: list[Paragraph], hard_max: int) -> list[Sentence]:
    """Each paragraph's sentences, the last ended with a full stop if it had no end mark
    (:func:`~agent.ingest.document.ended`), a sentence over ``hard_max`` cut in pieces."""
    out: list[Sentence] = []
    for p in paragraphs:
        sentences = split_sentences(p.text)
        if sentences:
            sentences[-1] = ended(sentences[-1])
        for s in sentences:
            for piece in _wrap(s, hard_max):
                out.append(Sentence(piece, p.page, p.chapter, p.section))
    return out


def _wrap(sentence: str, limit: int) -> list[str]:
    """Cut a sentence longer than ``limit`` at word boundaries (the only cut inside one)."""
    if len(sentence) <= limit:
        return [sentence]
    pieces, current = [], ""
    for word in sentence.split(" "):
        if current and len(current) + 1 + len(word) > limit:
            pieces.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    if current:
        pieces.append(current)
    return pieces


def _joined_len(sentences: list[Sentence]) -> int:
    return sum(len(s.text) for s in sentences) + max(len(sentences) - 1, 0)


def group_sentences(
    sentences: list[Sentence], min_chars: int, max_chars: int, overlap: int
) -> list[list[Sentence]]:
    """Pack sentences into groups of at most ``max_chars``, ``overlap`` sentences repeated.

    A too-small last group is folded into the previous one when the result stays within
    ``max_chars + min_chars // 2``.
    """
    groups: list[list[Sentence]] = []
    buffer: list[Sentence] = []
    fresh = 0  # sentences in the buffer not yet emitted
    for s in sentences:
        if buffer and fresh and _joined_len([*buffer, s]) > max_chars:
            groups.append(buffer)
            keep = min(overlap, len(buffer))
            while keep and _joined_len([*buffer[-keep:], s]) > max_chars:
                keep -= 1  # long sentences: repeat fewer rather than overflow
            buffer = buffer[-keep:] if keep else []
            fresh = 0
        buffer.append(s)
        fresh += 1
    if buffer and fresh:
        tail = buffer[-fresh:]
        if (
            groups
            and _joined_len(buffer) < min_chars
            and (_joined_len(groups[-1]) + _joined_len(tail) + 1 <= max_chars + min_chars // 2)
        ):
            groups[-1] = groups[-1] + tail
        else:
            groups.append(buffer)
    return groups


def _draft(group: list[Sentence]) -> ChunkDraft:
    pages = [s.page for s in group if s.page is not None]
    first = group[0]
    return ChunkDraft(
        text=" ".join(s.text for s in group),
        chapter=first.chapter,
        section=first.section,
        page=pages[0] if pages else None,
        page_end=pages[-1] if pages else None,
    )


def _parent_groups(paragraphs: list[Paragraph], max_chars: int) -> list[list[Paragraph]]:
    groups: list[list[Paragraph]] = []
    current: list[Paragraph] = []
    size = 0
    for p in paragraphs:
        new_chapter = current and (p.chapter != current[-1].chapter)
        if current and (new_chapter or size + 2 + len(p.text) > max_chars):
            groups.append(current)
            current, size = [], 0
        current.append(p)
        size += len(p.text) + 2
    if current:
        groups.append(current)
    return groups


def chunk_long_form(paragraphs: list[Paragraph], settings: Settings) -> list[ChunkDraft]:
    """Parents (context) holding children (retrieval units) for books and long documents."""
    parents: list[ChunkDraft] = []
    for group in _parent_groups(paragraphs, settings.parent_max_chars):
        sentences = _sentences(group, settings.child_max_chars)
        # a single huge paragraph becomes several parents
        for part in group_sentences(
            sentences, settings.parent_min_chars, settings.parent_max_chars, 0
        ):
            parent = _draft(part)
            parent.children = [
                _draft(g)
                for g in group_sentences(
                    part,
                    settings.child_min_chars,
                    settings.child_max_chars,
                    settings.child_overlap_sentences,
                )
            ]
            parents.append(parent)
    return parents


def chunk_flat(
    paragraphs: list[Paragraph], settings: Settings, *, by_page: bool = False
) -> list[ChunkDraft]:
    """Flat ~800-character chunks with a 1-sentence overlap for short, unstructured text.

    ``by_page`` (slides): no chunk spans two pages. A slide is a unit of its own, and a
    chunk of three slides' text (the title slide, the highlights, a table of regions) sat
    at 0.13 cosine from "By what percentage did Southern Ports grow?", which its table
    answers, so the question was taken as not covered."""
    runs: list[list[Paragraph]] = []
    for p in paragraphs:
        if runs and not (by_page and p.page != runs[-1][-1].page):
            runs[-1].append(p)
        else:
            runs.append([p])
    return [
        _draft(g)
        for run in runs
        for g in group_sentences(
            _sentences(run, settings.user_chunk_max_chars),
            settings.user_chunk_min_chars,
            settings.user_chunk_max_chars,
            settings.user_overlap_sentences,
        )
    ]


def chunk_sensitive(paragraphs: list[Paragraph], settings: Settings) -> list[ChunkDraft]:
    """Small (~450 characters) chunks without overlap for PII-heavy text."""
    sentences = _sentences(paragraphs, settings.sensitive_chunk_max_chars)
    return [
        _draft(g)
        for g in group_sentences(
            sentences, settings.sensitive_chunk_min_chars, settings.sensitive_chunk_max_chars, 0
        )
    ]


_INLINE_QUESTION = re.compile(r"(?<=\s)(?=Q\s*\d*\s*[:.)]\s)")


def chunk_faq(paragraphs: list[Paragraph], settings: Settings) -> list[ChunkDraft]:
    """One chunk per question with its answer, never split (capped at ``faq_max_chars``).

    A pair starts at a question paragraph and takes the paragraphs that follow until the
    next question; text before the first question is its own chunk. A heading opens the
    chunk of what follows it ("Shipping" before "How long does delivery take?"), never
    closes the answer before it.
    """
    units: list[list[Paragraph]] = []
    heading: list[Paragraph] = []
    for p in paragraphs:
        if p.text == (p.chapter if p.section is None else p.section):  # a heading
            heading.append(p)
            continue
        for piece in _INLINE_QUESTION.split(p.text):
            piece = piece.strip()
            if not piece:
                continue
            part = Paragraph(piece, p.page, p.chapter, p.section)
            if not units or is_question(piece) or heading:
                units.append([*heading, part])
                heading = []
            else:
                units[-1].append(part)
    if heading:
        units.append(heading)
    drafts = []
    for unit in units:
        text = "\n".join(p.text for p in unit)
        if len(text) > settings.faq_max_chars:
            cut = text.rfind(" ", 0, settings.faq_max_chars)
            text = text[: cut if cut > 0 else settings.faq_max_chars]
        pages = [p.page for p in unit if p.page is not None]
        drafts.append(
            ChunkDraft(
                text=text,
                chapter=unit[0].chapter,
                section=unit[0].section,
                page=pages[0] if pages else None,
                page_end=pages[-1] if pages else None,
            )
        )
    return drafts


def chunk_document(
    doc_type: str, paragraphs: list[Paragraph], settings: Settings, *, slides: bool = False
) -> list[ChunkDraft]:
    """Chunk by document type: BOOK gives parents with children, the others flat chunks
    (``slides``: a deck's flat chunks each keep to one slide)."""
    if doc_type == "BOOK":
        return chunk_long_form(paragraphs, settings)
    if doc_type == "FAQ":
        return chunk_faq(paragraphs, settings)
    if doc_type == "SENSITIVE":
        return chunk_sensitive(paragraphs, settings)
    return chunk_flat(paragraphs, settings, by_page=slides)
