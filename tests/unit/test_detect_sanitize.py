"""Type detection, PII redaction and the type-specific chunkers (pure unit tests)."""

import uuid

from agent.config import Settings
from agent.ingest.chunking import chunk_faq, chunk_sensitive
from agent.ingest.detect import detect_document_type
from agent.ingest.parse import parse_bytes
from agent.ingest.pipeline import plan_chunks
from agent.ingest.sanitize import pii_density, sanitize_text
from tests.support.paths import ALICE, PRIDE
from tests.support.samples import PII_HEAVY

SETTINGS = Settings()

FAQ = b"""Frequently Asked Questions

Q: How do I reset my password?
A: Open Settings, choose Security, then Reset password. You will get an email.

Q: Can I export my data?
A: Yes. Use Export in the account menu; the archive arrives within an hour.

Q: Is there a mobile app?
A: Not yet. The web page works on phones.
"""


def _paragraphs(data: bytes, name: str):
    return parse_bytes(data, name).paragraphs


def test_detection_follows_the_seed_order():
    assert detect_document_type(_paragraphs(PII_HEAVY.encode(), "c.txt"), SETTINGS) == "SENSITIVE"
    assert detect_document_type(_paragraphs(FAQ, "faq.txt"), SETTINGS) == "FAQ"
    assert detect_document_type(_paragraphs(ALICE.read_bytes(), ALICE.name), SETTINGS) == "BOOK"
    assert detect_document_type(_paragraphs(PRIDE.read_bytes(), PRIDE.name), SETTINGS) == "BOOK"
    note = b"Met the team today. We agreed to ship on Friday. Anna owns the release notes."
    assert detect_document_type(_paragraphs(note, "note.txt"), SETTINGS) == "USER"


def test_a_book_with_some_pii_stays_a_book_but_is_redacted():
    text = ALICE.read_text() + "\n\nWrite to the editor at editor@wonderland.example.\n"
    parsed = parse_bytes(text.encode(), "alice.txt")
    plan = plan_chunks(uuid.uuid4(), parsed, SETTINGS)
    assert plan.doc_type == "BOOK" and plan.sensitivity == "HIGH"
    assert plan.redactions == {"EMAIL": 1}
    texts = [p.text for p in plan.parents] + [d.text for d, _, _ in plan.children]
    assert not any("editor@wonderland" in t for t in texts)
    assert any("[REDACTED_EMAIL]" in t for t in texts)


def test_redaction_covers_every_kind_and_luhn_checks_cards():
    result = sanitize_text(PII_HEAVY)
    assert result.redacted
    for leaked in (
        "john.smith@",
        "555-123-4567",
        "123-45-6789",
        "4111 1111 1111 1111",
        "123456789012",
        "212 555 0199",
    ):
        assert leaked not in result.text, leaked
    assert result.counts["EMAIL"] == 3 and result.counts["SSN"] == 1 and result.counts["CARD"] == 1
    assert result.counts["ID"] == 1 and result.counts["PHONE"] == 3
    # 16 digits that fail the Luhn check are an id, not a card
    assert sanitize_text("ref 1234 5678 9012 3456 ok").text == "ref 1234 5678 9012 3456 ok"
    assert sanitize_text("order 1234567812345678 ok").text == "order [REDACTED_ID] ok"


def test_plain_prose_is_left_alone_and_low():
    text = "In 1865 Lewis Carroll published the book; it sold 2,000 copies in 3 weeks."
    assert sanitize_text(text).text == text
    assert pii_density(text) < SETTINGS.pii_density_medium


def test_sensitive_plan_redacts_before_chunking_and_uses_small_chunks():
    parsed = parse_bytes((PII_HEAVY * 8).encode(), "contacts.txt")
    plan = plan_chunks(uuid.uuid4(), parsed, SETTINGS)
    assert plan.doc_type == "SENSITIVE" and plan.sensitivity == "HIGH"
    assert not plan.parents
    for draft, _, parent in plan.children:
        assert parent is None
        assert len(draft.text) <= SETTINGS.sensitive_chunk_max_chars
        assert "@example.com" not in draft.text and "123-45-6789" not in draft.text


def test_sensitive_chunks_have_no_overlap():
    paragraphs = _paragraphs(
        " ".join(f"Record {i} is stored safely." for i in range(80)).encode(), "r.txt"
    )
    chunks = chunk_sensitive(paragraphs, SETTINGS)
    assert len(chunks) > 3
    joined = " ".join(c.text for c in chunks)
    assert joined == " ".join(p.text for p in paragraphs)  # nothing repeated, nothing lost


def test_faq_chunker_keeps_each_question_with_its_answer():
    chunks = chunk_faq(_paragraphs(FAQ, "faq.txt"), SETTINGS)
    starts = [
        "Frequently Asked Questions",
        "Q: How do I reset my password?",
        "Q: Can I export my data?",
        "Q: Is there a mobile app?",
    ]
    assert len(chunks) == len(starts)
    assert all(c.text.startswith(start) for c, start in zip(chunks, starts, strict=True))
    assert "You will get an email." in chunks[1].text
    inline = b"FAQ\n\nQ: One? A: First answer. Q: Two? A: Second answer."
    texts = [c.text for c in chunk_faq(_paragraphs(inline, "i.txt"), SETTINGS)]
    assert texts == ["FAQ", "Q: One? A: First answer.", "Q: Two? A: Second answer."]


def test_faq_pairs_are_capped():
    long_answer = ("Details. " * 2000).encode()
    chunks = chunk_faq(_paragraphs(b"FAQ\n\nQ: Big?\n\n" + long_answer, "big.txt"), SETTINGS)
    assert max(len(c.text) for c in chunks) <= SETTINGS.faq_max_chars


def test_a_faq_heading_opens_the_next_pair_not_the_answer_before_it():
    md = (
        b"# Help\n\n## Shipping\n\nHow long does delivery take?\n\nThree days.\n\n"
        b"## Returns\n\nCan I return an item?\n\nYes, within 30 days."
    )
    paragraphs = parse_bytes(md, "help.md").paragraphs
    texts = [c.text for c in chunk_faq(paragraphs, SETTINGS)]
    assert texts == [
        "Help\nShipping\nHow long does delivery take?\nThree days.",
        "Returns\nCan I return an item?\nYes, within 30 days.",
    ]


def test_a_books_preface_and_appendix_label_their_paragraphs_in_plain_text():
    book = (
        "PREFACE.\n\nThis edition follows the first printing, said the editor.\n\n"
        "CHAPTER I.\n\nIt was a bright cold day.\n\n"
        "Appendix II\n\nA table of the family's income.\n\n"
        "Note\n\nA line that says only Note is a heading too.\n\n"
        "introduction\n\nA heading set in lower case is only a paragraph.\n"
    )
    chapters = [(p.chapter, p.text) for p in parse_bytes(book.encode(), "book.txt").paragraphs]
    assert chapters[0] == ("PREFACE", "This edition follows the first printing, said the editor.")
    assert chapters[1] == ("CHAPTER I.", "It was a bright cold day.")
    assert chapters[2][0] == "Appendix II" and chapters[3][0] == "Note"
    assert ("Note", "introduction") in chapters  # not a heading: a paragraph of the last part
