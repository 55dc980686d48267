"""Turn uploaded bytes into paragraphs that know their page, chapter and section.

Supported here: plain text (with Project Gutenberg framing stripped and chapter headings
such as "CHAPTER I." detected), Markdown (``#`` headings as chapters and sections) and PDF
(text per page, page numbers kept).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from pathlib import Path


class UnsupportedDocument(ValueError):
    """The file type is not one Quire can read."""


class UnreadableDocument(ValueError):
    """The file is empty, corrupt, encrypted or otherwise has no extractable text."""


@dataclass
class Paragraph:
    """One paragraph of running text and where it sits in the document."""

    text: str
    page: int | None = None
    chapter: str | None = None
    section: str | None = None


@dataclass
class ParsedDocument:
    """A document reduced to located paragraphs."""

    title: str
    file_type: str
    paragraphs: list[Paragraph]
    author: str | None = None
    page_count: int | None = None
    metadata: dict = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The whole text, paragraphs separated by blank lines."""
        return "\n\n".join(p.text for p in self.paragraphs)


SUPPORTED_TYPES = {".txt": "txt", ".text": "txt", ".md": "md", ".markdown": "md", ".pdf": "pdf"}

_GUTENBERG_START = re.compile(r"^\*\*\* ?START OF (THE|THIS) PROJECT GUTENBERG.*$", re.M | re.I)
_GUTENBERG_END = re.compile(r"^\*\*\* ?END OF (THE|THIS) PROJECT GUTENBERG.*$", re.M | re.I)
_CHAPTER = re.compile(
    r"^\s*(?:CHAPTER|Chapter|BOOK|Book|PART|Part)\s+(?:[IVXLCDM]+|\d+|[A-Z][a-z]+)\b[.:]?\]?\s*(.*)$"
)
_ILLUSTRATION = re.compile(r"^\[(?:Illustration|Copyright)[^\]]*\]*$", re.S)
_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_BY_LINE = re.compile(r"^by\s+(.{3,80})$", re.I)


def file_type_for(filename: str) -> str:
    """The Quire file type for a file name, or :class:`UnsupportedDocument`."""
    suffix = Path(filename).suffix.lower()
    if suffix not in SUPPORTED_TYPES:
        allowed = ", ".join(sorted(SUPPORTED_TYPES))
        raise UnsupportedDocument(
            f"unsupported file type {suffix or '(none)'!r}; supported: {allowed}"
        )
    return SUPPORTED_TYPES[suffix]


def parse_bytes(data: bytes, filename: str, title: str | None = None) -> ParsedDocument:
    """Parse a file's bytes according to its name's extension."""
    kind = file_type_for(filename)
    if not data.strip():
        raise UnreadableDocument(f"{filename} is empty")
    stem = Path(filename).stem.replace("_", " ").replace("-", " ").strip() or filename
    if kind == "pdf":
        doc = parse_pdf(data, stem)
    else:
        text = _decode(data, filename)
        doc = parse_markdown(text, stem) if kind == "md" else parse_text(text, stem)
    if not doc.paragraphs:
        raise UnreadableDocument(f"{filename} has no extractable text")
    if title:
        doc.title = title
    return doc


def _decode(data: bytes, filename: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UnreadableDocument(
            f"{filename} is not valid UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from exc


def _unwrap(block: str) -> str:
    """Join hard-wrapped lines of one paragraph (de-hyphenating line-end breaks)."""
    block = re.sub(r"(\w)-\n(\w)", r"\1\2", block)
    return " ".join(line.strip() for line in block.splitlines() if line.strip())


def _blocks(text: str) -> list[str]:
    return [b for b in re.split(r"\n[ \t]*\n+", text.replace("\r\n", "\n")) if b.strip()]


def _strip_gutenberg(text: str) -> str:
    start, end = _GUTENBERG_START.search(text), _GUTENBERG_END.search(text)
    if start:
        text = text[start.end() :]
        end = _GUTENBERG_END.search(text)
    if end:
        text = text[: end.start()]
    return text


def _chapter_heading(block: str) -> str | None:
    """A chapter title if ``block`` is a one- or two-line chapter heading (not a ToC)."""
    lines = [ln.strip() for ln in block.strip().splitlines() if ln.strip()]
    if not lines or len(lines) > 2 or len(" ".join(lines)) > 120:
        return None
    if not _CHAPTER.match(lines[0]):
        return None
    return " ".join(ln.rstrip("]").strip() for ln in lines)


def parse_text(text: str, default_title: str) -> ParsedDocument:
    """Plain text: paragraphs on blank lines; chapter headings become chapter titles."""
    text = _strip_gutenberg(text)
    paragraphs: list[Paragraph] = []
    chapter: str | None = None
    title, author = default_title, None
    for i, block in enumerate(_blocks(text)):
        heading = _chapter_heading(block)
        if heading:
            chapter = heading
            continue
        body = _unwrap(block)
        if not body or _ILLUSTRATION.match(body):
            continue
        by = _BY_LINE.match(body)
        if by and i < 12 and author is None and paragraphs:
            author = by.group(1).strip()
            title = paragraphs[-1].text if len(paragraphs[-1].text) < 120 else title
            continue
        paragraphs.append(Paragraph(body, chapter=chapter))
    return ParsedDocument(title=title, file_type="txt", paragraphs=paragraphs, author=author)


def parse_markdown(text: str, default_title: str) -> ParsedDocument:
    """Markdown: ``#`` headings are chapters, deeper headings are sections."""
    paragraphs: list[Paragraph] = []
    chapter = section = None
    title = default_title
    for block in _blocks(text):
        lines = block.strip().splitlines()
        body_lines: list[str] = []
        for line in lines:
            m = _MD_HEADING.match(line.strip())
            if m:
                if body_lines:
                    paragraphs.append(
                        Paragraph(_unwrap("\n".join(body_lines)), chapter=chapter, section=section)
                    )
                    body_lines = []
                level, heading = len(m.group(1)), m.group(2).strip()
                if level == 1:
                    if title == default_title and chapter is None and not paragraphs:
                        title = heading
                    chapter, section = heading, None
                else:
                    section = heading
            else:
                body_lines.append(line)
        if body_lines:
            paragraphs.append(
                Paragraph(_unwrap("\n".join(body_lines)), chapter=chapter, section=section)
            )
    return ParsedDocument(title=title, file_type="md", paragraphs=[p for p in paragraphs if p.text])


def parse_pdf(data: bytes, default_title: str) -> ParsedDocument:
    """PDF: text per page with its 1-based page number; encrypted files need an empty password."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise UnreadableDocument("the PDF is encrypted with a password")
        pages = list(reader.pages)
    except UnreadableDocument:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise UnreadableDocument(f"the PDF could not be read: {exc}") from exc
    paragraphs: list[Paragraph] = []
    for number, page in enumerate(pages, start=1):
        try:
            text = page.extract_text() or ""
        except Exception as exc:  # pypdf raises many types on damaged content streams
            raise UnreadableDocument(f"page {number} of the PDF could not be read: {exc}") from exc
        for block in _blocks(text):
            body = _unwrap(block)
            if body:
                paragraphs.append(Paragraph(body, page=number))
    meta = reader.metadata or {}
    title = (meta.get("/Title") or "").strip() or default_title
    author = (meta.get("/Author") or "").strip() or None
    return ParsedDocument(
        title=title, file_type="pdf", paragraphs=paragraphs, author=author, page_count=len(pages)
    )
