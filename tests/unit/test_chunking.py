import itertools

import pytest

from agent.config import Settings
from agent.ingest.chunking import _wrap, chunk_document, chunk_flat, chunk_long_form
from agent.ingest.detect import detect_document_type
from agent.ingest.document import Paragraph, ended
from agent.ingest.parse import UnreadableDocument, UnsupportedDocument, parse_bytes
from agent.ingest.sentences import split_sentences
from tests.support.paths import ALICE


def test_sentences_respect_abbreviations_and_initials():
    text = (
        "Dr. Smith met Mr. J. R. Jones of Acme Inc. at noon. They discussed e.g. budgets, "
        "i.e. money. Was it useful? Yes! It was."
    )
    assert split_sentences(text) == [
        "Dr. Smith met Mr. J. R. Jones of Acme Inc. at noon.",
        "They discussed e.g. budgets, i.e. money.",
        "Was it useful?",
        "Yes!",
        "It was.",
    ]


def test_sentences_keep_closing_quotes():
    assert split_sentences("“Oh dear!” said the Rabbit. “I shall be late!” Then off.") == [
        "“Oh dear!” said the Rabbit.",
        "“I shall be late!”",
        "Then off.",
    ]


def test_alice_is_long_form_with_chapters_and_sized_chunks():
    settings = Settings()
    doc = parse_bytes(ALICE.read_bytes(), ALICE.name)
    assert doc.title == "Alice’s Adventures in Wonderland"
    assert doc.author == "Lewis Carroll"
    assert detect_document_type(doc.paragraphs, settings) == "BOOK"
    parents = chunk_long_form(doc.paragraphs, settings)
    chapters = {p.chapter for p in parents}
    assert "CHAPTER I. Down the Rabbit-Hole" in chapters
    assert "CHAPTER XII. Alice’s Evidence" in chapters
    assert all(len(p.text) <= settings.parent_max_chars for p in parents)
    children = [c for p in parents for c in p.children]
    assert len(children) > 150
    # children stay within the child bound and sit verbatim inside their parent
    assert all(
        len(c.text) <= settings.child_max_chars + settings.child_min_chars // 2 for c in children
    )
    assert sum(len(c.text) >= settings.child_min_chars for c in children) / len(children) > 0.8
    for p in parents:
        for c in p.children:
            assert c.text in p.text
            assert c.chapter == p.chapter
    # consecutive children of one parent repeat the previous child's last sentence(s)
    pairs = [(a, b) for p in parents for a, b in itertools.pairwise(p.children)]
    overlapping = sum(split_sentences(b.text)[0] in a.text for a, b in pairs)
    assert overlapping / len(pairs) > 0.7


def test_no_sentence_is_cut():
    settings = Settings()
    doc = parse_bytes(ALICE.read_bytes(), ALICE.name)
    children = [c for p in chunk_long_form(doc.paragraphs, settings) for c in p.children]
    # sentences longer than a child are the only ones cut (at word boundaries)
    limit = settings.child_max_chars
    # a paragraph's last sentence ends with an end mark, one of its own or a full stop
    sentences = [
        w
        for para in doc.paragraphs
        for s in split_sentences(para.text)[:-1] + [ended(split_sentences(para.text)[-1])]
        for w in _wrap(s, limit)
    ]
    for child in children[:120]:
        # every child starts at a sentence start and ends at a sentence end
        assert any(child.text.startswith(s) for s in sentences), child.text[:80]
        assert any(child.text.endswith(s) for s in sentences), child.text[-80:]


def test_short_text_gets_flat_overlapping_chunks():
    settings = Settings()
    text = " ".join(f"Sentence number {i} talks about topic {i % 7}." for i in range(120))
    doc = parse_bytes(text.encode(), "notes.txt")
    assert detect_document_type(doc.paragraphs, settings) == "USER"
    chunks = chunk_flat(doc.paragraphs, settings)
    assert len(chunks) > 3
    assert all(len(c.text) <= settings.user_chunk_max_chars for c in chunks)
    last = split_sentences(chunks[0].text)[-1]
    assert chunks[1].text.startswith(last)


