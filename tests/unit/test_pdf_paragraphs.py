"""A PDF page's text into paragraphs: numbered headings apart, tables of figures under
their column names, and sentences that a page break cut made whole."""

from pathlib import Path

import pytest

from agent.ingest import pdf
from agent.ingest.pdf_paragraphs import (
    is_numbered_heading,
    joined_over_page,
    runs_on,
    split_paragraphs,
)
from agent.ingest.pdf_tables import with_tables_read

SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "data" / "docs" / "pdf-samples"


def test_a_table_of_figures_under_a_row_of_years_is_read_row_by_row():
    page = (
        "Table 1. Habitat restored by region (hectares)\n"
        "Region 2020 2021 2022\n"
        "Marrowick Bay 22.5 31.0 44.8\n"
        "Quarnby Flats 51.2 46.9 38.4\n"
        "3.1 Marrowick Bay\n"
        "Marrowick Bay remains our flagship site."
    )
    assert with_tables_read(page).splitlines() == [
        "Table 1. Habitat restored by region (hectares)",
        "Region: Marrowick Bay; 2020: 22.5; 2021: 31.0; 2022: 44.8.",
        "Region: Quarnby Flats; 2020: 51.2; 2021: 46.9; 2022: 38.4.",
        "3.1 Marrowick Bay",
        "Marrowick Bay remains our flagship site.",
    ]


def test_a_header_line_of_words_names_the_columns():
    page = "Source Grants Donations\nTrusts £1,200 3,400\nThe public 900 —\nThe end."
    assert with_tables_read(page).splitlines() == [
        "Source: Trusts; Grants: £1,200; Donations: 3,400.",
        "Source: The public; Grants: 900; Donations: —.",
        "The end.",
    ]


@pytest.mark.parametrize(
    "page",
    [
        # no header to tell the columns by
        "Results were mixed this year\nMarrowick Bay 22.5 31.0\nQuarnby Flats 51.2 46.9",
        # one row is no table
        "Region 2020 2021\nMarrowick Bay 22.5 31.0\nThe rest is prose.",
        # a sentence above is no header, and rows of differing widths are no run
        "We counted the birds on the marsh in the spring Count Total\nTerns 12 14\nGulls 3 4 5",
    ],
)
def test_lines_that_are_no_table_are_left_as_they_were(page):
    assert with_tables_read(page) == page


@pytest.mark.parametrize(
    ("line", "heading"),
    [
        ("2. The Year at a Glance", True),
        ("3.5 Pellinore Reach", True),
        ("1 Introduction", True),
        ("12 Marrowick families joined the scheme and", False),
        ("1. Check the kiln log book.", False),
        ("3.5 is not a bullet", False),
        ("2023 was a good year for the Trust", False),
    ],
)
def test_numbered_headings(line, heading):
    assert is_numbered_heading(line) is heading


def test_a_numbered_heading_is_a_paragraph_of_its_own():
    text = (
        "Isolde Pranckett, Chair of Trustees\n2. The Year at a Glance\n"
        "Across our five regions the Trust restored\n312.6 hectares of saltmarsh."
    )
    assert split_paragraphs(text) == [
        "Isolde Pranckett, Chair of Trustees",
        "2. The Year at a Glance",
        "Across our five regions the Trust restored 312.6 hectares of saltmarsh.",
    ]


def test_a_sentence_cut_by_the_page_break_is_finished_where_it_starts():
    last = "We thank our partners, in particular Strand & Fennick"
    first = "Aggregates, who donated plant hire. The board met six times."
    assert runs_on(last, first)
    assert joined_over_page(last, first) == (
        "We thank our partners, in particular Strand & Fennick Aggregates, who donated plant hire.",
        "The board met six times.",
    )
    assert joined_over_page("the figure was contribu-", "ted by corporate teams.")[0] == (
        "the figure was contributed by corporate teams."
    )
    assert not runs_on("The board met six times.", "Aggregates follow.")
    assert not runs_on("Priorities for the coming year", "• Survey Brannock Spit.")
    assert not runs_on("The text goes on", "4. Science and Monitoring")


def test_a_real_pdf_keeps_its_pages_and_finishes_its_cut_sentences():
    data = (SAMPLES / "004-pdflatex-4-pages" / "pdflatex-4-pages.pdf").read_bytes()
    paragraphs = pdf.parse_pdf(data, "four").paragraphs
    assert {p.page for p in paragraphs} == {1, 2, 3, 4}
    last_on_1 = [p for p in paragraphs if p.page == 1][-1]
    # page 1 ends "you will get no", page 2 opens "information. Really?"
    assert last_on_1.text.endswith("you will get no information.")
    assert [p for p in paragraphs if p.page == 2][0].text.startswith("Really?")
    assert not any(p.text in {"1", "2", "3", "4"} for p in paragraphs)  # page numbers
