"""Word (.docx) and PowerPoint (.pptx) files: text in reading order with its headings or slide.

Both formats are zip archives, so each upload is checked before a library opens it (a zip bomb
guard): the member count and the declared uncompressed size are bounded, then every member is
copied into a fresh uncompressed archive in bounded chunks. Chunked reads stop at a member's
declared size, whereas python-docx/pptx read whole members, which inflates a member that lies
about its size in one allocation of up to 2 GiB.

Tables become one :class:`Paragraph` per row, the row's non-empty cells joined with ``" | "``.
"""

from __future__ import annotations

import io
import re
import shutil
import zipfile
import zlib
from collections.abc import Iterator
from typing import Any

from agent.ingest.document import (
    DocumentTooLarge,
    Paragraph,
    ParsedDocument,
    UnreadableDocument,
    broken_lines,
    squash,
)
from agent.ingest.tables import table_lines

MAX_UNCOMPRESSED_BYTES = 200 * 1024 * 1024
"""Largest total uncompressed size of a DOCX/PPTX archive that is opened (the default of
``max_unzipped_bytes``; ingestion passes the setting of that name)."""

MAX_MEMBERS = 10_000
"""Most files a DOCX/PPTX archive may hold."""

WORD = "a Word document"
POWERPOINT = "a PowerPoint presentation"

_COMPRESSIONS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_STREAM_NAME = re.compile(r"^file '<[^>]*>' ")
_HEADING = re.compile(r"^heading\s*(\d)$", re.I)
# Office fills these in by default; they are not real titles.
_PLACEHOLDER_TITLE = re.compile(r"^(slide \d+|powerpoint presentation|presentation\d*)$", re.I)


def safe_archive(
    data: bytes, filename: str, what: str, max_unzipped_bytes: int | None = None
) -> bytes:
    """``data`` as an uncompressed zip that unpacks to its declared, bounded size.

    Raises :class:`UnreadableDocument` for anything but a bounded Office (OPC) zip archive,
    :class:`DocumentTooLarge` when the members' declared sizes sum to more than
    ``max_unzipped_bytes`` (default ``MAX_UNCOMPRESSED_BYTES``), before inflating anything.
    """
    cap = MAX_UNCOMPRESSED_BYTES if max_unzipped_bytes is None else max_unzipped_bytes
    if data.startswith(_OLE_MAGIC):
        raise _unreadable(
            filename, what, "it is a legacy binary (.doc/.ppt) or password-protected Office file"
        )
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as exc:
        raise _unreadable(filename, what, f"it is not a valid zip archive ({exc})") from exc
    if len(members) > MAX_MEMBERS:
        raise _unreadable(
            filename, what, f"the archive holds {len(members):,} files (limit {MAX_MEMBERS:,})"
        )
    size = sum(member.file_size for member in members)
    if size > cap:
        reason = f"it unpacks to {_mib(size)} (limit {_mib(cap)})"
        raise _unreadable(filename, what, reason, DocumentTooLarge)
    if not any(member.filename == "[Content_Types].xml" for member in members):
        raise _unreadable(filename, what, "it is a zip archive but not an Office file")
    # zipfile inflates bzip2/LZMA chunks without an output bound; Office only uses deflate
    if any(member.compress_type not in _COMPRESSIONS for member in members):
        raise _unreadable(filename, what, "it uses a compression method Office does not use")
    return _repack(data, filename, what)


def _mib(size: int) -> str:
    return f"{size / 1024**2:,.0f} MiB" if size >= 1024**2 else f"{size:,} bytes"


def _repack(data: bytes, filename: str, what: str) -> bytes:
    """Copy every member in 1 MiB reads into a stored (uncompressed) archive."""
    out = io.BytesIO()
    seen: set[str] = set()
    try:
        with (
            zipfile.ZipFile(io.BytesIO(data)) as source,
            zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target,
        ):
            for member in source.infolist():
                if member.is_dir() or member.filename in seen:
                    continue
                seen.add(member.filename)
                with source.open(member) as src, target.open(member.filename, "w") as dst:
                    shutil.copyfileobj(src, dst, 1024 * 1024)
    # BadZipFile: bad CRC or header; RuntimeError: an encrypted member
    except (
        zipfile.BadZipFile,
        RuntimeError,
        zlib.error,
        ValueError,
        OSError,
        EOFError,
    ) as exc:
        raise _unreadable(filename, what, f"the archive is damaged ({exc})") from exc
    return out.getvalue()


