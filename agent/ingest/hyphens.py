"""Words hyphenated at a line end, joined by what the document itself writes.

PDFium marks a word broken across lines with U+FFFE between its halves. Most such breaks
split one word into syllables ("imple-mented"), but a compound broken at its own hyphen
("dual-encoder", "open-domain", "Lucene-BM25") keeps it. Joining every break ran those
together into words nobody searches for ("dualencoder"). :func:`join_line_breaks` decides
each break by the rest of the document: the hyphenated form written elsewhere keeps the
hyphen, the joined form written elsewhere drops it; with no evidence, a second half that
opens with a capital or a digit, or a one-letter first half (typesetting never leaves one
letter of a syllable behind), keeps it, and anything else is joined.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MARK = "\ufffe"
_BROKEN = re.compile(rf"(\w+){MARK}(\w+)")
_HYPHENATED = re.compile(r"\w+-\w+")
_WORD = re.compile(r"\w+")


def _keeps_hyphen(first: str, second: str, hyphenated: set[str], words: set[str]) -> bool:
    if f"{first}-{second}".casefold() in hyphenated:
        return True
    if f"{first}{second}".casefold() in words:
        return False
    return second[0].isupper() or second[0].isdigit() or len(first) == 1


def join_line_breaks(texts: Sequence[str | Exception]) -> list[str | Exception]:
    """Each text with its marked line-end breaks joined, with or without a hyphen as the
    whole document (every text in ``texts``; an exception is a page that was not read)
    writes the word elsewhere; a mark not between two word halves becomes a hyphen."""
    pages = [t for t in texts if isinstance(t, str)]
    unbroken = _BROKEN.sub(" ", " ".join(pages)).casefold()
    hyphenated = set(_HYPHENATED.findall(unbroken))
    words = set(_WORD.findall(unbroken))

    def join(m: re.Match[str]) -> str:
        first, second = m.group(1), m.group(2)
        return (
            f"{first}-{second}"
            if _keeps_hyphen(first, second, hyphenated, words)
            else first + second
        )

    return [t if not isinstance(t, str) else _BROKEN.sub(join, t).replace(MARK, "-") for t in texts]
