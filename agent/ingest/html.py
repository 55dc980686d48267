"""HTML pages: the main text in reading order, ``<h1>`` as chapters and ``<h2>``+ as sections.

Navigation, scripts, forms, asides and page headers/footers are dropped. Paragraphs, list items,
block quotes, preformatted blocks and other block elements each become a :class:`Paragraph`;
a table's rows become one paragraph each, under the column names its ``th`` row gives
(:mod:`agent.ingest.tables`).

Parsed with lxml (libxml2): linear time, unlike Python's ``html.parser``, which is quadratic on
some inputs in older patch releases (5 s for 100 KB of ``<a`` on 3.11.7). The tree is walked
with ``iterwalk``, never recursively, so nesting depth cannot reach Python's recursion limit;
libxml2 stops building the tree 2,048 levels down, and such a page is refused rather than
silently cut short.
"""

from __future__ import annotations

import codecs
import re

from agent.ingest.document import Paragraph, ParsedDocument, UnreadableDocument, squash
from agent.ingest.encoding import DecodedText, decode_text
from agent.ingest.tables import table_lines

DROPPED_TAGS = (
    "script",
    "style",
    "nav",
    "footer",
    "form",
    "noscript",
    "template",
    "svg",
    "iframe",
)
"""Elements removed with all they contain; so are ``<header>`` outside ``<article>``/``<main>``
and ``<aside>`` outside them or made mostly of links (:func:`_is_dropped`)."""

# fmt: off
_BLOCK_TAGS = frozenset((
    "address", "article", "blockquote", "body", "caption", "center", "dd", "details", "dialog",
    "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "header", "hgroup", "hr", "html",
    "legend", "li", "main", "menu", "ol", "p", "section", "summary", "table", "tbody", "tfoot",
    "thead", "ul",
))
# fmt: on
_HEADINGS = {f"h{level}": level for level in range(1, 7)}
_CELLS = frozenset(("td", "th"))
_STRUCTURE = _BLOCK_TAGS | _HEADINGS.keys() | {"tr", "pre"}
_META_CHARSET = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([\w.:-]+)""", re.I)
_XML_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*?encoding\s*=\s*["']([\w.:-]+)""", re.I)
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none", re.I)


def decode_html(data: bytes, filename: str) -> DecodedText:
    """Text of an HTML file: BOM, else its declared charset (meta or XML declaration), else
    UTF-8, else the detected encoding (:func:`agent.ingest.encoding.decode_text`)."""
    return decode_text(data, filename, declared=_declared_charset(data[:4096]))


def parse_html(data: bytes, default_title: str, filename: str) -> ParsedDocument:
    """HTML: main text as located paragraphs; title from ``<title>`` or the first ``<h1>``."""
    decoded = decode_html(data, filename)
    root = _parse_tree(decoded.text, filename)
    title = squash(root.findtext("head/title") or "")
    author = next(
        (
            squash(meta.get("content") or "")
            for meta in root.iter("meta")
            if (meta.get("name") or "").strip().lower() == "author"
        ),
        "",
    )
    walker = _TextWalker()
    walker.walk(_main_element(root))
    return ParsedDocument(
        title=title or walker.first_h1 or default_title,
        file_type="html",
        paragraphs=walker.paragraphs,
        author=author or None,
        encoding=decoded.encoding,
    )


def _declared_charset(head: bytes) -> str | None:
    """The charset a document declares in its first bytes, if Python knows it."""
    match = _XML_ENCODING.match(head) or _META_CHARSET.search(head)
    if not match:
        return None
    try:
        name = codecs.lookup(match.group(1).decode("ascii")).name
    except LookupError:
        return None
    # as browsers do (WHATWG encoding spec): Latin-1/ASCII labels mean windows-1252, and a
    # UTF-16 label read through an ASCII-compatible prefix can only be wrong
    if name in ("iso8859-1", "ascii"):
        return "cp1252"
    return "utf-8" if name.startswith("utf-16") else name


def _parse_tree(page: str, filename: str):
    """The lxml tree with comments, processing instructions and dropped elements removed."""
    import lxml.html
    from lxml import etree

    parser = lxml.html.HTMLParser(
        encoding="utf-8", huge_tree=True, remove_comments=True, remove_pis=True
    )
    try:
        root = lxml.html.document_fromstring(page.encode("utf-8"), parser=parser)
    except (etree.LxmlError, ValueError) as exc:
        raise UnreadableDocument(f"{filename} could not be read as HTML: {exc}") from exc
    if any(
        e.type_name == "ERR_RESOURCE_LIMIT" or "Excessive depth" in e.message
        for e in parser.error_log
    ):
        raise UnreadableDocument(
            f"{filename} could not be read as HTML: its elements are nested too deeply"
        )
    etree.strip_elements(root, *DROPPED_TAGS, with_tail=False)
    for el in [el for el in root.iter() if _is_dropped(el)]:
        el.drop_tree()  # keeps the text that follows the element
    return root