def parse_docx(
    data: bytes, default_title: str, filename: str, *, max_unzipped_bytes: int | None = None
) -> ParsedDocument:
    """DOCX: body paragraphs and table rows in order, with chapter and section.

    "Title" and "Heading 1" paragraphs start a chapter, "Heading 2" and deeper a section.
    Pages are not stored in a DOCX, so ``page`` is None. The title comes from the core
    properties, else the first Title/Heading 1 paragraph; table-of-contents entries are skipped.
    """
    import docx

    archive = safe_archive(data, filename, WORD, max_unzipped_bytes)
    try:
        document = docx.Document(io.BytesIO(archive))
        paragraphs, first_heading = _docx_paragraphs(document)
        props = document.core_properties
        meta_title, author = props.title, props.author
    except Exception as exc:  # python-docx and lxml raise many types on damaged parts
        raise _unreadable(filename, WORD, exc) from exc
    return ParsedDocument(
        title=_meta_title(meta_title) or first_heading or default_title,
        file_type="docx",
        paragraphs=paragraphs,
        author=squash(author or "") or None,
    )


def parse_pptx(
    data: bytes, default_title: str, filename: str, *, max_unzipped_bytes: int | None = None
) -> ParsedDocument:
    """PPTX: the text of every shape (tables and groups included), then the speaker notes,
    with its 1-based slide as page.

    The slide's title placeholder (its first line) is each paragraph's ``section``; the
    notes' section adds "speaker notes" to it.
    """
    from pptx import Presentation

    archive = safe_archive(data, filename, POWERPOINT, max_unzipped_bytes)
    try:
        presentation = Presentation(io.BytesIO(archive))
        slides = list(presentation.slides)
        paragraphs = [
            paragraph
            for number, slide in enumerate(slides, start=1)
            for paragraph in _slide_paragraphs(slide, number)
        ]
        props = presentation.core_properties
        meta_title, author = props.title, props.author
    except Exception as exc:  # python-pptx and lxml raise many types on damaged parts
        raise _unreadable(filename, POWERPOINT, exc) from exc
    return ParsedDocument(
        title=_meta_title(meta_title) or default_title,
        file_type="pptx",
        paragraphs=paragraphs,
        author=squash(author or "") or None,
        page_count=len(slides),
    )


def _unreadable(
    filename: str, what: str, reason: object, kind: type[UnreadableDocument] = UnreadableDocument
) -> UnreadableDocument:
    # python-docx/pptx name the stream, not the file: "file '<_io.BytesIO object at 0x…>' is …"
    detail = _STREAM_NAME.sub("the file ", str(reason))
    return kind(f"{filename} could not be read as {what}: {detail}")


def _meta_title(value: str | None) -> str | None:
    title = squash(value or "")
    return title if title and not _PLACEHOLDER_TITLE.match(title) else None


# --- DOCX ---------------------------------------------------------------------------------------


def _docx_paragraphs(document: Any) -> tuple[list[Paragraph], str | None]:
    """Located paragraphs of the body and the first Title/Heading 1 text."""
    from docx.oxml.ns import qn
    from docx.text.paragraph import Paragraph as DocxParagraph

    paragraphs: list[Paragraph] = []
    chapter = section = first_heading = None
    for element in _body_elements(document.element.body):
        if element.tag == qn("w:tbl"):
            rows = _docx_table_rows(element, document)
            paragraphs.extend(Paragraph(row, chapter=chapter, section=section) for row in rows)
            continue
        paragraph = DocxParagraph(element, document)
        text = broken_lines(paragraph.text)
        kind = _docx_kind(paragraph)
        if not text or kind == "toc":
            continue
        if kind == "chapter":
            chapter, section = text, None
            first_heading = first_heading or text
        elif kind == "section":
            section = text
        # a heading is read too, under itself: it often holds what a question asks for
        paragraphs.append(Paragraph(text, chapter=chapter, section=section))
    return paragraphs, first_heading


