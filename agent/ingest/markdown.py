"""Markdown as paragraphs: ``#`` headings are chapters, deeper ones sections; lists, pipe
tables and fenced code read apart; the markup itself (emphasis, links, rules) left out.

Left in, "**Lumora Glint**", "[returns](https://…)" and a "---" rule between answers were
noise in what search and the model read, and a "# comment" line inside a fenced block of
settings was taken for a chapter heading, moving every later answer to that chapter.
"""

from __future__ import annotations

import re

from agent.ingest.document import Paragraph, ParsedDocument, blocks, paragraphs_of, unquoted
from agent.ingest.tables import markdown_table, table_lines

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
# a fenced block: its opening fence (``` or ~~~, maybe with a language) to the same fence
_FENCE = re.compile(r"^[ \t]*(```+|~~~+)[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.M | re.S)
# a thematic break ("---", "* * *") or a setext heading's underline ("===")
_RULE = re.compile(r"^\s*(?:([-*_])(?:\s*\1){2,}|=+)\s*$")
_INLINE = [
    (re.compile(r"!\[([^\]]*)\]\([^)]*\)"), r"\1"),  # an image: its alt text
    (re.compile(r"\[([^\]]+)\]\([^)]*\)"), r"\1"),  # a link: its text
    (re.compile(r"`([^`]+)`"), r"\1"),  # inline code
    (re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1"), r"\2"),  # strong
    (re.compile(r"(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])"), r"\1"),  # emphasis
    (re.compile(r"(?<![\w_])_(?=[^\s_])(.+?)(?<=[^\s_])_(?![\w_])"), r"\1"),  # (not snake_case)
]


def plain_inline(text: str) -> str:
    """``text`` without Markdown's inline markup: emphasis, inline code, links and images
    as their words."""
    for pattern, words in _INLINE:
        text = pattern.sub(words, text)
    return text


def _code_paragraphs(code: str) -> list[str]:
    """A fenced block's lines, one paragraph per blank-line block, lines joined by "; "
    (a setting per line stays apart from the next)."""
    return [
        "; ".join(line.strip() for line in block.splitlines() if line.strip())
        for block in blocks(code)
    ]


class _Reader:
    """Paragraphs as they are read, under the chapter and section read so far."""

    def __init__(self, default_title: str) -> None:
        self.default_title = self.title = default_title
        self.chapter: str | None = None
        self.section: str | None = None
        self.paragraphs: list[Paragraph] = []
        self.body: list[str] = []

    def add(self, texts: list[str]) -> None:
        self.paragraphs.extend(
            Paragraph(plain_inline(t), chapter=self.chapter, section=self.section) for t in texts
        )

    def end_paragraph(self) -> None:
        if self.body:
            self.add(paragraphs_of(unquoted("\n".join(self.body))))
            self.body.clear()

    def heading(self, level: int, text: str) -> None:
        self.end_paragraph()
        heading = plain_inline(text.strip())
        if level > 1:
            self.section = heading
        else:
            if self.title == self.default_title and self.chapter is None and not self.paragraphs:
                self.title = heading
            self.chapter, self.section = heading, None
        # read too, under itself: "[3.0.0] - 2025-09-14" is the release date a question asks
        self.add([heading])

    def prose(self, text: str) -> None:
        for block in blocks(text):
            lines = block.strip().splitlines()
            i = 0
            while i < len(lines):
                m = _HEADING.match(lines[i].strip())
                rows = None if m else markdown_table(lines, i)
                if rows is not None:
                    self.end_paragraph()
                    self.add(table_lines(rows, header=True))
                    i += len(rows) + 1  # the header's rule is not a row
                    continue
                if m:
                    self.heading(len(m.group(1)), m.group(2))
                elif _RULE.match(lines[i]):
                    self.end_paragraph()
                else:
                    self.body.append(lines[i])
                i += 1
            self.end_paragraph()


# a footnote's definition, "[^3]: Volunteers can park free …", with its indented lines
_FOOTNOTE = re.compile(
    r"^\[\^([^\]\s]+)\]:[ \t]*(.*(?:\n(?:[ \t]+\S.*|[ \t]*(?=\n[ \t]+\S)))*)", re.M
)
_FOOTNOTE_MARK = re.compile(r"\[\^([^\]\s]+)\](?!:)")


def with_footnotes_inline(text: str) -> str:
    """``text`` with each footnote read where it is first referenced, in brackets ("…
    surgery. [^3]" -> "… surgery. (Note: Volunteers can park free …)"), its definition and
    later marks left out; a definition nothing references stays where it is. At the page's
    end a footnote is far from what it explains, in another chunk."""
    notes = {m.group(1): " ".join(m.group(2).split()) for m in _FOOTNOTE.finditer(text)}
    used: set[str] = set()

    def inline(m: re.Match) -> str:
        key = m.group(1)
        if key not in notes or key in used:
            return ""
        used.add(key)
        return f" (Note: {notes[key]})"

    text = _FOOTNOTE_MARK.sub(inline, text)
    return _FOOTNOTE.sub(lambda m: "" if m.group(1) in used else m.group(0), text)


def parse_markdown(text: str, default_title: str) -> ParsedDocument:
    """Markdown: ``#`` headings are chapters, deeper headings are sections; a pipe table's
    rows are paragraphs, each under its column names (:mod:`agent.ingest.tables`); a fenced
    block's lines are read as they are, no heading among them; footnotes are read where
    they are referenced (:func:`with_footnotes_inline`)."""
    reader = _Reader(default_title)
    start = 0
    text = with_footnotes_inline(text)
    for fence in _FENCE.finditer(text):
        reader.prose(text[start : fence.start()])
        reader.add(_code_paragraphs(fence.group(2)))
        start = fence.end()
    reader.prose(text[start:])
    paragraphs = [p for p in reader.paragraphs if p.text]
    return ParsedDocument(title=reader.title, file_type="md", paragraphs=paragraphs)
