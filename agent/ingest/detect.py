"""Document type by heuristics only, in the seed order SENSITIVE -> FAQ -> BOOK -> USER."""

from __future__ import annotations

import re
from typing import Literal

from agent.config import Settings
from agent.ingest.document import Paragraph
from agent.ingest.sanitize import pii_density

DocType = Literal["SENSITIVE", "FAQ", "BOOK", "USER"]

# "Q: …", "Question 2: …", "3. How do I …?" (a question mark ending a sentence: a numbered
# reference's URL, "…/players.php?id=…", asks nothing)
_QUESTION_START = re.compile(
    r"^\s*(?:Q\s*\d*\s*[:.)]|Question\s*\d*\s*[:.)]|\d{1,3}[.)]\s+\S.*?\?(?=[\s\"'”’)]|$))",
    re.I,
)
_INLINE_Q = re.compile(r"(?:^|\s)Q\s*\d*\s*[:.)]\s", re.I)
_FAQ_WORDS = re.compile(r"\bFAQs?\b|frequently asked", re.I)


def is_question(paragraph: str) -> bool:
    """Does this paragraph open a Q&A pair (``Q: …``, ``Question 2: …``, a short question)?"""
    text = paragraph.strip()
    if _QUESTION_START.match(text):
        return True
    first_line = text.split("\n", 1)[0]
    return first_line.endswith("?") and len(first_line) <= 200


def looks_like_faq(paragraphs: list[Paragraph], settings: Settings) -> bool:
    """At least two questions, and either many of them or an FAQ title near the start."""
    questions = sum(
        max(1 if is_question(p.text) else 0, len(_INLINE_Q.findall(p.text))) for p in paragraphs
    )
    if questions < settings.faq_min_questions:
        return False
    many = (
        questions >= settings.faq_many_questions
        and questions >= settings.faq_question_ratio * len(paragraphs)
    )
    head = "\n".join(p.text for p in paragraphs)[:2000]
    return many or bool(_FAQ_WORDS.search(head))


def looks_like_long_form(paragraphs: list[Paragraph], settings: Settings) -> bool:
    """Long, in many paragraphs, and structured like a book or report."""
    length = sum(len(p.text) for p in paragraphs)
    if length < settings.long_form_min_chars or len(paragraphs) < settings.long_form_min_paragraphs:
        return False
    headings = len({(p.chapter, p.section) for p in paragraphs if p.chapter or p.section})
    average = length / len(paragraphs)
    return (
        headings >= 2
        or (len(paragraphs) >= 20 and length > 20_000)
        or (average > 80 and length > 15_000)
    )


def detect_document_type(paragraphs: list[Paragraph], settings: Settings) -> DocType:
    """SENSITIVE (PII density) -> FAQ -> BOOK (long form) -> USER."""
    text = "\n\n".join(p.text for p in paragraphs)
    if pii_density(text) >= settings.pii_density_sensitive:
        return "SENSITIVE"
    if looks_like_faq(paragraphs, settings):
        return "FAQ"
    if looks_like_long_form(paragraphs, settings):
        return "BOOK"
    return "USER"
