"""Sentences the model copied from the worked examples are dropped (agent.retrieval.echoes):
the examples are a made-up document, so nothing in them answers a reader's question."""

from __future__ import annotations

import pytest

from agent import prompts
from agent.chat.answering import finish_grounded
from agent.retrieval.echoes import EXAMPLE_TERMS, is_example_echo, without_example_echoes

PASSAGES = [
    "Who is Lady Catherine's daughter, whom she intends Darcy to marry?",
    "Miss de Bourgh was pale and sickly; her features, though not plain, were insignificant.",
    "Lady Catherine had long intended her daughter for her nephew, Mr. Darcy.",
]


def test_the_terms_are_the_examples_own():
    examples = " ".join(" ".join(parts) for parts in prompts.GROUNDED_EXAMPLES).lower()
    assert all(term in examples for term in EXAMPLE_TERMS)


@pytest.mark.parametrize(
    "answer",
    [
        # a name from the examples, cited with an example's id or with the passage's
        "Lady Catherine's daughter, whom she intends Darcy to marry, is Marta #chk_b84d0e56.",
        "Lady Catherine's daughter is Marta #chk_1a2b3c4d.",
        # an example's word the passages never use
        "The keeper will inherit Longbourn because the estate is entailed.",
        "Roberts paid for the repairs.",
    ],
)
def test_a_sentence_from_the_examples_goes(answer):
    assert without_example_echoes(answer, PASSAGES) == ""


def test_the_reply_keeps_its_sentences_from_the_passages():
    answer = (
        "Lady Catherine intends Darcy to marry her daughter, Miss de Bourgh #chk_1a2b3c4d. "
        "She is Marta, the keeper's daughter."
    )
    kept = without_example_echoes(answer, PASSAGES)
    assert (
        kept == "Lady Catherine intends Darcy to marry her daughter, Miss de Bourgh #chk_1a2b3c4d."
    )


def test_an_example_word_the_passages_use_is_the_documents_own():
    shown = ["The lighthouse keeper trimmed the lamps every night."]
    assert not is_example_echo("The keeper trims the lamps #chk_1a2b3c4d.", {"keeper", "lamp"})
    answer = "The keeper trims the lamps every night #chk_1a2b3c4d."
    assert without_example_echoes(answer, shown) == answer
    # an ordinary word the examples also use decides nothing, nor does an example's id
    # alone (the citation guard drops it as unknown): the model ends right answers with one
    for answer in ("Huddersfield paid £275,000 #chk_1a2b3c4d.", "Iolo Owen #chk_a7c3e48f."):
        assert without_example_echoes(answer, ["fee"]) == answer


def test_an_answer_copied_from_the_examples_says_the_documents_do_not_answer():
    retrieved = [
        {
            "id": "#chk_1a2b3c4d",
            "chunk_id": "c1",
            "text": PASSAGES[2],
            "source": "Pride and Prejudice",
        }
    ]
    answer = finish_grounded(
        "Lady Catherine's daughter, whom she intends Darcy to marry, is Marta #chk_b84d0e56.",
        retrieved,
        route="hybrid",
        model_used="m",
        tokens_used=1,
        question=PASSAGES[0],
    )
    assert answer.text == prompts.NOT_ANSWERED
    assert answer.citations == []
    assert "Marta" not in answer.text
