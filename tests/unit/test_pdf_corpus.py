"""PDF ingestion on the sample corpus: every file parses or fails with UnreadableDocument.

Pure unit tests on ``parse_bytes`` (no database). Expected page counts and encryption come
from ``pdf-samples/files.json``.
"""

from __future__ import annotations

import functools
import io
import json
import random
from concurrent.futures import ThreadPoolExecutor

import pypdfium2
import pytest
from pypdf import PageObject, PdfReader, PdfWriter

from agent.ingest import pdf
from agent.ingest.parse import ParsedDocument, UnreadableDocument, parse_bytes
from agent.ingest.pdf import split_paragraphs
from tests.support.paths import SHARED

DOCS = SHARED / "data" / "docs"
SAMPLES = DOCS / "pdf-samples"
LISTED = {e["path"]: e for e in json.loads((SAMPLES / "files.json").read_text())["data"]}
PDFS = sorted(SAMPLES.rglob("*.pdf")) + sorted((DOCS / "misc").glob("*.pdf"))

FOUR_PAGES = SAMPLES / "004-pdflatex-4-pages" / "pdflatex-4-pages.pdf"
OUTLINE = SAMPLES / "006-pdflatex-outline" / "pdflatex-outline.pdf"
MISTITLED = SAMPLES / "014-outlines" / "mistitled_outlines_example.pdf"
TEXTBOOK = SAMPLES / "009-pdflatex-geotopo" / "GeoTopo-komprimiert.pdf"
TWO_COLUMNS = DOCS / "misc" / "multi-column-2p.pdf"
TRIVIAL = SAMPLES / "001-trivial" / "minimal-document.pdf"

# Non-encrypted samples that cannot give text, and why: scans without a text layer, and a
# file whose page tree lies in a megabyte of zeroed bytes.
NO_TEXT = "no extractable text"
KNOWN_UNREADABLE = {
    "007-imagemagick-images/imagemagick-ASCII85Decode.pdf": NO_TEXT,
    "007-imagemagick-images/imagemagick-CCITTFaxDecode.pdf": NO_TEXT,
    "007-imagemagick-images/imagemagick-lzw.pdf": NO_TEXT,
    "019-grayscale-image/grayscale-image.pdf": NO_TEXT,
    "023-cmyk-image/cmyk-image.pdf": NO_TEXT,
    "017-unreadable-meta-data/unreadablemetadata.pdf": "could not be read",
}


def _name(path) -> str:
    return path.relative_to(DOCS).as_posix()


@functools.cache
def _parse(path) -> ParsedDocument:
    return parse_bytes(path.read_bytes(), path.name)


def _needs_password(path) -> bool:
    """Encrypted with a user password, i.e. the empty password does not open it."""
    reader = PdfReader(path)
    return reader.is_encrypted and not reader.decrypt("")


def _encrypted_copy(user_password: str) -> bytes:
    writer = PdfWriter(clone_from=TRIVIAL)
    writer.encrypt(user_password=user_password, owner_password="owner", algorithm="AES-256")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def test_corpus_is_there():
    assert len(PDFS) >= 30
    assert any(entry["encrypted"] for entry in LISTED.values())


@pytest.mark.parametrize("path", PDFS, ids=_name)
def test_every_pdf_parses_or_is_clearly_unreadable(path):
    key = path.relative_to(SAMPLES).as_posix() if SAMPLES in path.parents else None
    listed = LISTED.get(key)
    locked = bool(listed and listed["encrypted"]) and _needs_password(path)
    expected_failure = KNOWN_UNREADABLE.get(key)
    if locked or expected_failure:
        with pytest.raises(UnreadableDocument) as failure:
            _parse(path)
        assert str(failure.value).strip()
        assert ("password" if locked else expected_failure) in str(failure.value)
        return
    doc = _parse(path)
    assert doc.file_type == "pdf"
    assert doc.text.strip()
    assert doc.metadata["encrypted"] == bool(listed and listed["encrypted"])
    if listed:
        assert doc.page_count == listed["pages"]
    assert all(p.page and 1 <= p.page <= doc.page_count for p in doc.paragraphs)
    assert all("\n" not in p.text and "\x00" not in p.text for p in doc.paragraphs)


def test_owner_password_only_parses_and_user_password_fails():
    doc = parse_bytes(_encrypted_copy(""), "owner-only.pdf")
    assert doc.metadata == {"encrypted": True, "outline": False}
    assert doc.page_count == 1 and doc.text.strip()
    with pytest.raises(UnreadableDocument, match="encrypted with a password"):
        parse_bytes(_encrypted_copy("secret"), "locked.pdf")


