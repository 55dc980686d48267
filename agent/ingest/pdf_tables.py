"""Tables of figures in a PDF page's text, read back into rows under their column names.

A PDF keeps no table, only words placed on the page; extracted, a table of figures is a
run of lines, each a row's label and then its figures: "Quarnby Flats 51.2 46.9 38.4
72.1", under a header "Region 2020 2021 2022 2023". Joined into one paragraph, nothing
said which figure was 2022's, and "How many hectares were restored at Quarnby Flats in
2022?" was answered from the wrong column. Such a run becomes one line per row, "Region:
Quarnby Flats; 2020: 51.2; 2021: 46.9; 2022: 38.4; 2023: 72.1." (:mod:`agent.ingest.tables`),
when its header can be told: a first line whose figures are all years (column names), or
a line above the run whose last words are as many as the figures.
"""

from __future__ import annotations

import re

from agent.ingest.tables import table_lines

# a figure as tables print it: "22.5", "1,874", "£4,217,600", "46%", "-3.2", "(12)", "—"
_FIGURE = r"(?:[-+(]?[£$€]?\d[\d,]*(?:\.\d+)?%?\)?|[-–—])"
_ROW = re.compile(rf"^(?P<label>.*?[^\W\d_].*?)\s+(?P<figures>{_FIGURE}(?:\s+{_FIGURE})+)$")
_YEAR = re.compile(r"^(1[6-9]|20)\d\d$")
_WORD = re.compile(r"^[^\W\d_][\w&/'’.-]*$")
MIN_ROWS = 2
"""Data rows a run needs to be read as a table (a header aside)."""


def _row(line: str) -> tuple[str, list[str]] | None:
    """A line's label and its trailing figures (two or more), or ``None``."""
    match = _ROW.match(line.strip())
    if match is None:
        return None
    return match["label"].strip(), match["figures"].split()


def _header_above(line: str, count: int) -> list[str] | None:
    """A header line's cells for ``count`` figure columns: the label column's name (what
    is left, maybe nothing) and one capitalised word or year per column; ``None`` for a
    line that is not such a header."""
    tokens = line.split()
    names = tokens[-count:]
    if len(tokens) < count or len(tokens) > count + 2:  # a sentence, not a header
        return None
    if not all(_YEAR.match(t) or (_WORD.match(t) and t[0].isupper()) for t in names):
        return None
    return [" ".join(tokens[:-count]), *names]


def _table(rows: list[tuple[str, list[str]]], above: str | None) -> tuple[list[str], bool] | None:
    """Figure ``rows`` (label and figures, as many in each) as lines under their column
    names, and whether the header was the line ``above`` them; ``None`` when no header can
    be told."""
    label, figures = rows[0]
    if len(set(figures)) > 1 and all(_YEAR.match(f) for f in figures):
        names, data, from_above = [label, *figures], rows[1:], False
    elif above is not None and (header := _header_above(above, len(figures))) is not None:
        names, data, from_above = header, rows, True
    else:
        return None
    if len(data) < MIN_ROWS:
        return None
    return table_lines(
        [names, *([label, *cells] for label, cells in data)], header=True
    ), from_above


def with_tables_read(text: str) -> str:
    """``text`` (one page) with each run of figure rows under a header told (see the module
    docs) replaced by its rows as ``"Name: cell; Name: cell."`` lines; the rest as it was."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        rows = []
        while i + len(rows) < len(lines) and (row := _row(lines[i + len(rows)])) is not None:
            if rows and len(row[1]) != len(rows[0][1]):
                break
            rows.append(row)
        if not rows:
            out.append(lines[i])
            i += 1
            continue
        table = _table(rows, out[-1] if out else None) if len(rows) >= MIN_ROWS else None
        if table is None:
            out.extend(lines[i : i + len(rows)])
        else:
            if table[1]:
                out.pop()  # the header line is in the rows' names now
            out.extend(table[0])
        i += len(rows)
    return "\n".join(out)
