"""One PDF page's extracted text as paragraphs: lines unwrapped, paragraphs told apart
by blank lines or, where the extractor gives none, by sentence ends and section headings.
"""

from __future__ import annotations

import re

from agent.ingest.document import blocks, unwrap
from agent.ingest.sentences import split_sentences

_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_SENTENCE_END = re.compile(r"[.?!:][\"'’”)\]]*$")
_BULLET = re.compile(r"(?:[•◦▪▫‣●○■□∙·*–—-]|\d{1,3}[.)])\s")
# "3. Regional Programmes", "3.5 Pellinore Reach", "12 Appendix": a short numbered title
_NUMBERED_HEADING = re.compile(r"^\d{1,2}(?:\.\d{1,2})*\.?\s+[^\W\d_][^.!?;:]{0,60}$")
_SMALL_WORDS = frozenset(
    ["a", "an", "and", "at", "by", "for", "in", "of", "on", "or", "the", "to", "with"]
)


def split_paragraphs(text: str) -> list[str]:
    """Paragraphs of one page's extracted text, each unwrapped onto one line.

    Blank lines separate paragraphs when the page has any. PDFium and pypdf usually emit
    none, so otherwise a paragraph ends after a line that ends a sentence (``.``, ``?``,
    ``!`` or ``:``, maybe followed by a closing quote or bracket) when the next line starts
    with an upper-case letter or a bullet (``•``, ``-``, ``1.``, ``2)`` ...). The lines of a
    paragraph are joined and line-end hyphens removed (:func:`unwrap`).
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    parts = blocks(text) if _BLANK_LINE.search(text) else _sentence_blocks(text)
    return [body for body in map(unwrap, parts) if body]


def is_numbered_heading(line: str) -> bool:
    """Whether ``line`` is a short numbered title in title case ("2. The Year at a
    Glance", "3.5 Pellinore Reach"), not a numbered sentence or list item."""
    if not _NUMBERED_HEADING.match(line):
        return False
    words = [w for w in line.split()[1:] if w[:1].isalpha() and w.lower() not in _SMALL_WORDS]
    return bool(words) and all(w[0].isupper() for w in words)


def _sentence_blocks(text: str) -> list[str]:
    """Lines grouped into paragraphs at sentence ends followed by a new-paragraph start; a
    numbered heading is a paragraph of its own (it ends no sentence, so it was glued to
    what came before and after it: "… 18 April 2024 2. The Year at a Glance Across …")."""
    groups: list[list[str]] = []
    after_heading = False
    for line in (ln.strip() for ln in text.splitlines()):
        if not line:
            continue
        heading = is_numbered_heading(line)
        if (
            groups
            and not heading
            and not after_heading
            and not _ends_paragraph(groups[-1][-1], line)
        ):
            groups[-1].append(line)
        else:
            groups.append([line])
        after_heading = heading
    return ["\n".join(group) for group in groups]


def _ends_paragraph(line: str, next_line: str) -> bool:
    return bool(_SENTENCE_END.search(line)) and (
        next_line[0].isupper() or bool(_BULLET.match(next_line))
    )


def runs_on(last: str, first: str) -> bool:
    """Whether a page's ``last`` paragraph goes on in the next page's ``first``: it ends
    no sentence, and neither is a heading nor ``first`` a list item."""
    return not (
        _SENTENCE_END.search(last)
        or is_numbered_heading(last)
        or is_numbered_heading(first)
        or _BULLET.match(first)
    )


def joined_over_page(last: str, first: str) -> tuple[str, str]:
    """``last`` with the sentence the page break cut finished from ``first`` (see
    :func:`runs_on`; a word the break hyphenated, "contribu-" / "tion", made whole), and
    what is left of ``first``: the rest of it stays on its own page."""
    sentences = split_sentences(first)
    head = sentences[0] if sentences and first.startswith(sentences[0]) else first
    rest = first[len(head) :].strip()
    if re.search(r"[^\W\d_]-$", last) and head[:1].islower():
        return last[:-1] + head, rest
    return f"{last} {head}", rest
