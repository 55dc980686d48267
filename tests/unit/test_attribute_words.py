"""The measure a "how <adjective>" question asks about, in the words tables use for it."""

from __future__ import annotations

import pytest

from agent.retrieval.attribute_words import attribute_words, with_attribute_words


@pytest.mark.parametrize(
    ("question", "words"),
    [
        ("How tall does Shepherd's Thimble usually get?", ["height"]),
        ("how HIGH is the summit?", ["height", "altitude", "elevation"]),
        ("How long is the trail, and how far is the hut?", ["length", "duration", "distance"]),
        ("How old was the keeper?", ["age"]),
        ("How heavy is the S4 oven?", ["weight"]),
        ("How many locks does the canal have?", []),  # an amount of anything
        ("How much did the grant amount to?", []),
        ("Who built the long wall?", []),  # no "how": no measure asked for
    ],
)
def test_a_how_adjective_asks_for_its_measure(question, words):
    assert attribute_words(question) == words


def test_the_keyword_side_searches_for_the_measure_beside_the_question():
    assert with_attribute_words("How tall is it?") == "How tall is it? height"
    assert with_attribute_words("Who wrote it?") == "Who wrote it?"
