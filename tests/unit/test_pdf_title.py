"""A PDF's title: metadata when it is one, else the first page's heading in large type."""

from __future__ import annotations

import pytest

from agent.ingest.parse import parse_bytes
from agent.ingest.pdf_title import heading_title, usable_metadata_title
from tests.support.paths import SHARED

DOCS = SHARED / "data" / "docs"
SAMPLES = DOCS / "pdf-samples"
BODY = [("Lorem ipsum dolor sit amet, consetetur sadipscing elitr, sed diam nonumy", 10.0)] * 12


def test_a_title_set_over_two_lines_is_joined():
    lines = [
        ("LayoutParser: A Unified Toolkit for Deep ", 14.3),
        ("Learning Based Document Image Analysis", 14.3),
        ("Zejiang Shen, Ruochen Zhang", 10.0),
        *BODY,
    ]
    assert heading_title(lines) == (
        "LayoutParser: A Unified Toolkit for Deep Learning Based Document Image Analysis"
    )


def test_the_title_need_not_be_the_first_line():
    lines = [("Preprint, under review", 10.0), ("The Crazy Ones", 14.3), *BODY]
    assert heading_title(lines) == "The Crazy Ones"


@pytest.mark.parametrize(
    "first",
    [
        ("1 Your Chapter", 20.7),  # a numbered section heading
        ("2.3 Results and discussion", 16.0),
        ("Contents", 14.3),
        ("Abstract", 14.3),
        ("Header", 43.0),  # one word: a label as often as a title
        ("Lorem ipsum dolor sit amet", 10.0),  # body type
        ("Lorem ipsum dolor sit amet", 11.0),  # barely larger
        ("12 34", 18.0),  # no words
    ],
)
def test_what_is_not_taken_for_a_title(first):
    assert heading_title([first, *BODY]) is None


def test_large_type_below_the_top_of_the_page_is_not_the_title():
    assert heading_title([*BODY, ("A Heading Far Down", 18.0)]) is None


def test_an_empty_page_has_no_title():
    assert heading_title([]) is None
    assert heading_title([("   ", 12.0)]) is None


@pytest.mark.parametrize(
    "value",
    [None, "", "untitled", "Untitled", "Microsoft Word - report3.doc", "draft.pdf", "Document1"],
)
def test_placeholder_metadata_titles_are_not_titles(value):
    assert usable_metadata_title(value) is None


def test_a_real_metadata_title_is_kept():
    assert usable_metadata_title("Geometrie und Topologie") == "Geometrie und Topologie"


@pytest.mark.parametrize(
    ("path", "title"),
    [
        # no metadata title: the heading on the first page
        (
            DOCS / "misc" / "layout-parser-paper-fast.pdf",
            "LayoutParser: A Unified Toolkit for Deep Learning Based Document Image Analysis",
        ),
        (
            DOCS / "misc" / "multi-column-2p.pdf",
            "Dense Passage Retrieval for Open-Domain Question Answering",
        ),
        (SAMPLES / "021-pdfa" / "crazyones-pdfa.pdf", "The Crazy Ones"),
        (SAMPLES / "012-libreoffice-form" / "libreoffice-form.pdf", "Example for a Form"),
        # the XMP metadata's title where the document information has none
        (
            SAMPLES / "020-xmp" / "output_with_metadata_pymupdf.pdf",
            "Sample PDF with XMP Metadata",
        ),
        # the metadata title wins over the page
        (SAMPLES / "009-pdflatex-geotopo" / "GeoTopo-komprimiert.pdf", "Geometrie und Topologie"),
    ],
)
def test_titles_of_real_pdfs(path, title):
    assert parse_bytes(path.read_bytes(), path.name).title == title


@pytest.mark.parametrize(
    "path",
    [
        SAMPLES / "003-pdflatex-image" / "pdflatex-image.pdf",  # opens with "1 Your Chapter"
        SAMPLES / "006-pdflatex-outline" / "pdflatex-outline.pdf",  # opens with "Contents"
        SAMPLES / "001-trivial" / "minimal-document.pdf",  # body text only
    ],
)
def test_pdfs_without_a_title_are_named_from_their_file(path):
    assert parse_bytes(path.read_bytes(), "Quarterly_report-draft.pdf").title == (
        "Quarterly report draft"
    )
