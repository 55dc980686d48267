"""The parsed form every source is reduced to, its errors, and shared text helpers."""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass
class Upload:
    """The uploaded file (its base name and bytes) and the form's text fields."""

    filename: str
    data: bytes
    fields: dict[str, str] = field(default_factory=dict)


class UnsupportedDocument(ValueError):
    """The file type is not one Quire can read."""


class UnreadableDocument(ValueError):
    """The file is empty, corrupt, encrypted or otherwise has no extractable text."""


class DocumentTooLarge(UnreadableDocument):
    """The file is over one of the ingestion limits (pages, unpacked size, characters).

    A kind of :class:`UnreadableDocument`, with its own error code (``too_large``).
    """


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
    encoding: str | None = None
    """The text encoding it was read with (``cp1252``...); None for PDF, DOCX and PPTX."""

    @property
    def text(self) -> str:
        """The whole text, paragraphs separated by blank lines."""
        return "\n\n".join(p.text for p in self.paragraphs)


def squash(text: str) -> str:
    """Collapse runs of whitespace (tabs, line breaks, vertical tabs) to single spaces."""
    return " ".join(text.split())


def broken_lines(text: str) -> str:
    """A paragraph's manual line breaks (Word's Shift+Enter, PowerPoint's vertical tab) as
    sentence ends: a line without an end mark gets a full stop, then whitespace collapses.
    Joined bare, "Version: 4.2 (supersedes version 4.1, effective 3 March 2023)" and
    "Effective date: 1 September 2024" read as one sentence, and the model gave the first
    date as the policy's."""
    lines = [squash(line) for line in re.split(r"[\n\v]", text)]
    lines = [line for line in lines if line]
    return " ".join(
        line if i == len(lines) - 1 or line.endswith(_LINE_ENDS) else f"{line}."
        for i, line in enumerate(lines)
    )


_LINE_ENDS = (".", "!", "?", ":", ";", ",", "…", "—", "-", "–", "。", "！", "？")
_QUOTES = "\"'”’»"


def ended(text: str) -> str:
    """``text`` (a paragraph's last sentence) with a full stop when it has no end mark of
    its own: a list item, a heading or a byline then ends where its paragraph did, so a
    chunk that runs it into the next paragraph still splits there ("… parsley, chopped"
    and "Heat the oven to 190°C …" read as one sentence, far from a question about the
    oven)."""
    stripped = text.rstrip()
    # a closing bracket ends it as it is: "… arrival. [10 marks]", "(Serves four)"
    done = stripped.endswith((")", "]")) or stripped.rstrip(_QUOTES).endswith(_LINE_ENDS)
    return stripped if done else f"{stripped}."


def unwrap(block: str) -> str:
    """Join hard-wrapped lines of one paragraph (de-hyphenating line-end breaks), without
    the quote marks of a quoted block (:func:`unquoted`)."""
    block = re.sub(r"(\w)-\n(\w)", r"\1\2", unquoted(block))
    return " ".join(line.strip() for line in block.splitlines() if line.strip())


_QUOTE_MARKS = re.compile(r"^[ \t]*>(?:[ \t]*>)*(?=[ \t]|$)[ \t]?", re.M)


def unquoted(block: str) -> str:
    """``block`` without the "> " marks opening its lines when at least half of its lines
    have them: an email's quoted reply or a Markdown block quote. Left in, "£1,104, > but
    let's call it a round £1,100" read as one figure's sentence."""
    lines = [line for line in block.splitlines() if line.strip()]
    marked = sum(1 for line in lines if _QUOTE_MARKS.match(line))
    return _QUOTE_MARKS.sub("", block) if lines and 2 * marked >= len(lines) else block


# a line opening a list item: "- ", "* ", "+ ", "• ", "1. ", "2) "
_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+(?=.*\w)")


def paragraphs_of(block: str) -> list[str]:
    """A Markdown block's paragraphs: the block unwrapped (:func:`unwrap`), or, when it holds a
    list, the text before the list and each item (with its wrapped lines) apart, an item
    closed with a full stop when it has no end mark. Joined, "- 3 carrots - 2 teaspoons
    of smoked paprika - 1 bay leaf" was one sentence, and the model read "1 teaspoon"
    out of it."""
    lines = block.splitlines()
    if not any(_ITEM.match(line) for line in lines):
        return [unwrap(block)]
    pieces: list[list[str]] = [[]]
    for line in lines:
        if _ITEM.match(line) and pieces[-1]:
            pieces.append([])
        pieces[-1].append(line)
    out = []
    for piece in pieces:
        text = unwrap("\n".join(piece))
        if text and _ITEM.match(piece[0]) and not text.endswith((".", "!", "?", ":", ";")):
            text += "."
        if text:
            out.append(text)
    return out


def blocks(text: str) -> list[str]:
    """Paragraph blocks separated by blank lines."""
    return [b for b in re.split(r"\n[ \t]*\n+", text.replace("\r\n", "\n")) if b.strip()]


# what tools and templates write as a file's author when nobody named one
_PLACEHOLDER_AUTHORS = frozenset(
    {
        "admin", "administrator", "anonymous", "author", "microsoft office user", "n/a",
        "none", "owner", "python-docx", "python-pptx", "unknown", "user", "windows user",
    }
)  # fmt: skip


def usable_author(author: str | None) -> str | None:
    """``author`` trimmed of stray punctuation ("Jane Austen," -> "Jane Austen"), or ``None``
    when it is empty or a placeholder ("anonymous", "Microsoft Office User", "python-docx")."""
    if not author:
        return None
    cleaned = " ".join(author.split()).strip(" ,;:-")
    return None if cleaned.casefold() in _PLACEHOLDER_AUTHORS or not cleaned else cleaned