def _body_elements(parent: Any) -> Iterator[Any]:
    """``w:p`` and ``w:tbl`` children in order, looking inside content controls (``w:sdt``)."""
    from docx.oxml.ns import qn

    for child in parent.iterchildren():
        if child.tag in (qn("w:p"), qn("w:tbl")):
            yield child
        elif child.tag == qn("w:sdt"):
            # lxml caps XML depth at 256, so this recursion stays shallow
            for content in child.iterchildren(qn("w:sdtContent")):
                yield from _body_elements(content)


def _docx_kind(paragraph: Any) -> str | None:
    """ "chapter", "section", "toc" or None (body text), from the style or its base styles."""
    style = paragraph.style
    for _ in range(8):  # custom heading styles are usually based on a built-in one
        if style is None:
            return None
        name = (style.name or "").strip().lower()
        if name == "title":
            return "chapter"
        if name.startswith("toc"):
            return "toc"
        heading = _HEADING.match(name)
        if heading:
            return "chapter" if int(heading.group(1)) <= 1 else "section"
        style = style.base_style
    return None


def _docx_table_rows(table: Any, document: Any) -> list[str]:
    """Each row as a line of text (:func:`~agent.ingest.tables.table_lines`), one cell per
    ``w:tc``, so merged cells appear once; a first row Word repeats on each page
    (``w:tblHeader``) names the columns.

    Read from the XML rather than ``Row.cells``, which repeats merged cells and recurses once per
    row of a vertical merge.
    """
    from docx.oxml.ns import qn
    from docx.text.paragraph import Paragraph as DocxParagraph

    rows: list[list[str]] = []
    header = None
    for tr in table.iterchildren(qn("w:tr")):
        if not rows:
            properties = tr.find(qn("w:trPr"))
            if properties is not None and properties.find(qn("w:tblHeader")) is not None:
                header = True
        cells = []
        for tc in tr.iterchildren(qn("w:tc")):
            # tc.iter also reaches nested tables: their text stays inside this cell
            texts = (squash(DocxParagraph(p, document).text) for p in tc.iter(qn("w:p")))
            cells.append(" ".join(t for t in texts if t))
        rows.append(cells)
    return table_lines(rows, header)


# --- PPTX ---------------------------------------------------------------------------------------


def _slide_paragraphs(slide: Any, number: int) -> list[Paragraph]:
    """Paragraphs of one slide, each with the slide number and the slide title."""
    title_shape = slide.shapes.title
    section = None
    if title_shape is not None and title_shape.has_text_frame:
        lines = [squash(line) for line in title_shape.text_frame.text.splitlines()]
        section = next((line for line in lines if line), None)
    shown = [Paragraph(text, page=number, section=section) for text in _shape_texts(slide.shapes)]
    # what the speaker says over the slide often carries what the slide only hints at
    notes = f"{section}: speaker notes" if section else "Speaker notes"
    return shown + [Paragraph(text, page=number, section=notes) for text in _notes_texts(slide)]


def _notes_texts(slide: Any) -> list[str]:
    """The paragraphs of a slide's speaker notes (none when it has no notes page)."""
    if not slide.has_notes_slide:
        return []
    frame = slide.notes_slide.notes_text_frame
    if frame is None:
        return []
    return [text for p in frame.paragraphs if (text := broken_lines(p.text))]


def _shape_texts(shapes: Any) -> Iterator[str]:
    """Text of each shape's paragraphs and table rows, descending into group shapes."""
    from pptx.shapes.group import GroupShape

    for shape in shapes:
        if isinstance(shape, GroupShape):
            yield from _shape_texts(shape.shapes)
        elif shape.has_text_frame:
            for paragraph in shape.text_frame.paragraphs:
                text = broken_lines(paragraph.text)
                if text:
                    yield text
        elif shape.has_table:  # PowerPoint's "header row" flag names the columns
            rows = [
                [squash(cell.text) for cell in row.cells if not cell.is_spanned]
                for row in shape.table.rows
            ]
            yield from table_lines(rows, shape.table.first_row)
