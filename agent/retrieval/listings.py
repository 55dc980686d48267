"""Listings: chunks that are a book's table of contents or list of illustrations rather than
its text. They share every chapter title and character name with the questions, so hybrid
search ranks them high, yet they hold no answer and take a passage's place in a short
context ("Contents CHAPTER I. Down the Rabbit-Hole CHAPTER II. The Pool of Tears ...").

A chunk is a listing when it names three or more headings ("CHAPTER IV.", "Chapter 3",
"Part II", "Section 2") with only a title's few words between them; when three or more of
its entries end in dot leaders ("Introduction ........ 3"); or when it is a run of short
entries each followed by its page ("“The apothecary came” 43 “Covering a screen” 45"): page
numbers rise unevenly, where a table's figures or a text's dates do not rise and numbered
steps count up by one. Prose that mentions chapters ("Chapter 3 covers the method and
chapter 4 its results") keeps its sentences between them and is not one.
"""

from __future__ import annotations

import re
from statistics import median

_HEADING_WORDS = ("chapter", "part", "book", "section", "appendix")
_HEADING = re.compile(
    rf"\b(?:{'|'.join(_HEADING_WORDS)})\s+(?:[ivxlc]+\b\.?|\d+\b\.?|[a-z]+(?:-[a-z]+)?\b\.)",
    re.IGNORECASE,
)
_LEADERS = re.compile(r"(?:\.\s?){4,}\s*(?:\d+|[ivxlc]+)\b", re.IGNORECASE)
_WORD = re.compile(r"\w+")
# a bare number: not a footnote mark ("[12]"), amount, decimal, percentage, time or range
_PAGE = re.compile(r"(?<![\w.,$£€%/:\[(–-])\d{1,3}(?![\w.,%/:\])–-]|\.\d)")

MIN_HEADINGS = 3
TITLE_WORDS = 9
"""Median words between consecutive headings at most this: titles, not paragraphs."""
MIN_PAGES = 6
PAGE_SHARE = 0.08
"""A page run: at least ``MIN_PAGES`` bare numbers, this share of the words or more, ..."""
RISING_SHARE = 0.8
"""... and each larger than the one before it this often."""

_ABOUT_CONTENTS = re.compile(
    r"\b(?:contents|chapters|sections|parts|illustrations|outline|structure)\b", re.IGNORECASE
)


def is_listing(text: str) -> bool:
    """Whether ``text`` is a table of contents or a similar listing (module docs)."""
    # cheap tests first: every search checks each of its candidates (~8 us for prose)
    if (". ." in text or "...." in text) and len(_LEADERS.findall(text)) >= MIN_HEADINGS:
        return True
    if sum(map(text.count, "0123456789")) >= MIN_PAGES and _is_page_run(text):
        return True
    low = text.lower()
    if sum(map(low.count, _HEADING_WORDS)) < MIN_HEADINGS:
        return False
    starts = [m.start() for m in _HEADING.finditer(text)]
    if len(starts) < MIN_HEADINGS:
        return False
    gaps = [len(_WORD.findall(text[a:b])) - 2 for a, b in zip(starts, starts[1:], strict=False)]
    return median(gaps) <= TITLE_WORDS


def _is_page_run(text: str) -> bool:
    pages = [int(m.group()) for m in _PAGE.finditer(text)]
    if len(pages) < MIN_PAGES or len(pages) < PAGE_SHARE * len(_WORD.findall(text)):
        return False
    steps = [b - a for a, b in zip(pages, pages[1:], strict=False)]
    # pages rise unevenly; numbered steps, questions or figures count up by one
    counting = sum(step == 1 for step in steps)
    return sum(step > 0 for step in steps) >= RISING_SHARE * len(steps) > 2 * counting


def asks_about_contents(question: str) -> bool:
    """Whether the question is about the documents' structure (their chapters, sections or
    contents), where a listing is the evidence rather than noise."""
    return bool(_ABOUT_CONTENTS.search(question))