def test_damaged_bytes_give_unreadable_document():
    data = FOUR_PAGES.read_bytes()
    rng = random.Random(7)
    variants = [b"%PDF-1.7\n" + bytes(rng.randrange(256) for _ in range(2000))]
    variants += [data[: len(data) * k // 10] for k in range(1, 10)]
    for _ in range(20):
        damaged = bytearray(data)
        for _ in range(20):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        variants.append(bytes(damaged))
    for variant in variants:
        try:
            parse_bytes(variant, "damaged.pdf")
        except UnreadableDocument as exc:
            assert str(exc).strip()


def test_outline_gives_chapters_by_page():
    doc = _parse(OUTLINE)
    assert doc.metadata == {"encrypted": False, "outline": True}
    by_page = {p.page: (p.chapter, p.section) for p in doc.paragraphs}
    # entries: Foo Bar Baz Foo on page 2, Bar Baz Foo on page 3, Bar Baz on page 4
    assert by_page == {1: (None, None), 2: ("Foo", None), 3: ("Foo", None), 4: ("Baz", None)}


def test_outline_second_level_gives_sections():
    doc = _parse(MISTITLED)
    by_page = {p.page: (p.chapter, p.section) for p in doc.paragraphs}
    # out-of-order outline: the last entry starting on or before a page wins
    assert by_page == {
        1: (None, None),
        2: ("Nineteenth", "Twenty-second"),
        3: ("Nineteenth", "Twenty-fifth"),
        4: ("Nineteenth", "Twenty-seventh"),
    }


def test_textbook_outline_chapters_and_sections():
    doc = _parse(TEXTBOOK)
    assert doc.page_count == 117 and doc.metadata["outline"]
    first = {p.page: (p.chapter, p.section) for p in doc.paragraphs}
    assert first[6] == ("1 Topologische Grundbegriffe", "1.1 Topologische Räume")
    assert first[10] == ("1 Topologische Grundbegriffe", "1.2 Metrische Räume")
    assert first[28] == (
        "2 Mannigfaltigkeiten und Simplizialkomplexe",
        "2.1 Topologische Mannigfaltigkeiten",
    )
    assert first[103] == ("Lösungen der Übungsaufgaben", None)
    assert {p.chapter for p in doc.paragraphs if p.page < 6} == {None}


def test_broken_outline_falls_back_to_no_chapters(monkeypatch):
    def broken(self):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(PdfReader, "outline", property(broken))
    doc = parse_bytes(OUTLINE.read_bytes(), OUTLINE.name)
    assert doc.page_count == 4
    assert doc.metadata["outline"] is False
    assert {p.chapter for p in doc.paragraphs} == {None}


def _break(monkeypatch, pages):
    """Make both PDFium and pypdf fail on the 0-based ``pages``."""
    pdfium_text, pypdf_text = pdf._pdfium_page_text, PageObject.extract_text

    def pdfium_fails(document, index):
        if index in pages:
            raise RecursionError("maximum recursion depth exceeded")
        return pdfium_text(document, index)

    def pypdf_fails(self, *args, **kwargs):
        if self.page_number in pages:
            raise RecursionError("maximum recursion depth exceeded")
        return pypdf_text(self, *args, **kwargs)

    monkeypatch.setattr(pdf, "_pdfium_page_text", pdfium_fails)
    monkeypatch.setattr(PageObject, "extract_text", pypdf_fails)


def test_pathological_page_is_skipped(monkeypatch):
    _break(monkeypatch, {1})  # the second page
    doc = parse_bytes(FOUR_PAGES.read_bytes(), FOUR_PAGES.name)
    assert doc.page_count == 4
    assert {p.page for p in doc.paragraphs} == {1, 3, 4}


def test_no_readable_page_is_unreadable(monkeypatch):
    _break(monkeypatch, {0, 1, 2, 3})
    with pytest.raises(UnreadableDocument, match="recursion"):
        parse_bytes(FOUR_PAGES.read_bytes(), FOUR_PAGES.name)


def test_pypdf_reads_a_page_pdfium_fails_on(monkeypatch):
    pdfium_text = pdf._pdfium_page_text

    def pdfium_fails(document, index):
        if index == 1:
            raise pypdfium2.PdfiumError("text page could not be loaded")
        return pdfium_text(document, index)

    monkeypatch.setattr(pdf, "_pdfium_page_text", pdfium_fails)
    doc = parse_bytes(FOUR_PAGES.read_bytes(), FOUR_PAGES.name)
    assert {p.page for p in doc.paragraphs} == {1, 2, 3, 4}


def test_pypdf_extracts_what_pdfium_cannot_load(monkeypatch):
    def refuse(*args, **kwargs):
        raise pypdfium2.PdfiumError("Failed to load document (PDFium: Data format error).")

    monkeypatch.setattr(pypdfium2, "PdfDocument", refuse)
    doc = parse_bytes(FOUR_PAGES.read_bytes(), FOUR_PAGES.name)
    assert doc.page_count == 4 and {p.page for p in doc.paragraphs} == {1, 2, 3, 4}


def test_max_pages_refuses_before_extracting(monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("text extracted despite the page limit")

    monkeypatch.setattr(PageObject, "extract_text", never)
    monkeypatch.setattr(pdf, "_pdfium_page_text", never)
    with pytest.raises(UnreadableDocument, match="4 pages, more than the limit of 3"):
        pdf.parse_pdf(FOUR_PAGES.read_bytes(), "four", max_pages=3)


def test_line_end_hyphens_are_joined():
    doc = parse_bytes(FOUR_PAGES.read_bytes(), FOUR_PAGES.name)
    assert "\ufffe" not in doc.text


def test_a_compound_broken_at_a_line_end_keeps_its_hyphen():
    """The DPR paper breaks "dual-encoder" and "open-domain" at line ends and writes them
    hyphenated elsewhere; its syllable breaks ("imple-mented") are joined."""
    text = _parse(TWO_COLUMNS).text
    assert "dual-encoder framework" in text and "dualencoder" not in text
    assert "Lucene-BM25" in text and "fine-tuned" in text
    assert "implemented" in text and "imple-mented" not in text


def test_parallel_parses_agree():
    """PDFium is not thread-safe: parsing runs in worker threads, so pdf.py serialises it."""
    data = TEXTBOOK.read_bytes()
    expected = [p.text for p in pdf.parse_pdf(data, "t").paragraphs]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: pdf.parse_pdf(data, "t"), range(8)))
    assert all([p.text for p in doc.paragraphs] == expected for doc in results)


def test_module_limits_are_the_defaults(monkeypatch):
    assert pdf.MAX_PAGES == 2000 and pdf.MAX_CHARS == 20_000_000
    monkeypatch.setattr(pdf, "MAX_PAGES", 2)
    with pytest.raises(UnreadableDocument, match="limit of 2"):
        parse_bytes(FOUR_PAGES.read_bytes(), FOUR_PAGES.name)
    assert pdf.parse_pdf(FOUR_PAGES.read_bytes(), "four", max_pages=4).page_count == 4


def test_max_chars_stops_extraction():
    with pytest.raises(UnreadableDocument, match="more than 5,000 characters"):
        pdf.parse_pdf(FOUR_PAGES.read_bytes(), "four", max_chars=5_000)


def test_multi_page_pdf_is_split_into_paragraphs():
    doc = _parse(TWO_COLUMNS)
    assert doc.page_count == 2
    assert len(doc.paragraphs) >= 8
    assert {p.page for p in doc.paragraphs} == {1, 2}
    starts = [p.text[:50] for p in doc.paragraphs]
    assert "Retrieval in open-domain QA is usually implemented" in starts
    # hard-wrapped, hyphenated lines are joined
    assert "Retrieval in open-domain QA is usually implemented using TF-IDF" in doc.text
    assert max(len(p.text) for p in doc.paragraphs) < 2500


def test_textbook_has_many_paragraphs_per_page():
    doc = _parse(TEXTBOOK)
    assert len(doc.paragraphs) > 3 * doc.page_count


def test_split_on_blank_lines_when_present():
    text = "First para-\ngraph goes\non here.\n\nSecond one.\nStill second."
    assert split_paragraphs(text) == [
        "First paragraph goes on here.",
        "Second one. Still second.",
    ]


def test_split_on_sentence_ends_without_blank_lines():
    text = (
        "A first paragraph that is hard\nwrapped over lines.\nA second one asks?\n"
        "it goes on in lower case. Here\nand ends with a list:\n• one item\n• another.\n"
        "2) numbered item.\n3.5 is not a bullet\nand no sentence ends here"
    )
    assert split_paragraphs(text) == [
        "A first paragraph that is hard wrapped over lines.",
        "A second one asks? it goes on in lower case. Here and ends with a list:",
        "• one item • another.",
        "2) numbered item. 3.5 is not a bullet and no sentence ends here",
    ]


def test_split_handles_empty_and_closing_quotes():
    assert split_paragraphs("   \n \n") == []
    assert split_paragraphs("He said “stop.”\nThen left.") == ["He said “stop.”", "Then left."]
