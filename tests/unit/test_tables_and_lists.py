"""Tables and lists as text: each table row under its column names (``agent.ingest.tables``),
in every format that has tables, and each list item a paragraph of its own."""

from __future__ import annotations

import io

import docx
from docx.oxml import OxmlElement
from docx.oxml.ns import qn

from agent.ingest.detect import is_question
from agent.ingest.parse import parse_bytes
from agent.ingest.tables import looks_like_header, markdown_table, table_lines

OFFICES = [
    ["City", "Address", "Opening hours", "Manager"],
    ["Lanthorn Bay", "14 Quillon Wharf", "07:30-19:00", "Dorian Halvey"],
    ["Marrowgate", "3 Tolley Street", "09:00-17:00", "Priya Oststrand"],
]


def test_each_row_says_what_each_cell_is_as_one_sentence():
    assert table_lines(OFFICES) == [
        "City: Lanthorn Bay; Address: 14 Quillon Wharf; Opening hours: 07:30-19:00;"
        " Manager: Dorian Halvey.",
        "City: Marrowgate; Address: 3 Tolley Street; Opening hours: 09:00-17:00;"
        " Manager: Priya Oststrand.",
    ]


def test_empty_cells_are_left_out_and_a_merged_row_is_joined():
    rows = [["Plant", "Height", "Colour"], ["Kale", "", "silver"], ["Note: all hardy"]]
    assert table_lines(rows) == ["Plant: Kale; Colour: silver.", "Note: all hardy"]


def test_columns_of_figures_named_by_a_period_are_a_header():
    harvest = [
        ["Variety", "Tonnes 2024", "Tonnes 2025", "Main buyer"],
        ["Bramley", "412", "388", "Hartwell Ciders"],
        ["Discovery", "98", "120", "Greenleaf Markets"],
    ]
    assert table_lines(harvest)[0] == (
        "Variety: Bramley; Tonnes 2024: 412; Tonnes 2025: 388; Main buyer: Hartwell Ciders."
    )
    assert table_lines([["Item", "Q1", "Q2"], ["Rent", "10", "12"]]) == [
        "Item: Rent; Q1: 10; Q2: 12."
    ]


def test_a_first_row_of_values_or_two_columns_is_no_header_unless_the_markup_says():
    figures = [["Q3 revenue", "4.2", "5.1"], ["Q4 revenue", "4.4", "5.0"]]
    assert not looks_like_header(figures[0], 2, figures[1:])  # a row label and its figures
    assert table_lines(figures) == ["Q3 revenue | 4.2 | 5.1", "Q4 revenue | 4.4 | 5.0"]
    rooms = [["Room 101", "Block B2", "Level 3"], ["Room 102", "Block C1", "Level 2"]]
    assert table_lines(rooms) == ["Room 101 | Block B2 | Level 3", "Room 102 | Block C1 | Level 2"]
    pairs = [["Name", "Priya Oststrand"], ["Role", "Manager"]]
    assert table_lines(pairs) == ["Name | Priya Oststrand", "Role | Manager"]
    duties = [
        ["Role", "Responsibility"],
        [
            "Kiln Technician (Ilse Moravec-Dunn)",
            "Keeps the kiln log book and schedules all firings.",
        ],
        ["Tutors", "Brief course participants on this policy at the start of each course."],
    ]
    assert table_lines(duties)[0] == (
        "Role: Kiln Technician (Ilse Moravec-Dunn); Responsibility: Keeps the kiln log book"
        " and schedules all firings."
    )
    described_pairs = [["Name", "Priya"], ["Purpose", "This policy sets out how we work here."]]
    assert not looks_like_header(described_pairs[0], 2, described_pairs[1:])  # one row under it
    assert table_lines([["Region", "Sales"], ["North", "42"]], header=True) == [
        "Region: North; Sales: 42."
    ]


def test_markdown_pipe_tables_are_read_with_their_header():
    lines = ["| Dish | Paprika |", "|---|:---:|", "| Stew | 2 teaspoons |"]
    assert markdown_table(lines) == [["Dish", "Paprika"], ["Stew", "2 teaspoons"]]
    assert markdown_table(["a | b", "not a rule"]) is None
    text = (
        "# Kitchen\n\nIntro line.\n\n## Dishes\n| Dish | Paprika |\n|---|---|\n"
        "| Stew | 2 teaspoons |\n| Soup | none |\nAfter the table."
    )
    doc = parse_bytes(text.encode(), "notes.md")
    assert [(p.text, p.section) for p in doc.paragraphs] == [
        ("Kitchen", None),
        ("Intro line.", None),
        ("Dishes", "Dishes"),
        ("Dish: Stew; Paprika: 2 teaspoons.", "Dishes"),
        ("Dish: Soup; Paprika: none.", "Dishes"),
        ("After the table.", "Dishes"),
    ]


def test_html_tables_without_th_use_the_header_judgement():
    page = (
        "<main><p>Offices.</p><table>"
        + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in OFFICES)
        + "</table></main>"
    ).encode()
    texts = [p.text for p in parse_bytes(page, "offices.html").paragraphs]
    assert texts[0] == "Offices."
    assert texts[2].startswith("City: Marrowgate;") and texts[2].endswith("Priya Oststrand.")


def test_a_word_header_row_names_two_columns():
    document = docx.Document()
    table = document.add_table(rows=2, cols=2)
    for r, row in enumerate([["Role", "Notice"], ["Engineer", "1 month"]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    properties = table.rows[0]._tr.get_or_add_trPr()
    properties.append(OxmlElement("w:tblHeader"))
    assert properties.find(qn("w:tblHeader")) is not None
    buffer = io.BytesIO()
    document.save(buffer)
    texts = [p.text for p in parse_bytes(buffer.getvalue(), "notice.docx").paragraphs]
    assert texts == ["Role: Engineer; Notice: 1 month."]


def test_list_items_are_paragraphs_of_their_own():
    notes = (
        "# Stew\n\nFor six people:\n- 250 g pearl barley\n- 3 carrots and\n  2 parsnips\n"
        "- 2 teaspoons of smoked paprika\n\n1. Soak the barley.\n2) Brown the pork"
    )
    texts = [p.text for p in parse_bytes(notes.encode(), "stew.md").paragraphs]
    assert texts == [
        "Stew",
        "For six people:",
        "- 250 g pearl barley.",
        "- 3 carrots and 2 parsnips.",  # an item's wrapped line stays with it
        "- 2 teaspoons of smoked paprika.",
        "1. Soak the barley.",
        "2) Brown the pork.",
    ]
    # plain text keeps its lines' paragraph: a list there has no syntax to trust
    plain = "Packing list\n- a torch\n- spare socks"
    texts = [p.text for p in parse_bytes(plain.encode(), "list.txt").paragraphs]
    assert texts == ["Packing list - a torch - spare socks"]


def test_a_numbered_reference_with_a_query_string_is_no_question():
    assert is_question("3. How do I reset my password?")
    assert is_question('12. "Is it over?" (http://example.com/a?b=1)')
    assert not is_question("4. Games played (https://www.soccerbase.com/players.php?id=3)")
