"""A PDF's running headers and footers, taken off each page's text.

Reports, papers and books repeat a line at the top or foot of every page: the title, the
organisation, "Page 3 of 12". Extracted with the page, it was glued into the page's first
paragraph and, where a paragraph runs on over the page break, into the middle of a
sentence ("… Strand & Fennick Page 3 of 5 Velloran Coastal Trust Annual Report 2023
Aggregates, the …"): noise in the passage the model reads and in the embedded text.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

EDGE = 2
"""Lines looked at on each edge of a page (a header can sit above a section title)."""
RUNNING_SHARE = 0.5
"""A line's shape must stand on an edge of at least this share of the pages (and of 3)."""

# "12", "- 12 -", "Page 3", "Page 3 of 12", "3 / 12"
_PAGE_NUMBER = re.compile(
    r"^(?:page\s+)?[-–—]?\s*\d{1,4}\s*[-–—]?(?:\s*(?:of|/)\s*\d{1,4})?$", re.I
)
_LETTER = re.compile(r"[^\W\d_]")


def _shape(line: str) -> str:
    """A line as it repeats from page to page: its numbers (the page's own) as ``#``."""
    return re.sub(r"\d+", "#", " ".join(line.casefold().split()))


def _edges(lines: list[str]) -> list[int]:
    """The indexes of a page's first and last :data:`EDGE` non-blank lines."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    return sorted(set(filled[:EDGE] + filled[-EDGE:]))


def without_running_lines(texts: Sequence[str | Exception]) -> list[str | Exception]:
    """Each page's text (an exception is a page that was not read) less its running
    header and footer lines: a line on a page's edge whose shape (numbers aside) stands on
    the edge of most pages, or one that is only a page number. A page holding nothing else
    keeps its lines."""
    pages = [t.splitlines() for t in texts if isinstance(t, str)]
    seen: Counter[str] = Counter()
    for lines in pages:
        seen.update({_shape(lines[i]) for i in _edges(lines)})
    need = max(3, math.ceil(RUNNING_SHARE * len(pages)))
    # a repeated line must hold a letter: a row of figures may end a page's table each time
    running = {shape for shape, n in seen.items() if n >= need and _LETTER.search(shape)}

    def furniture(line: str) -> bool:
        text = line.strip()
        return _shape(text) in running or bool(_PAGE_NUMBER.match(text))

    def cleaned(text: str) -> str:
        lines = text.splitlines()
        drop = {i for i in _edges(lines) if furniture(lines[i])}
        kept = [line for i, line in enumerate(lines) if i not in drop]
        # a page of nothing but the repeated line is that page's content, not its frame
        return "\n".join(kept) if any(line.strip() for line in kept) else text

    return [cleaned(t) if isinstance(t, str) else t for t in texts]
