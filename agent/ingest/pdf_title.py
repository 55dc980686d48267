"""A PDF's title: its metadata title when that is one, else the heading its first page opens
with in the largest type.

Most PDFs a reader uploads (papers, reports saved from an editor) carry no title in their
document information, or a placeholder ("untitled", "Microsoft Word - draft3.doc"). Named
from the file, a paper becomes "layout parser paper fast": that label is what the reader
sees beside each citation, and what the model reads over each passage. The title on the
page is set in larger type than the text below it, so the first lines of the first page
in the page's largest size, clearly above its body size, are taken for the title; a
numbered section heading ("1 Introduction"), a contents or abstract heading, or a single
word is not taken.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pypdf import PdfReader

# Control characters (NUL above all) come from broken font encodings; storage rejects them.
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

Line = tuple[str, float]
"""One text line of a page and its font size in points (the size most of its letters have)."""

TOP_LINES = 10
"""Only the first lines of the page are looked at: a title opens the page."""
LARGER_BY = 1.2
"""A title's type is at least this much larger than the body text's."""
MOST_LINES = 3
MOST_WORDS = 30

_PLACEHOLDER = re.compile(
    r"^(untitled|no title|title|document\d*|microsoft word - .*|.*\.(pdf|docx?|odt|rtf|tex|dvi|ps|txt))$",
    re.I,
)
_NOT_A_TITLE = re.compile(
    r"^((\d+(\.\d+)*|[ivx]+\.)\s|(table of )?contents\b|abstract\b|introduction\b|preface\b|index\b)",
    re.I,
)


def usable_metadata_title(value: str | None) -> str | None:
    """``value`` unless it is empty or a placeholder a tool wrote in (``untitled``, a file
    name, ``Microsoft Word - …``)."""
    if not value or _PLACEHOLDER.match(value.strip()):
        return None
    return value


def clean_field(value: object) -> str | None:
    """A string with control characters dropped and whitespace collapsed, ``None`` for
    empty strings and non-strings."""
    if not isinstance(value, str):
        return None
    return " ".join(CONTROL.sub("", value).split()) or None


def metadata_title_author(reader: PdfReader) -> tuple[str | None, str | None]:
    """Title and author from the document information (the title from the XMP metadata
    where the information has none or a placeholder), ``None`` where absent or unreadable."""
    title = author = None
    try:
        meta = reader.metadata
        if meta is not None:
            title, author = clean_field(meta.title), clean_field(meta.author)
    except Exception:  # broken metadata must not cost the text
        pass
    return usable_metadata_title(title) or _xmp_title(reader), author


def _xmp_title(reader: PdfReader) -> str | None:
    try:
        xmp = reader.xmp_metadata
        titles = (xmp.dc_title or {}) if xmp is not None else {}
    except Exception:  # malformed XML
        return None
    first = titles.get("x-default") or next(iter(titles.values()), None)
    return usable_metadata_title(clean_field(first))


def heading_title(lines: Sequence[Line]) -> str | None:
    """The title the first page opens with (module docs), or ``None``."""
    sizes: Counter[float] = Counter()
    for text, size in lines:
        sizes[size] += len(text.strip())
    if not sizes:
        return None
    body = sizes.most_common(1)[0][0]
    top = [(text.strip(), size) for text, size in lines[:TOP_LINES] if text.strip()]
    if not top:
        return None
    largest = max(size for _, size in top)
    if largest < body * LARGER_BY:
        return None
    start = next(i for i, (_, size) in enumerate(top) if abs(size - largest) < 0.5)
    parts: list[str] = []
    for text, size in top[start : start + MOST_LINES]:
        if abs(size - largest) >= 0.5:
            break
        parts.append(text)
    title = " ".join(" ".join(parts).split())
    words = title.split()
    letters = sum(ch.isalpha() for ch in title)
    if not 2 <= len(words) <= MOST_WORDS or letters < 4 or _NOT_A_TITLE.match(title):
        return None
    return title


def _line_size(chars: list[tuple[str, float]]) -> float:
    sizes = Counter(size for ch, size in chars if not ch.isspace())
    return sizes.most_common(1)[0][0] if sizes else 0.0


def first_page_lines(document) -> list[Line]:
    """The text lines of a PDFium document's first page with their font sizes (the caller
    holds the PDFium lock)."""
    import pypdfium2.raw as pdfium_c

    if len(document) == 0:
        return []
    page = document[0]
    try:
        textpage = page.get_textpage()
        try:
            lines: list[Line] = []
            chars: list[tuple[str, float]] = []
            for index in range(pdfium_c.FPDFText_CountChars(textpage.raw)):
                code = pdfium_c.FPDFText_GetUnicode(textpage.raw, index)
                ch = chr(code) if 0 < code < 0x110000 else " "
                if ch in "\r\n":
                    if chars:
                        lines.append(("".join(c for c, _ in chars), _line_size(chars)))
                    chars = []
                    continue
                size = round(float(pdfium_c.FPDFText_GetFontSize(textpage.raw, index)), 1)
                chars.append((ch, size))
            if chars:
                lines.append(("".join(c for c, _ in chars), _line_size(chars)))
            return lines
        finally:
            textpage.close()
    finally:
        page.close()
