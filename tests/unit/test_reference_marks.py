"""Footnote marks pasted with an encyclopedia's text are not shown to the model."""

from __future__ import annotations

import pytest

from agent.retrieval.context import passage_block
from agent.text import without_reference_marks


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            "He was joint top-scorer in the division.[2][8][23] His efforts helped the club.[24]",
            "He was joint top-scorer in the division. His efforts helped the club.",
        ),
        (
            "He was signed for £300,000.[19][30]\nNeil Warnock",
            "He was signed for £300,000.\nNeil Warnock",
        ),
        ("[46] During that campaign", "During that campaign"),
        (
            'He said "I had to sort it out myself."[45] He did.',
            'He said "I had to sort it out myself." He did.',
        ),
        ("the report,[5] which", "the report, which"),
    ],
)
def test_footnote_marks_are_dropped(text, shown):
    assert without_reference_marks(text) == shown


@pytest.mark.parametrize(
    "text",
    [
        "Set x = a[1] before the loop.",  # an index
        "As shown in [3], dense retrieval wins.",  # a paper's reference, part of the sentence
        "Scores rose [p < 0.05].",
        "Year [2004] in brackets",
    ],
)
def test_other_brackets_stay(text):
    assert without_reference_marks(text) == text


def test_passages_are_shown_without_them():
    block = passage_block("#chk_1a2b3c4d", "norwich city", "He scored 23 goals.[44] Norwich won.")
    assert block == "#chk_1a2b3c4d [norwich city]\nHe scored 23 goals. Norwich won."
