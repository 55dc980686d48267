"""PDF: text per page with 1-based page numbers, chapters and sections from the outline.

Two libraries, each for what it does best:

* **pypdf** opens the file and owns everything structural: encryption (the empty user
  password is tried, any other password refuses the file), the page count and the
  ``MAX_PAGES`` check, the outline (chapters and sections), title and author. These stay
  on pypdf because its handling of them is tested on the sample corpus and its errors map
  to clear messages; they cost about 0.15 s on a 117-page textbook.
* **pypdfium2** (Google's PDFium, the PDF engine of Chrome, as native wheels under
  Apache-2.0/BSD-3) extracts each page's text. Profiling showed pypdf's text extraction
  was 95% of parsing: it tokenises content streams in pure Python, about 2.3 s for that
  textbook, a third of the time its embedding takes. PDFium does the same pages in about
  0.1 s, with better text: ligatures come out as letters (``fi`` rather than ``ﬁ``),
  words are spaced where pypdf ran them together, and maths symbols (``⊆ ∈ ∅``) where
  pypdf garbled them. It marks a word hyphenated at a line end with U+FFFE between the
  halves; :func:`~agent.ingest.hyphens.join_line_breaks` joins them, keeping the hyphen of
  a compound the document writes hyphenated elsewhere ("dual-encoder"). Its lines of
  spaces and of glyphs without Unicode are dropped, as they are never paragraph breaks.

pypdf stays the fallback for text: when PDFium cannot load a file that pypdf opened, or
counts its pages differently, every page is extracted by pypdf as before; when PDFium
fails on one page, pypdf tries that page. A page neither can read is skipped (and logged).
PDFium is not thread-safe, not even across documents, and parsing runs in worker threads
(``asyncio.to_thread``), so all PDFium work happens under one process-wide lock, and every
PDFium object is closed explicitly inside it rather than left to finalizers that could run
on another thread.

Damaged, encrypted and oversized files end in :class:`UnreadableDocument` (oversized ones in
its subclass :class:`DocumentTooLarge`) with a clear message, never in one of pypdf's or
PDFium's exception types. ``MAX_PAGES`` and ``MAX_CHARS`` bound the work and memory one
upload may take; callers may override them per call (ingestion passes the settings
``max_pdf_pages`` and ``max_document_chars``).
"""

from __future__ import annotations

import io
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from agent.ingest.document import (
    DocumentTooLarge,
    Paragraph,
    ParsedDocument,
    UnreadableDocument,
)
from agent.ingest.hyphens import join_line_breaks
from agent.ingest.page_furniture import without_running_lines
from agent.ingest.pdf_paragraphs import joined_over_page, runs_on, split_paragraphs
from agent.ingest.pdf_tables import with_tables_read
from agent.ingest.pdf_title import CONTROL as _CONTROL
from agent.ingest.pdf_title import (
    clean_field,
    first_page_lines,
    heading_title,
    metadata_title_author,
)

if TYPE_CHECKING:
    from pypdf import PdfReader
    from pypdfium2 import PdfDocument

logger = logging.getLogger(__name__)

MAX_PAGES = 2000
"""More pages than this and the PDF is refused before any text is extracted."""
MAX_CHARS = 20_000_000
"""Extraction stops, and the PDF is refused, once its text grows past this many characters."""

Heading = tuple[str | None, str | None]
"""``(chapter, section)`` of a page."""


