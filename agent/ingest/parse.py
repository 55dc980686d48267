"""Turn uploaded bytes into paragraphs that know their page, chapter and section.

Supported here: plain text (with Project Gutenberg framing stripped and chapter headings
such as "CHAPTER I." detected), Markdown (``#`` headings as chapters and sections), PDF
(text per page, page numbers kept), Word DOCX and HTML (headings as chapters and sections),
PowerPoint PPTX (text per slide, the slide number as page) and caption files, WebVTT and SRT
(a transcript: one paragraph per speaker turn, :mod:`agent.ingest.captions`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from agent.ingest.captions import parse_captions
from agent.ingest.document import (
    DocumentTooLarge,
    Paragraph,
    ParsedDocument,
    UnreadableDocument,
    UnsupportedDocument,
    blocks,
    unwrap,
)
from agent.ingest.encoding import decode_text
from agent.ingest.html import parse_html
from agent.ingest.markdown import parse_markdown
from agent.ingest.office import parse_docx, parse_pptx
from agent.ingest.pdf import parse_pdf
from agent.ingest.text_tables import aligned_table_lines

__all__ = [
    "ParsedDocument",
    "Paragraph",
    "UnreadableDocument",
    "UnsupportedDocument",
    "parse_bytes",
]


SUPPORTED_TYPES = {
    ".txt": "txt",
    ".text": "txt",
    ".md": "md",
    ".markdown": "md",
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
    ".html": "html",
    ".htm": "html",
    ".vtt": "transcript",
    ".srt": "transcript",
}

MAX_DOCUMENT_CHARS = 20_000_000
"""Most characters of text one document may have (the default of ``max_document_chars``)."""

_GUTENBERG_START = re.compile(r"^\*\*\* ?START OF (THE|THIS) PROJECT GUTENBERG.*$", re.M | re.I)
_GUTENBERG_END = re.compile(r"^\*\*\* ?END OF (THE|THIS) PROJECT GUTENBERG.*$", re.M | re.I)
_CHAPTER = re.compile(
    r"^\s*(?:CHAPTER|Chapter|BOOK|Book|PART|Part)\s+(?:[IVXLCDM]+|\d+|[A-Z][a-z]+)\b[.:]?\]?\s*(.*)$"
)
# a book's parts outside its chapters, as a heading line of their own ("PREFACE.",
# "Introduction", "AUTHOR'S NOTE", "Appendix II"): their passages are labelled with it, so
# an editor's preface is not read as the story
_FRONT_MATTER = re.compile(
    r"^(?:(?:the\s+)?(?:author|translator|editor|publisher)[’']?s[’']?\s+)?"
    r"(?:preface|introduction|foreword|prologue|epilogue|afterword|postscript|appendix|note)"
    r"(?:\s+(?:[IVXLCDM]+|\d+))?[.:]?$",
    re.I,
)
_ILLUSTRATION = re.compile(r"^\[(?:Illustration|Copyright)[^\]]*\]*$", re.S)
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


def parse_bytes(
    data: bytes,
    filename: str,
    title: str | None = None,
    *,
    max_pdf_pages: int | None = None,
    max_unzipped_bytes: int | None = None,
    max_chars: int | None = None,
) -> ParsedDocument:
    """Parse a file's bytes according to its name's extension.

    The limits (ingestion passes the settings ``max_pdf_pages``, ``max_unzipped_bytes`` and
    ``max_document_chars``) default to the parsers' own (``pdf.MAX_PAGES``,
    ``office.MAX_UNCOMPRESSED_BYTES``, ``MAX_DOCUMENT_CHARS``); a file over one is refused
    with :class:`DocumentTooLarge`.
    """
    kind = file_type_for(filename)
    if not data.strip():
        raise UnreadableDocument(f"{filename} is empty")
    char_limit = MAX_DOCUMENT_CHARS if max_chars is None else max_chars
    # the decoded text kinds: never more characters than bytes, so only a big file is decoded
    if kind in ("txt", "md", "transcript") and len(data) > char_limit:
        _check_chars(len(decode_text(data, filename).text), char_limit, filename)
    stem = Path(filename).stem.replace("_", " ").replace("-", " ").strip() or filename
    if kind == "pdf":
        doc = parse_pdf(data, stem, max_pages=max_pdf_pages, max_chars=max_chars)
    elif kind == "docx":
        doc = parse_docx(data, stem, filename, max_unzipped_bytes=max_unzipped_bytes)
    elif kind == "pptx":
        doc = parse_pptx(data, stem, filename, max_unzipped_bytes=max_unzipped_bytes)
    else:
        doc = PARSERS[kind](data, stem, filename)
    if not doc.paragraphs:
        raise UnreadableDocument(f"{filename} has no extractable text")
    _check_chars(sum(len(p.text) for p in doc.paragraphs), char_limit, filename)
    if title:
        doc.title = title
    return doc


def _check_chars(count: int, limit: int, filename: str) -> None:
    if count > limit:
        raise DocumentTooLarge(
            f"{filename} has {count:,} characters of text, more than the limit of {limit:,}"
        )


def _strip_gutenberg(text: str) -> str:
    start, end = _GUTENBERG_START.search(text), _GUTENBERG_END.search(text)
    if start:
        text = text[start.end() :]
        end = _GUTENBERG_END.search(text)
    if end:
        text = text[: end.start()]
    return text


def _chapter_heading(block: str) -> str | None:
    """A chapter title if ``block`` is a one- or two-line chapter heading (not a ToC), or a
    line of its own naming a part outside the chapters (a preface, an appendix), set in
    capitals or title case."""
    lines = [ln.strip() for ln in block.strip().splitlines() if ln.strip()]
    if not lines or len(lines) > 2 or len(" ".join(lines)) > 120:
        return None
    if len(lines) == 1 and lines[0][0].isupper() and _FRONT_MATTER.match(lines[0]):
        return lines[0].rstrip(".:")
    if not _CHAPTER.match(lines[0]):
        return None
    return " ".join(ln.rstrip("]").strip() for ln in lines)


# words a title sets in lower case after its first word
_SMALL_WORDS = frozenset(
    ("a", "an", "and", "as", "at", "but", "by", "for", "in", "nor", "of", "on", "or", "the")
    + ("to", "with")
)
_ROMAN = re.compile(r"^[IVXLCDM]+\.?$")


def _page_title(block: str) -> str:
    """A title page's lines as one title: each line's closing full stop dropped (a title
    page puts one after a line), and capitals set in title case when most words are in
    capitals ("PRIDE." / "and" / "PREJUDICE" -> "Pride and Prejudice"; Roman numerals
    stay)."""
    lines = [ln.strip() for ln in block.splitlines() if ln.strip()]
    words = " ".join(re.sub(r"(\w{3,})\.$", r"\1", ln) for ln in lines).split()
    capitals = [w for w in words if sum(c.isalpha() for c in w) > 1 and w.upper() == w]
    if len(capitals) * 2 <= len(words):
        return " ".join(words)
    return " ".join(
        w
        if _ROMAN.match(w)
        else w.lower()
        if n and w.lower() in _SMALL_WORDS
        else "-".join(part.capitalize() for part in w.split("-"))
        for n, w in enumerate(words)
    )


def parse_text(text: str, default_title: str) -> ParsedDocument:
    """Plain text: paragraphs on blank lines; chapter headings become chapter titles."""
    text = _strip_gutenberg(text)
    paragraphs: list[Paragraph] = []
    chapter: str | None = None
    title, author, above = default_title, None, ""
    for i, block in enumerate(blocks(text)):
        heading = _chapter_heading(block)
        if heading:
            chapter = heading
            continue
        if rows := aligned_table_lines(block):  # columns lined up with spaces: a row each
            paragraphs.extend(Paragraph(row, chapter=chapter) for row in rows)
            above = block
            continue
        body = unwrap(block)
        if not body or _ILLUSTRATION.match(body):
            continue
        by = _BY_LINE.match(body)
        if by and i < 12 and author is None and paragraphs:
            author = by.group(1).strip()
            title = _page_title(above) if len(paragraphs[-1].text) < 120 else title
            continue
        paragraphs.append(Paragraph(body, chapter=chapter))
        above = block
    return ParsedDocument(title=title, file_type="txt", paragraphs=paragraphs, author=author)


def _text_parser(parse: Callable[[str, str], ParsedDocument]) -> Parser:
    def run(data: bytes, title: str, filename: str) -> ParsedDocument:
        decoded = decode_text(data, filename)
        doc = parse(decoded.text, title)
        doc.encoding = decoded.encoding
        return doc

    return run


Parser = Callable[[bytes, str, str], ParsedDocument]
"""``parser(data, default_title, filename)``: one per file type."""

PARSERS: dict[str, Parser] = {
    "txt": _text_parser(parse_text),
    "md": _text_parser(parse_markdown),
    "pdf": lambda data, title, _filename: parse_pdf(data, title),
    "docx": parse_docx,
    "pptx": parse_pptx,
    "html": parse_html,
    "transcript": _text_parser(parse_captions),
}