def _is_dropped(el) -> bool:
    """Hidden elements, page headers (an ``<article>``'s own header is kept) and asides
    but those of the main text with more words than links: a "Still stuck? Call us on …"
    box inside ``<main>`` answers questions, a sidebar or a box of related links does not."""
    if el.getparent() is None:
        return False
    if el.get("hidden") is not None or _HIDDEN_STYLE.search(el.get("style") or ""):
        return True
    if el.tag not in ("header", "aside"):
        return False
    if next(el.iterancestors("article", "main"), None) is None:
        return True
    if el.tag == "header":
        return False
    text = squash(el.text_content())
    linked = sum(len(squash(a.text_content())) for a in el.iter("a"))
    return not text or 2 * linked >= len(text)


def _main_element(root):
    """``<main>`` (or ``role="main"``) when the page has one with text, else ``<body>``."""
    for main in (root.find(".//main"), next(iter(root.xpath('//*[@role="main"]')), None)):
        if main is not None and squash(main.text_content()):
            return main
    body = root.find("body")
    return body if body is not None else root


class _TextWalker:
    """Collects paragraphs from start/end events: every block boundary ends a paragraph."""

    def __init__(self) -> None:
        self.paragraphs: list[Paragraph] = []
        self.first_h1: str | None = None
        self._parts: list[str] = []
        self._cells: list[str] = []
        self._rows: list[list[str]] = []  # the table's rows read so far
        self._header_row = False  # the table's first row is all th cells
        self._th_only = True  # the row being read has th cells only
        self._chapter: str | None = None
        self._section: str | None = None
        self._heading = 0  # level of the heading being read, 0 outside headings
        self._cell_depth = 0  # > 0 inside a table cell, where blocks only add spaces

    def walk(self, element) -> None:
        """Walk ``element`` and its descendants in document order."""
        from lxml import etree

        for event, el in etree.iterwalk(element, events=("start", "end")):
            if not isinstance(el.tag, str):
                continue
            if event == "start":
                self._start(el.tag.lower())
                self._parts.append(el.text or "")
            else:
                self._end(el.tag.lower())
                if el is not element:
                    self._parts.append(el.tail or "")
        self._flush()

    def _start(self, tag: str) -> None:
        if tag == "br":
            self._parts.append("\n")
        elif tag in _CELLS:
            self._cell_depth += 1
            if self._cell_depth == 1 and tag != "th":
                self._th_only = False
            self._parts.append(" ")
        elif self._cell_depth or self._heading:
            if tag in _STRUCTURE:
                self._parts.append(" ")
        elif tag in _HEADINGS:
            self._flush()
            self._heading = _HEADINGS[tag]
        elif tag in _STRUCTURE:
            self._flush()

    def _end(self, tag: str) -> None:
        if tag in _CELLS:
            self._cell_depth -= 1
            if self._cell_depth == 0:
                self._cells.append(self._take())
            else:
                self._parts.append(" ")
        elif self._cell_depth:
            if tag in _STRUCTURE:
                self._parts.append(" ")
        elif tag in _HEADINGS and self._heading:
            self._end_heading()
        elif self._heading:
            if tag in _STRUCTURE:
                self._parts.append(" ")
        elif tag == "tr":
            self._end_row()
        elif tag == "table":
            self._end_table()
        elif tag == "pre":
            lines = "".join(self._parts).splitlines()
            self._parts = []
            self._add("\n".join(line.rstrip() for line in lines if line.strip()))
        elif tag in _STRUCTURE:
            self._flush()

    def _end_row(self) -> None:
        self._flush()
        if any(self._cells):
            if not self._rows:
                self._header_row = self._th_only
            self._rows.append(self._cells)
        self._cells, self._th_only = [], True

    def _end_table(self) -> None:
        """The table's rows as paragraphs, under the column names of a first row of ``th``."""
        self._flush()
        rows, self._rows = self._rows, []
        for line in table_lines(rows, True if self._header_row else None):
            self._add(line)

    def _end_heading(self) -> None:
        text, level = self._take(), self._heading
        self._heading = 0
        if not text:
            return
        if level == 1:
            self._chapter, self._section = text, None
            self.first_h1 = self.first_h1 or text
        else:
            self._section = text
        self._add(text)  # read too: "1.3.1 - 2024-06-02" or "Your first day" answers questions

    def _take(self) -> str:
        text = squash("".join(self._parts))
        self._parts = []
        return text

    def _flush(self) -> None:
        self._add(self._take())

    def _add(self, text: str) -> None:
        if text:
            self.paragraphs.append(Paragraph(text, chapter=self._chapter, section=self._section))