def test_a_title_page_in_capitals_gives_the_title_in_title_case():
    page = b"PRIDE.\n  and\nPREJUDICE\n\nby\nJane Austen\n\nIt is a truth universally acknowledged."
    doc = parse_bytes(page, "book.txt")
    assert (doc.title, doc.author) == ("Pride and Prejudice", "Jane Austen")
    volume = b"THE HISTORY OF TOM JONES,\nA FOUNDLING. VOL. II\n\nby Henry Fielding\n\nText."
    assert parse_bytes(volume, "b.txt").title == "The History of Tom Jones, a Foundling. Vol. II"
    # a title already in mixed case is kept as written
    mixed = b"Alice's Adventures in Wonderland\n\nby Lewis Carroll\n\nDown the rabbit-hole."
    assert parse_bytes(mixed, "a.txt").title == "Alice's Adventures in Wonderland"
    assert parse_bytes(ALICE.read_bytes(), ALICE.name).title == "Alice’s Adventures in Wonderland"


def test_markdown_headings_become_chapters_and_sections():
    md = b"# Guide\n\nIntro text here.\n\n## Setup\n\nInstall it. Then run it.\n\n# Usage\n\nUse it well."
    doc = parse_bytes(md, "guide.md")
    assert doc.title == "Guide"
    located = [(p.chapter, p.section, p.text) for p in doc.paragraphs]
    assert located == [  # a heading is read too, under itself
        ("Guide", None, "Guide"),
        ("Guide", None, "Intro text here."),
        ("Guide", "Setup", "Setup"),
        ("Guide", "Setup", "Install it. Then run it."),
        ("Usage", None, "Usage"),
        ("Usage", None, "Use it well."),
    ]


def test_pdf_keeps_page_numbers():
    pdf = (
        ALICE.parent.parent
        / "docs"
        / "pdf-samples"
        / "004-pdflatex-4-pages"
        / "pdflatex-4-pages.pdf"
    )
    doc = parse_bytes(pdf.read_bytes(), pdf.name)
    assert doc.page_count == 4
    assert {p.page for p in doc.paragraphs} == {1, 2, 3, 4}


def test_bad_input_gets_clear_errors():
    with pytest.raises(UnsupportedDocument, match="unsupported file type"):
        parse_bytes(b"x", "photo.jpg")
    with pytest.raises(UnreadableDocument, match="empty"):
        parse_bytes(b"   \n", "empty.txt")
    with pytest.raises(UnreadableDocument, match="binary data, not text"):
        parse_bytes(bytes(range(256)) * 8, "bad.txt")
    with pytest.raises(UnreadableDocument, match="PDF"):
        parse_bytes(b"%PDF-1.4 this is not really a pdf", "fake.pdf")
    encrypted = (
        ALICE.parent.parent
        / "docs"
        / "pdf-samples"
        / "005-libreoffice-writer-password"
        / "libreoffice-writer-password.pdf"
    )
    with pytest.raises(UnreadableDocument, match="password"):
        parse_bytes(encrypted.read_bytes(), encrypted.name)


def test_a_decks_chunks_keep_to_one_slide_each():
    deck = [
        Paragraph("Halverd Ceramics: Q3 review.", page=1),
        Paragraph("Presented by the finance team.", page=1),
        Paragraph("Region: Southern Ports; Growth: +7%.", page=2),
        Paragraph("Decision: close the Pellham warehouse.", page=3),
    ]
    settings = Settings()
    slides = chunk_document("USER", deck, settings, slides=True)
    assert [(c.page, c.page_end) for c in slides] == [(1, 1), (2, 2), (3, 3)]
    assert slides[0].text == "Halverd Ceramics: Q3 review. Presented by the finance team."
    # other flat documents pack pages together as before
    assert len(chunk_document("USER", deck, settings)) == 1


def test_a_paragraph_without_an_end_mark_ends_where_it_did():
    """List items and headings run together in a chunk still split as sentences there."""
    paragraphs = [
        Paragraph("Ingredients", section="Ingredients"),
        Paragraph("A small bunch of parsley, chopped", section="Ingredients"),
        Paragraph("Heat the oven to 190°C (170°C fan).", section="Method"),
        Paragraph("Agnes said “bake it slowly”", section="Method"),
        Paragraph("Bake for an hour [or until golden]", section="Method"),
    ]
    [chunk] = chunk_flat(paragraphs, Settings())
    assert chunk.text == (
        "Ingredients. A small bunch of parsley, chopped. Heat the oven to 190°C (170°C fan). "
        "Agnes said “bake it slowly”. Bake for an hour [or until golden]"
    )
    assert "Heat the oven to 190°C (170°C fan)." in split_sentences(chunk.text)
