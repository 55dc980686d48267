"""Line-end hyphen marks joined as the document writes the word elsewhere."""

from __future__ import annotations

import pytest

from agent.ingest.hyphens import MARK, join_line_breaks


@pytest.mark.parametrize(
    ("broken", "elsewhere", "joined"),
    [
        ("imple{m}mented", "", "implemented"),  # a syllable break
        ("dual{m}encoder", "a dual-encoder model", "dual-encoder"),  # hyphenated elsewhere
        ("Dual{m}Encoder", "the dual-encoder", "Dual-Encoder"),  # case does not matter
        ("data{m}base", "the database", "database"),  # joined elsewhere
        ("Lucene{m}BM25", "", "Lucene-BM25"),  # a capital opens the second half
        ("COVID{m}19", "", "COVID-19"),  # so does a digit
        ("d{m}dimensional", "", "d-dimensional"),  # no syllable leaves one letter behind
        ("with{m}out", "", "without"),
    ],
)
def test_a_break_is_joined_as_the_document_writes_it(broken, elsewhere, joined):
    page = broken.format(m=MARK)
    assert join_line_breaks([f"{page} and more", elsewhere]) == [f"{joined} and more", elsewhere]


def test_evidence_comes_from_every_page_and_unread_pages_pass_through():
    failed = OSError("page 2 could not be read")
    pages = [f"We train an open{MARK}domain reader.", failed, "Open-domain QA is hard."]
    assert join_line_breaks(pages) == ["We train an open-domain reader.", failed, pages[2]]


def test_a_stray_mark_becomes_a_hyphen():
    assert join_line_breaks([f"end of a line{MARK}"]) == ["end of a line-"]
