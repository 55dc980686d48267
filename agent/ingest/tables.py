"""A table's rows as text that search and a model can read: each row under its column names.

A row joined as "Marrowgate | 3 Tolley Street | 09:00-17:00 | Priya Oststrand" has lost what
its cells are. The small embedder put such rows far from "Who manages the Marrowgate
office?" (cosine 0.16: the question was answered as not covered), and the 1.5B model,
reading the header three rows up, gave another row's manager. Written as "City: Marrowgate;
Address: 3 Tolley Street; Opening hours: 09:00-17:00; Manager: Priya Oststrand." a row says
what each cell is, and as one sentence it is what a focused passage keeps
(:mod:`agent.retrieval.focus`).

The header row is known from the markup where the format has one (HTML ``th``, Markdown's
separator line, PowerPoint's header-row flag, Word's repeated header row); otherwise a first
row counts as the header when each of its cells is a short label without digits, or one
naming a column of figures by its period ("Tonnes 2025", "Q3"), and the table has at least
three columns, or two over rows whose second cells describe at length ("Role |
Responsibility"): a two-column table is as often label | value pairs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.ingest.document import squash

# a column name: opens with a letter, holds no digit ("Q3 revenue" is a value-like label)
_LABEL = re.compile(r"^[^\W\d_][^\d]{0,40}$")
# a period naming a column of figures: a year ("2025", "2024/25"), a quarter, half, fiscal
# year or numbered year ("Q3", "H1", "FY2024", "Y1")
_PERIOD = re.compile(r"\b(?:(?:19|20)\d{2}(?:[/-]\d{2,4})?|(?:FY|Q|H|Y)\s?\d{1,4})\b")
_FIGURE_CELL = re.compile(r"^(?:[A-Z]{3}\s)?[-+−(~≈]?\s?[£$€¥]?\s?\d")
_MARKDOWN_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")


DESCRIBED_WORDS = 6
"""Mean words of a two-column table's second cells for its first row to be read as a header
of short labels ("Role | Responsibility" over sentences of duties), not a label-value pair."""


def _period_label(cell: str, column: Sequence[str]) -> bool:
    """Whether ``cell`` names a column of figures by a period ("Tonnes 2025", "Q3", "FY2024
    revenue", "Units Y1 (base)"): a label once its periods are left out, over a column whose
    cells are mostly figures."""
    rest = _PERIOD.sub("", cell).strip()
    if not _PERIOD.search(cell) or (rest and not _LABEL.match(rest)):
        return False
    values = [c for c in column if c]
    return bool(values) and 2 * sum(bool(_FIGURE_CELL.match(c)) for c in values) >= len(values)


def looks_like_header(row: Sequence[str], rows: int, later: Sequence[Sequence[str]] = ()) -> bool:
    """Whether ``row``, the first of ``rows`` rows, names the columns of a table whose
    markup does not say (see the module docs); ``later``: the rows under it, which tell a
    two-column table's header of labels over descriptions from a first label-value pair,
    and a column of figures named by a period ("Tonnes 2025") from a row of values."""
    if rows < 2 or not row or not _LABEL.match(row[0]):
        return False
    for i, cell in enumerate(row):
        column = [r[i] for r in later if len(r) == len(row)]
        if len(cell.split()) > 5 or not (_LABEL.match(cell) or _period_label(cell, column)):
            return False
    if len(row) >= 3:
        return True
    described = [r[1] for r in later if len(r) == 2]
    return (
        len(row) == 2
        and len(described) >= 2
        and all(len(cell.split()) <= 3 for cell in row)
        and sum(len(cell.split()) for cell in described) / len(described) >= DESCRIBED_WORDS
    )


def _sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?")) else f"{text}."


def table_lines(rows: Sequence[Sequence[str]], header: bool | None = None) -> list[str]:
    """One line of text per row of a table: with a header row (``header``; ``None``: judged
    by :func:`looks_like_header`), each later row as ``"Name: cell; Name: cell."`` (empty
    cells left out; a row with more or fewer cells than the header, as merged cells give,
    joined with ``" | "``); without one, each row's cells joined with ``" | "``."""
    table = [[squash(cell) for cell in row] for row in rows]
    table = [row for row in table if any(row)]
    if not table:
        return []
    if header is None:
        header = looks_like_header(table[0], len(table), table[1:])
    names = table[0]
    if not header or len(table) < 2 or sum(1 for name in names if name) < 2:
        return [" | ".join(cell for cell in row if cell) for row in table]
    lines = []
    for row in table[1:]:
        if len(row) != len(names):
            lines.append(" | ".join(cell for cell in row if cell))
            continue
        pairs = [
            f"{name}: {cell}" if name else cell
            for name, cell in zip(names, row, strict=True)
            if cell
        ]
        lines.append(_sentence("; ".join(pairs)))
    return lines


def markdown_table(lines: Sequence[str], start: int = 0) -> list[list[str]] | None:
    """The rows of the Markdown pipe table opening at ``lines[start]`` (header, ``---`` rule,
    then every following line holding a ``|``), without the rule; ``None`` when none opens
    there. The rule is checked first, so a run of piped lines that is no table costs one
    look per line."""
    if (
        start + 1 >= len(lines)
        or "|" not in lines[start]
        or "|" not in lines[start + 1]
        or not _MARKDOWN_RULE.match(lines[start + 1])
    ):
        return None
    end = start + 2
    while end < len(lines) and "|" in lines[end]:
        end += 1

    def cells(line: str) -> list[str]:
        line = line.strip()
        line = line[1:] if line.startswith("|") else line
        line = line[:-1] if line.endswith("|") else line
        return [squash(cell) for cell in line.split("|")]

    return [cells(lines[start]), *(cells(line) for line in lines[start + 2 : end])]
