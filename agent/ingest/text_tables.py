"""Tables laid out in plain text: columns lined up with spaces, as lab notes, logs and
READMEs write them.

    Site  Time   Water T (C)  pH    DO (mg/L)
    S4    11:20  15.8         7.62  5.9

Unwrapped into one paragraph such a block is a run of figures ("S4 11:20 15.8 7.62 5.9 S5
12:30 …") whose columns nobody can tell apart: asked for the oxygen reading at S4, the 1.5B
model gave another row's and another column's figure. Each row is written under its column
names instead, as Word, web and PDF tables are (:func:`agent.ingest.tables.table_lines`):
"Site: S4; Time: 11:20; Water T (C): 15.8; pH: 7.62; DO (mg/L): 5.9."
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.ingest.tables import table_lines

_GUTTER = re.compile(r"\s{2,}|\t+")
"""What parts two columns: two or more spaces, or tabs (a single space is inside a cell)."""

MIN_COLUMNS = 3
MIN_ROWS = 2


def _cells(line: str) -> list[str]:
    return [cell for cell in _GUTTER.split(line.strip()) if cell]


def aligned_table(lines: Sequence[str]) -> list[list[str]] | None:
    """The rows of a block of lines laid out as a table, its first line the column names;
    ``None`` when the block is no such table.

    A table: a header and at least ``MIN_ROWS`` rows, every line split by gutters into the
    same number of cells (``MIN_COLUMNS`` or more), the header's cells all holding a letter,
    some row holding a figure (a block of lines in columns of words alone is as often a
    list laid out for the eye) and most cells no sentence."""
    lines = [line for line in lines if line.strip()]
    if len(lines) < MIN_ROWS + 1:
        return None
    rows = [_cells(line) for line in lines]
    width = len(rows[0])
    if width < MIN_COLUMNS or any(len(row) != width for row in rows):
        return None
    if not all(re.search(r"[^\W\d_]", cell) for cell in rows[0]):
        return None
    cells = [cell for row in rows for cell in row]
    if sum(cell.endswith((".", "!", "?")) for cell in cells) * 2 > len(cells):
        return None  # sentences two spaces apart, as typewriter-taught writers set them
    if not any(re.search(r"\d", cell) for row in rows[1:] for cell in row):
        return None
    return rows


def aligned_table_lines(block: str) -> list[str] | None:
    """Each row of a plain-text table (:func:`aligned_table`) under its column names, one
    line a row; ``None`` when ``block`` is no table."""
    rows = aligned_table(block.splitlines())
    return table_lines(rows, header=True) if rows else None
