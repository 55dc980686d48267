"""Small text helpers shared by the citation guard and the extractive answerer."""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    [
        "a",
        "also",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "being",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "him",
        "his",
        "how",
        "i",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "might",
        "must",
        "my",
        "not",
        "of",
        "on",
        "onto",
        "or",
        "our",
        "shall",
        "she",
        "should",
        "so",
        "such",
        "than",
        "that",
        "the",
        "their",
        "them",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "upon",
        "us",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)


def plain_words(text: str) -> str:
    """Lowercase letters and digits in runs, one space apart: how phrases are compared
    (punctuation, curly quotes and case do not matter)."""
    return " ".join(_WORD.findall(text.lower()))


def folded_words(text: str) -> str:
    """Word characters of any script in runs, case-folded, one space apart: how labels are
    compared (punctuation and case do not matter; unlike :func:`plain_words`, letters outside
    a-z count)."""
    return " ".join(re.findall(r"\w+", text.casefold()))


def content_words(text: str) -> list[str]:
    """Lower-cased content words of 3+ letters in order, crudely singularised (``cats`` -> ``cat``)."""
    words = (w for w in _WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 2)
    return [w[:-1] if len(w) > 4 and w.endswith("s") else w for w in words]


def listed(items: list[str]) -> str:
    """``items`` as a sentence lists them: "a", "a and b", "a, b and c" ("" for none)."""
    if len(items) < 2:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def content_terms(text: str) -> set[str]:
    """The distinct :func:`content_words` of ``text``."""
    return set(content_words(text))


# "[47]", "[19][30]" after a sentence's punctuation, or opening a line: an encyclopedia's
# footnote marks, pasted with its text; "x[1]" and "as shown in [3]" are not touched
_REFERENCE_MARKS = re.compile(
    r"(?<=[.,;:!?)\"'’”])(?:\[\d{1,3}\])+|^(?:\[\d{1,3}\])+[ \t]*", re.MULTILINE
)


def without_reference_marks(text: str) -> str:
    """``text`` without footnote marks such as ``[47]`` after punctuation or opening a line
    (see above): they cost a small model tokens, and it copies them into answers."""
    return _REFERENCE_MARKS.sub("", text)


def has_caseless_letters(text: str) -> bool:
    """Whether ``text`` holds letters of a script without capitals (Chinese, Japanese,
    Arabic…), where checks that read capitals or English words have nothing to go by."""
    return any(c.isalpha() and not c.isupper() and not c.islower() for c in text)
