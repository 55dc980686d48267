"""PDF: text per page with 1-based page numbers, chapters and sections from the outline (pypdf).

Damaged, encrypted and oversized files end in :class:`UnreadableDocument` with a clear
message, never in one of pypdf's many exception types. ``MAX_PAGES`` and ``MAX_CHARS`` bound
the work and memory one upload may take; callers may override them per call.
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from agent.ingest.document import Paragraph, ParsedDocument, UnreadableDocument, blocks, unwrap

if TYPE_CHECKING:
    from pypdf import PdfReader

logger = logging.getLogger(__name__)

MAX_PAGES = 2000
"""More pages than this and the PDF is refused before any text is extracted."""
MAX_CHARS = 20_000_000
"""Extraction stops, and the PDF is refused, once its text grows past this many characters."""

Heading = tuple[str | None, str | None]
"""``(chapter, section)`` of a page."""

# Control characters (NUL above all) come from broken font encodings; storage rejects them.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_SENTENCE_END = re.compile(r"[.?!:][\"'’”)\]]*$")
_BULLET = re.compile(r"(?:[•◦▪▫‣●○■□∙·*–—-]|\d{1,3}[.)])\s")


def parse_pdf(
    data: bytes,
    default_title: str,
    *,
    max_pages: int | None = None,
    max_chars: int | None = None,
) -> ParsedDocument:
    """Paragraphs of a PDF with their page, chapter and section.

    ``max_pages`` and ``max_chars`` default to ``MAX_PAGES`` and ``MAX_CHARS``. A page whose
    text cannot be extracted is skipped (and logged); the others are kept. ``metadata`` says
    whether the file was ``encrypted`` and whether its ``outline`` gave chapters.
    """
    max_pages = MAX_PAGES if max_pages is None else max_pages
    max_chars = MAX_CHARS if max_chars is None else max_chars
    reader, encrypted = _open(data)
    page_count = _page_count(reader, max_pages)
    starts = outline_starts(reader)
    paragraphs = _paragraphs(reader, headings_by_page(starts, page_count), max_chars)
    title, author = _info(reader)
    return ParsedDocument(
        title=title or default_title,
        file_type="pdf",
        paragraphs=paragraphs,
        author=author,
        page_count=page_count,
        metadata={"encrypted": encrypted, "outline": bool(starts)},
    )


def _paragraphs(reader: PdfReader, headings: list[Heading], max_chars: int) -> list[Paragraph]:
    """Paragraphs of every readable page, refused once the text passes ``max_chars``."""
    paragraphs: list[Paragraph] = []
    total = 0
    failure: Exception | None = None
    for number, (chapter, section) in enumerate(headings, start=1):
        try:
            text = _page_text(reader, number)
        except Exception as exc:
            failure = failure or exc
            logger.warning("page %d of the PDF could not be read: %s", number, _reason(exc))
            continue
        total += len(text)
        if total > max_chars:
            raise UnreadableDocument(f"the PDF has more than {max_chars:,} characters of text")
        paragraphs.extend(
            Paragraph(body, page=number, chapter=chapter, section=section)
            for body in split_paragraphs(text)
        )
    if not paragraphs and failure is not None:
        raise UnreadableDocument(f"the PDF's pages could not be read: {_reason(failure)}")
    return paragraphs


def _reason(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _open(data: bytes) -> tuple[PdfReader, bool]:
    """The reader, decrypted with the empty user password where the file is encrypted."""
    from pypdf import PdfReader
    from pypdf.errors import DependencyError

    try:
        reader = PdfReader(io.BytesIO(data))
        encrypted = bool(reader.is_encrypted)
        if encrypted and not reader.decrypt(""):
            raise UnreadableDocument("the PDF is encrypted with a password")
    except UnreadableDocument:
        raise
    except DependencyError as exc:
        raise UnreadableDocument(f"the PDF's encryption is not supported: {exc}") from exc
    except Exception as exc:  # pypdf raises many types (and RecursionError) on damaged files
        raise UnreadableDocument(f"the PDF could not be read: {_reason(exc)}") from exc
    return reader, encrypted


def _page_count(reader: PdfReader, max_pages: int) -> int:
    """The number of pages, refused above ``max_pages`` before any text is extracted."""
    try:
        count = len(reader.pages)
    except Exception as exc:  # a broken page tree
        raise UnreadableDocument(f"the PDF could not be read: {_reason(exc)}") from exc
    if count > max_pages:
        raise UnreadableDocument(
            f"the PDF has {count:,} pages, more than the limit of {max_pages:,}"
        )
    return count


def _page_text(reader: PdfReader, number: int) -> str:
    """Text of the 1-based page ``number`` without control characters.

    May raise anything pypdf raises on a damaged content stream, including RecursionError
    on pathologically nested content: the caller skips the page.
    """
    text = reader.pages[number - 1].extract_text() or ""
    return _CONTROL.sub("", text)


def _info(reader: PdfReader) -> tuple[str | None, str | None]:
    """Title and author from the document information, ``None`` where absent or unreadable."""
    try:
        meta = reader.metadata
        if meta is None:
            return None, None
        return _clean(meta.title), _clean(meta.author)
    except Exception:  # broken metadata must not cost the text
        return None, None


def outline_starts(reader: PdfReader) -> list[tuple[int, str, str | None]]:
    """``(page, chapter, section)`` where each top- or second-level outline entry starts.

    Pages are 1-based; top-level entries give ``(page, title, None)``, second-level entries
    ``(page, parent title, title)``; deeper levels are ignored. Sorted by page, keeping the
    outline's order within a page. A missing or broken outline gives ``[]``.
    """
    try:
        starts = list(_walk_outline(reader, reader.outline))
    except Exception as exc:  # includes RecursionError on cyclic or absurdly deep outlines
        logger.warning("the PDF outline could not be read: %s", _reason(exc))
        return []
    return sorted(starts, key=lambda start: start[0])


def _walk_outline(reader: PdfReader, outline: list) -> Iterator[tuple[int, str, str | None]]:
    # pypdf nests an entry's children as a list right after the entry
    chapter: str | None = None
    for item in outline:
        if not isinstance(item, list):
            chapter = _title(item)
            page = _destination_page(reader, item)
            if chapter and page:
                yield page, chapter, None
            continue
        for child in item:
            section = None if isinstance(child, list) else _title(child)
            page = _destination_page(reader, child) if section else None
            if chapter and section and page:
                yield page, chapter, section


def _title(entry: object) -> str | None:
    return _clean(getattr(entry, "title", None))


def _clean(value: object) -> str | None:
    """A string with its whitespace collapsed, ``None`` for empty strings and non-strings."""
    return (" ".join(value.split()) or None) if isinstance(value, str) else None


def _destination_page(reader: PdfReader, entry: object) -> int | None:
    index = reader.get_destination_page_number(entry)
    return index + 1 if isinstance(index, int) and index >= 0 else None


def headings_by_page(starts: list[tuple[int, str, str | None]], page_count: int) -> list[Heading]:
    """``(chapter, section)`` of each page: those of the last entry starting on or before it.

    ``starts`` must be sorted by page, as :func:`outline_starts` returns them.
    """
    headings: list[Heading] = []
    current: Heading = (None, None)
    pending = iter(starts)
    upcoming = next(pending, None)
    for number in range(1, page_count + 1):
        while upcoming is not None and upcoming[0] <= number:
            current = upcoming[1], upcoming[2]
            upcoming = next(pending, None)
        headings.append(current)
    return headings


def split_paragraphs(text: str) -> list[str]:
    """Paragraphs of one page's extracted text, each unwrapped onto one line.

    Blank lines separate paragraphs when the page has any. pypdf usually emits none, so
    otherwise a paragraph ends after a line that ends a sentence (``.``, ``?``, ``!`` or
    ``:``, maybe followed by a closing quote or bracket) when the next line starts with an
    upper-case letter or a bullet (``•``, ``-``, ``1.``, ``2)`` ...). The lines of a
    paragraph are joined and line-end hyphens removed (:func:`unwrap`).
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    parts = blocks(text) if _BLANK_LINE.search(text) else _sentence_blocks(text)
    return [body for body in map(unwrap, parts) if body]


def _sentence_blocks(text: str) -> list[str]:
    """Lines grouped into paragraphs at sentence ends followed by a new-paragraph start."""
    groups: list[list[str]] = []
    for line in (ln.strip() for ln in text.splitlines()):
        if not line:
            continue
        if groups and not _ends_paragraph(groups[-1][-1], line):
            groups[-1].append(line)
        else:
            groups.append([line])
    return ["\n".join(group) for group in groups]


def _ends_paragraph(line: str, next_line: str) -> bool:
    return bool(_SENTENCE_END.search(line)) and (
        next_line[0].isupper() or bool(_BULLET.match(next_line))
    )
