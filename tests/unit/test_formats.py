"""DOCX, PPTX and HTML parsing: structure, real sample files, hostile and corrupt inputs."""

from __future__ import annotations

import io
import os
import struct
import time
import tracemalloc
import zipfile
import zlib

import docx
import pptx
import pytest
from pptx.util import Inches

from agent.ingest.html import decode_html
from agent.ingest.office import MAX_MEMBERS, parse_docx, parse_pptx
from agent.ingest.parse import UnreadableDocument, UnsupportedDocument, parse_bytes
from tests.support.paths import SHARED

MISC = SHARED / "data" / "docs" / "misc"


def _docx_bytes(document) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def report_docx() -> bytes:
    document = docx.Document()
    document.core_properties.author = "Ada Lovelace"
    document.add_heading("Annual Report", level=0)  # "Title" style
    document.add_paragraph("Opening remarks before any chapter.")
    document.add_heading("Finances", level=1)
    document.add_paragraph("Revenue grew   strongly\tthis year.")
    document.add_heading("Costs", level=2)
    document.add_paragraph("Costs fell.")
    table = document.add_table(rows=3, cols=3)
    for r, row in enumerate([["Item", "Q1", "Q2"], ["Rent", "10", "12"], ["Staff", "", "30"]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    merged = document.add_table(rows=1, cols=3)
    merged.cell(0, 0).merge(merged.cell(0, 1)).text = "Merged"
    merged.cell(0, 2).text = "Single"
    document.add_paragraph("After the tables.")
    document.add_heading("Outlook", level=1)
    document.add_paragraph("Next year looks bright.")
    return _docx_bytes(document)


@pytest.fixture(scope="module")
def deck_pptx() -> bytes:
    deck = pptx.Presentation()
    deck.core_properties.title = "Quarterly Review"
    first = deck.slides.add_slide(deck.slide_layouts[1])  # title and content
    first.shapes.title.text = "Agenda"
    first.placeholders[1].text_frame.text = "Results"
    first.placeholders[1].text_frame.add_paragraph().text = "Plans"
    second = deck.slides.add_slide(deck.slide_layouts[5])  # title only
    second.shapes.title.text = "Numbers"
    table = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    for r, row in enumerate([["Region", "Sales"], ["North", "42"]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    second.notes_slide.notes_text_frame.text = "North beat its target by a third."
    third = deck.slides.add_slide(deck.slide_layouts[6])  # blank: no title placeholder
    group = third.shapes.add_group_shape()
    box = group.shapes.add_textbox(Inches(1), Inches(1), Inches(3), Inches(1))
    box.text_frame.text = "Grouped note"
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def zip_bomb() -> bytes:
    """One ~300 MiB member of zeros that deflates to well under 1 MB."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        chunk = bytes(1024 * 1024)
        with archive.open("word/document.xml", "w", force_zip64=True) as member:
            for _ in range(300):
                member.write(chunk)
    return buffer.getvalue()


# --- DOCX ---------------------------------------------------------------------------------------


def test_docx_headings_tables_and_order(report_docx):
    doc = parse_docx(report_docx, "report", "report.docx")
    assert doc.file_type == "docx"
    assert doc.title == "Annual Report"  # no core title: the Title paragraph
    assert doc.author == "Ada Lovelace"
    assert doc.page_count is None
    located = [(p.text, p.chapter, p.section) for p in doc.paragraphs]
    assert located == [  # a heading is read too, under itself
        ("Annual Report", "Annual Report", None),
        ("Opening remarks before any chapter.", "Annual Report", None),
        ("Finances", "Finances", None),
        ("Revenue grew strongly this year.", "Finances", None),
        ("Costs", "Finances", "Costs"),
        ("Costs fell.", "Finances", "Costs"),
        ("Item: Rent; Q1: 10; Q2: 12.", "Finances", "Costs"),  # columns named by a quarter
        ("Item: Staff; Q2: 30.", "Finances", "Costs"),  # an empty cell left out
        ("Merged | Single", "Finances", "Costs"),  # a merged cell appears once
        ("After the tables.", "Finances", "Costs"),
        ("Outlook", "Outlook", None),
        ("Next year looks bright.", "Outlook", None),  # a chapter resets the section
    ]
    assert all(p.page is None for p in doc.paragraphs)


def test_docx_core_title_wins_and_parse_bytes_dispatches(report_docx):
    document = docx.Document(io.BytesIO(report_docx))
    document.core_properties.title = "Report 2024"
    doc = parse_bytes(_docx_bytes(document), "annual-report.docx")
    assert doc.title == "Report 2024"
    assert parse_bytes(report_docx, "annual-report.docx", title="Mine").title == "Mine"


def test_real_docx_with_pictures():
    doc = parse_bytes((MISC / "contains-pictures.docx").read_bytes(), "contains-pictures.docx")
    assert doc.file_type == "docx"
    assert doc.title == "contains pictures"
    assert "floating picture" in doc.text
    assert len(doc.text) > 200


# --- PPTX ---------------------------------------------------------------------------------------


def test_pptx_slides_titles_tables_and_groups(deck_pptx):
    doc = parse_pptx(deck_pptx, "deck", "deck.pptx")
    assert doc.file_type == "pptx"
    assert doc.title == "Quarterly Review"
    assert doc.page_count == 3
    located = [(p.page, p.section, p.text) for p in doc.paragraphs]
    assert located == [
        (1, "Agenda", "Agenda"),
        (1, "Agenda", "Results"),
        (1, "Agenda", "Plans"),
        (2, "Numbers", "Numbers"),
        (2, "Numbers", "Region: North; Sales: 42."),  # each row under its column names
        (2, "Numbers: speaker notes", "North beat its target by a third."),
        (3, None, "Grouped note"),
    ]


def test_real_pptx_one_slide():
    doc = parse_bytes(
        (MISC / "science-exploration-1p.pptx").read_bytes(), "science-exploration-1p.pptx"
    )
    assert doc.file_type == "pptx"
    assert doc.page_count == 1
    assert doc.title == "science exploration 1p"  # the core title is PowerPoint's "Slide 1"
    assert "Earth Sciences Division" in doc.text
    assert {p.page for p in doc.paragraphs} == {1}
    assert doc.paragraphs[0].section == "Code 600: Sciences and Exploration Directorate (SED)"


# --- corrupt and hostile archives ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("filename", "what"), [("x.docx", "a Word document"), ("x.pptx", "a PowerPoint presentation")]
)
def test_random_bytes_are_unreadable(filename, what):
    with pytest.raises(UnreadableDocument, match=f"x could not be read as {what}: .*zip"):
        parse_bytes(os.urandom(4096), filename)
    with pytest.raises(UnreadableDocument, match="legacy binary"):
        parse_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(512), filename)


def test_other_zips_are_unreadable(report_docx, deck_pptx):
    plain = io.BytesIO()
    with zipfile.ZipFile(plain, "w") as archive:
        archive.writestr("hello.txt", "hello")
    with pytest.raises(UnreadableDocument, match="not an Office file"):
        parse_bytes(plain.getvalue(), "x.docx")
    with pytest.raises(UnreadableDocument, match="as a Word document: the file is not a Word"):
        parse_bytes(deck_pptx, "x.docx")
    with pytest.raises(UnreadableDocument, match="as a PowerPoint presentation"):
        parse_bytes(report_docx, "x.pptx")
    truncated = report_docx[: len(report_docx) // 2]
    with pytest.raises(UnreadableDocument, match="as a Word document"):
        parse_bytes(truncated, "x.docx")


@pytest.mark.parametrize("filename", ["bomb.docx", "bomb.pptx"])
def test_zip_bomb_is_refused_without_inflating(zip_bomb, filename):
    assert len(zip_bomb) < 2 * 1024 * 1024
    started = time.perf_counter()
    with pytest.raises(UnreadableDocument, match=r"unpacks to 300 MiB \(limit 200 MiB\)"):
        parse_bytes(zip_bomb, filename)
    assert time.perf_counter() - started < 1


def _lying_docx(docx_bytes: bytes, padding: int) -> bytes:
    """``docx_bytes`` with ``padding`` zero bytes inflating after its document XML, unclaimed.

    The document member's declared size and CRC are those of the real XML alone, so a reader
    that stops at the declared size sees a valid document.
    """
    buffer = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(docx_bytes)) as source,
        zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for name in source.namelist():
            if name != "word/document.xml":
                target.writestr(name, source.read(name))
        xml = source.read("word/document.xml")
        target.writestr("word/document.xml", xml + bytes(padding))  # written last
    data = bytearray(buffer.getvalue())
    local = zipfile.ZipFile(io.BytesIO(bytes(data))).getinfo("word/document.xml").header_offset
    central = data.rfind(b"PK\x01\x02")  # the last central directory entry: the document
    for crc_at, size_at in ((local + 14, local + 22), (central + 16, central + 24)):
        struct.pack_into("<I", data, crc_at, zlib.crc32(xml))
        struct.pack_into("<I", data, size_at, len(xml))
    return bytes(data)


def _peak_mib(parse):
    """``parse()``'s result and the peak Python memory it allocated, in MiB."""
    tracemalloc.start()
    try:
        result = parse()
        return result, tracemalloc.get_traced_memory()[1] / 1024**2
    finally:
        tracemalloc.stop()


def test_zip_member_lying_about_its_size_is_never_inflated(report_docx):
    liar = _lying_docx(report_docx, padding=100 * 1024 * 1024)
    assert len(liar) < 1024 * 1024
    # python-docx alone reads the whole member at once: the hidden 100 MiB are inflated
    _, unguarded = _peak_mib(lambda: docx.Document(io.BytesIO(liar)))
    assert unguarded > 100
    # the parser stops at the declared size and reads the real document
    doc, guarded = _peak_mib(lambda: parse_bytes(liar, "liar.docx"))
    assert guarded < 20
    assert doc.paragraphs[1].text == "Opening remarks before any chapter."


def test_unusual_compression_is_refused():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_BZIP2) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
    with pytest.raises(UnreadableDocument, match="compression method"):
        parse_bytes(buffer.getvalue(), "x.pptx")


def test_too_many_members_is_refused():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        for i in range(MAX_MEMBERS):
            archive.writestr(f"m/{i}", "")
    with pytest.raises(UnreadableDocument, match="10,001 files"):
        parse_bytes(buffer.getvalue(), "many.docx")


# --- HTML ---------------------------------------------------------------------------------------

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title> Travel  Notes </title>
<meta name="author" content="Jane Doe"><style>p { color: red }</style>
<script>var tracking = "script junk";</script></head>
<body>
<header><a href="/">Home</a> header junk</header>
<nav><ul><li>nav junk</li></ul></nav>
<main>
<h1>Lisbon</h1>
<p>Lisbon is <b>hilly</b> &amp; sunny.<br>Trams help.</p>
<h2>Food</h2>
<ul><li>Pastéis de nata</li><li>Bacalhau</li></ul>
<blockquote>Eat early.</blockquote>
<table><tr><th>Dish</th><th>Price</th></tr><tr><td>Soup</td><td>3 €</td></tr></table>
<h3>Coffee</h3>
<pre>bica
  galão</pre>
<div hidden>hidden junk</div>
<form><label>form junk</label></form>
<aside>Related: <a href="/a">aside junk</a>, <a href="/b">more aside junk</a></aside>
<aside><h2>Still stuck?</h2><p>Call us on <b>0161 496 0732</b>.</p></aside>
<h1>Porto</h1>
<p>Porto has wine.</p>
<noscript>noscript junk</noscript>
</main>
<footer>footer junk</footer>
</body></html>"""


def test_html_main_text_headings_and_junk_removed():
    doc = parse_bytes(PAGE.encode(), "travel.html")
    assert doc.file_type == "html"
    assert doc.title == "Travel Notes"
    assert doc.author == "Jane Doe"
    located = [(p.text, p.chapter, p.section) for p in doc.paragraphs]
    assert located == [  # a heading is read too, under itself
        ("Lisbon", "Lisbon", None),
        ("Lisbon is hilly & sunny. Trams help.", "Lisbon", None),
        ("Food", "Lisbon", "Food"),
        ("Pastéis de nata", "Lisbon", "Food"),
        ("Bacalhau", "Lisbon", "Food"),
        ("Eat early.", "Lisbon", "Food"),
        ("Dish: Soup; Price: 3 €.", "Lisbon", "Food"),  # th cells name the columns
        ("Coffee", "Lisbon", "Coffee"),
        ("bica\n  galão", "Lisbon", "Coffee"),
        # an aside of the main text with more words than links is read
        ("Still stuck?", "Lisbon", "Still stuck?"),
        ("Call us on 0161 496 0732.", "Lisbon", "Still stuck?"),
        ("Porto", "Porto", None),
        ("Porto has wine.", "Porto", None),
    ]
    assert "junk" not in doc.text


def test_html_title_falls_back_to_h1_and_article_header_is_kept():
    page = b"<article><header><h1>Only Heading</h1></header><p>Body text.</p></article>"
    doc = parse_bytes(page, "page.htm")
    assert doc.title == "Only Heading"
    assert [(p.text, p.chapter) for p in doc.paragraphs] == [
        ("Only Heading", "Only Heading"),
        ("Body text.", "Only Heading"),
    ]


def test_html_charset_from_meta_bom_or_utf8_fallback():
    latin = '<meta charset="iso-8859-1"><p>café “quoted”</p>'.encode("cp1252")
    assert parse_bytes(latin, "l.html").text == "café “quoted”"
    utf16 = "\ufeff<p>naïve</p>".encode("utf-16-le")
    assert parse_bytes(utf16, "u.html").text == "naïve"
    # no declared charset: UTF-8, else the detected one (a bare Latin byte is Windows-1252)
    assert decode_html(b"<p>bad \xff byte</p>", "b.html").text == "<p>bad ÿ byte</p>"
    unknown = decode_html(b'<meta charset="no-such-codec"><p>\xc3\xa9</p>', "u.html")
    assert unknown.text.endswith("<p>é</p>") and unknown.encoding == "utf-8"


def test_html_deep_nesting_never_recurses():
    # deeper than Python's recursion limit, but within the parser's: read in full
    depth = 1_500
    page = "<p>before</p>" + "<div>" * depth + "deep text" + "</div>" * depth + "<p>after</p>"
    assert parse_bytes(page.encode(), "deep.html").text == "before\n\ndeep text\n\nafter"
    # beyond the parser's depth limit: refused, not truncated and not a crash
    depth = 100_000
    page = "<p>before</p>" + "<div>" * depth + "deep text" + "</div>" * depth
    with pytest.raises(UnreadableDocument, match="nested too deeply"):
        parse_bytes(page.encode(), "deeper.html")


def test_html_without_text_is_unreadable():
    with pytest.raises(UnreadableDocument, match="no extractable text"):
        parse_bytes(b"<html><script>only()</script><nav>menu</nav></html>", "empty.html")


def test_new_suffixes_are_supported_and_old_office_is_not():
    with pytest.raises(UnsupportedDocument, match=r"\.docx, \.htm, \.html.*\.pptx"):
        parse_bytes(b"data", "old.doc")


def test_manual_line_breaks_end_sentences_in_word_and_powerpoint():
    document = docx.Document()
    block = document.add_paragraph("Document reference: HCS-SP-07")
    for line in ("Version: 4.2 (supersedes 4.1, effective 3 March 2023)", "Effective: 1 May 2024"):
        block.add_run().add_break()
        block.add_run(line)
    buffer = io.BytesIO()
    document.save(buffer)
    assert [p.text for p in parse_docx(buffer.getvalue(), "policy", "policy.docx").paragraphs] == [
        "Document reference: HCS-SP-07. Version: 4.2 (supersedes 4.1, effective 3 March"
        " 2023). Effective: 1 May 2024"
    ]
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Opening times"
    box = slide.shapes.add_textbox(Inches(1), Inches(2), Inches(6), Inches(2)).text_frame
    box.text = "Saturday: 09:30-18:00\vSunday: 11:00-16:00,\vMonday: closed"
    buffer = io.BytesIO()
    deck.save(buffer)
    texts = [p.text for p in parse_pptx(buffer.getvalue(), "deck", "deck.pptx").paragraphs]
    assert "Saturday: 09:30-18:00. Sunday: 11:00-16:00, Monday: closed" in texts