_PDFIUM_LOCK = threading.Lock()
"""PDFium must never be called from two threads at once, not even for different files."""


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
    whether the file was ``encrypted`` and whether its ``outline`` gave chapters. Running
    headers and footers are left out (:func:`without_running_lines`).
    """
    max_pages = MAX_PAGES if max_pages is None else max_pages
    max_chars = MAX_CHARS if max_chars is None else max_chars
    reader, encrypted = _open(data)
    page_count = _page_count(reader, max_pages)
    starts = outline_starts(reader)
    texts = without_running_lines(_page_texts(data, reader, page_count, max_chars))
    paragraphs = _paragraphs(texts, headings_by_page(starts, page_count))
    title, author = metadata_title_author(reader)
    title = title or _heading_title(data)
    return ParsedDocument(
        title=title or default_title,
        file_type="pdf",
        paragraphs=paragraphs,
        author=author,
        page_count=page_count,
        metadata={"encrypted": encrypted, "outline": bool(starts)},
    )


def _paragraphs(texts: list[str | Exception], headings: list[Heading]) -> list[Paragraph]:
    """Paragraphs of every readable page; ``texts`` holds each page's text or failure. A
    sentence that a page break cut is finished in the paragraph it starts in."""
    paragraphs: list[Paragraph] = []
    failure: Exception | None = None
    for number, (text, (chapter, section)) in enumerate(zip(texts, headings, strict=True), 1):
        if isinstance(text, Exception):
            failure = failure or text
            logger.warning("page %d of the PDF could not be read: %s", number, _reason(text))
            continue
        bodies = split_paragraphs(with_tables_read(text))
        # a paragraph that the page break cut keeps its first page
        last = paragraphs[-1] if paragraphs and paragraphs[-1].page == number - 1 else None
        if last is not None and bodies and runs_on(last.text, bodies[0]):
            text, bodies[0] = joined_over_page(last.text, bodies[0])
            paragraphs[-1] = replace(last, text=text)
            bodies = [body for body in bodies if body]
        paragraphs.extend(
            Paragraph(body, page=number, chapter=chapter, section=section) for body in bodies
        )
    if not paragraphs and failure is not None:
        raise UnreadableDocument(f"the PDF's pages could not be read: {_reason(failure)}")
    return paragraphs


def _page_texts(
    data: bytes, reader: PdfReader, page_count: int, max_chars: int
) -> list[str | Exception]:
    """Text of each page (PDFium, else pypdf), or why it could not be read.

    Refused with :class:`UnreadableDocument` once the text passes ``max_chars``.
    """
    texts = _pdfium_texts(data, page_count, max_chars)
    if texts is None:
        return _pypdf_texts(reader, page_count, max_chars)
    texts = join_line_breaks(texts)
    total = sum(len(text) for text in texts if isinstance(text, str))
    for index, text in enumerate(texts):
        if isinstance(text, Exception):  # PDFium failed on this page: pypdf may not
            try:
                texts[index] = recovered = _pypdf_page_text(reader, index + 1)
            except Exception as exc:
                texts[index] = exc
                continue
            total += len(recovered)
            _check_chars(total, max_chars)
    return texts


def _pdfium_texts(data: bytes, page_count: int, max_chars: int) -> list[str | Exception] | None:
    """Text of each page by PDFium, or why it could not be read.

    ``None`` where PDFium cannot load the file or counts its pages unlike pypdf: then pypdf
    extracts them all.
    """
    import pypdfium2

    with _PDFIUM_LOCK:
        try:
            # the empty password opens files encrypted with an owner password only, as in pypdf
            document = pypdfium2.PdfDocument(data, password="")
        except Exception as exc:
            logger.info("PDFium cannot load the PDF, pypdf extracts its text: %s", _reason(exc))
            return None
        try:
            if len(document) != page_count:
                logger.info(
                    "PDFium counts %d pages where pypdf counts %d, pypdf extracts the text",
                    len(document),
                    page_count,
                )
                return None
            return _collect_pages(
                lambda index: _pdfium_page_text(document, index), page_count, max_chars
            )
        finally:
            document.close()  # closes its pages and text pages too


def _heading_title(data: bytes) -> str | None:
    """The title the first page opens with (:func:`~agent.ingest.pdf_title.heading_title`),
    ``None`` where there is none or PDFium cannot read the page."""
    import pypdfium2

    with _PDFIUM_LOCK:
        try:
            document = pypdfium2.PdfDocument(data, password="")
        except Exception:
            return None
        try:
            return heading_title(first_page_lines(document))
        except Exception as exc:  # the title is a nicety: never fail the file for it
            logger.info("the first page's heading could not be read: %s", _reason(exc))
            return None
        finally:
            document.close()


def _pdfium_page_text(document: PdfDocument, index: int) -> str:
    """PDFium's text of the 0-based page ``index``, without control characters or blank lines.

    The caller holds ``_PDFIUM_LOCK``.
    """
    page = document[index]
    try:
        textpage = page.get_textpage()
        try:
            text = textpage.get_text_range()
        finally:
            textpage.close()
    finally:
        page.close()
    text = _CONTROL.sub("", text)  # line-end hyphen marks stay for join_line_breaks
    # PDFium never marks paragraphs with blank lines; its blank lines are artifacts (a line of
    # spaces, or of maths glyphs just stripped) that would switch split_paragraphs to
    # blank-line mode and merge the whole page into a few paragraphs
    return "\n".join(line for line in text.splitlines() if line.strip())


def _pypdf_texts(reader: PdfReader, page_count: int, max_chars: int) -> list[str | Exception]:
    """Text of each page by pypdf (slow: pure Python), or why it could not be read."""
    return _collect_pages(lambda index: _pypdf_page_text(reader, index + 1), page_count, max_chars)


def _collect_pages(
    read: Callable[[int], str], page_count: int, max_chars: int
) -> list[str | Exception]:
    """``read(index)`` of every 0-based page, or the exception it raised; refused once the
    text passes ``max_chars``."""
    texts: list[str | Exception] = []
    total = 0
    for index in range(page_count):
        try:
            text = read(index)
        except Exception as exc:
            texts.append(exc)
            continue
        total += len(text)
        _check_chars(total, max_chars)
        texts.append(text)
    return texts


def _check_chars(total: int, max_chars: int) -> None:
    if total > max_chars:
        raise DocumentTooLarge(f"the PDF has more than {max_chars:,} characters of text")


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
        raise DocumentTooLarge(f"the PDF has {count:,} pages, more than the limit of {max_pages:,}")
    return count


def _pypdf_page_text(reader: PdfReader, number: int) -> str:
    """Text of the 1-based page ``number`` by pypdf, without control characters.

    May raise anything pypdf raises on a damaged content stream, including RecursionError
    on pathologically nested content: the caller skips the page.
    """
    text = reader.pages[number - 1].extract_text() or ""
    return _CONTROL.sub("", text)


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
    return clean_field(getattr(entry, "title", None))


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
