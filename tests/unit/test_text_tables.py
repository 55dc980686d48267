"""Plain-text tables (columns lined up with spaces): each row under its column names."""

from __future__ import annotations

from agent.ingest.parse import parse_text
from agent.ingest.text_tables import aligned_table, aligned_table_lines

READINGS = """\
  Site  Time   Water T (C)  pH    DO (mg/L)
  S1    08:40   9.3         6.79  10.5
  S4    11:20  15.8         7.62   5.9
"""


def test_each_row_is_written_under_its_column_names():
    assert aligned_table_lines(READINGS) == [
        "Site: S1; Time: 08:40; Water T (C): 9.3; pH: 6.79; DO (mg/L): 10.5.",
        "Site: S4; Time: 11:20; Water T (C): 15.8; pH: 7.62; DO (mg/L): 5.9.",
    ]


def test_tabs_part_columns_too():
    block = "Name\tRoom\tExtension\nAda Quell\tB.214\t4471\nTom Vane\tC.101\t4402"
    assert aligned_table_lines(block) == [
        "Name: Ada Quell; Room: B.214; Extension: 4471.",
        "Name: Tom Vane; Room: C.101; Extension: 4402.",
    ]


def test_prose_and_ragged_blocks_are_no_tables():
    prose = (
        "The survey ran late.  We packed the van at six.  Rain came in at ten.\n"
        "Idris called twice.  The culvert was blocked.  We turned back at S3.\n"
        "Next week we try again.  Bring the spare probe.  And the flask.\n"
    )
    assert aligned_table(prose.splitlines()) is None  # no figure in any row
    ragged = "Site  Time  DO\nS1  08:40  10.5\nS4  11:20\n"
    assert aligned_table(ragged.splitlines()) is None  # a row short of a cell
    two = "Site  DO\nS1  10.5\nS4  5.9\n"
    assert aligned_table(two.splitlines()) is None  # two columns: as often label-value pairs
    headless = "S1  08:40  10.5\nS4  11:20  5.9\nS5  12:30  6.8\n"
    assert aligned_table(headless.splitlines()) is None  # no line of column names


def test_a_text_file_keeps_its_table_rows_as_paragraphs():
    text = f"2024-06-11 field day.\n\n{READINGS}\nS4 was the lowest so far."
    paragraphs = [p.text for p in parse_text(text, "notes").paragraphs]
    assert paragraphs == [
        "2024-06-11 field day.",
        "Site: S1; Time: 08:40; Water T (C): 9.3; pH: 6.79; DO (mg/L): 10.5.",
        "Site: S4; Time: 11:20; Water T (C): 15.8; pH: 7.62; DO (mg/L): 5.9.",
        "S4 was the lowest so far.",
    ]
