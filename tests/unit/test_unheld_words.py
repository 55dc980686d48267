"""An answer adding to the question only words no passage holds is the model's own guess
("…waistcoat was pink" over passages that never say pink); one copying a single word of a
passage is not."""

from __future__ import annotations

import pytest

from agent import prompts
from agent.chat.answering import finish_grounded
from agent.retrieval.unheld_words import words_unheld

RABBIT = (
    "Suddenly a White Rabbit with pink eyes ran close by her. The Rabbit actually took a watch "
    "out of its waistcoat-pocket, and looked at it, and then hurried on."
)
CATERPILLAR = '"Who are you?" said the Caterpillar. This was not an encouraging opening.'


@pytest.mark.parametrize(
    ("answer", "question", "passage", "unheld"),
    [
        # the colour asked for, from the model's own idea of rabbits
        (
            "The White Rabbit's waistcoat was bright green #chk_1a2b3c4d.",
            "What colour is the White Rabbit's waistcoat?",
            RABBIT,
            True,
        ),
        # "pink" is in the passage (said of its eyes): held, whatever it is said of
        (
            "The White Rabbit's waistcoat was pink #chk_1a2b3c4d.",
            "What colour is the White Rabbit's waistcoat?",
            RABBIT,
            False,
        ),
        # "asks" restates "ask"; the quotation's words are all stop words: nothing added
        (
            'The Caterpillar asks Alice, "Who are you?" #chk_1a2b3c4d',
            "What question does the Caterpillar ask Alice?",
            CATERPILLAR,
            False,
        ),
        # one word copied from the passage ("watches" and "watch" share a root)
        (
            "It takes out its watches #chk_1a2b3c4d.",
            "What does the White Rabbit take out of its waistcoat-pocket?",
            RABBIT,
            False,
        ),
        # a verdict in other words; a figure (the figure checks' own)
        (
            "Yes, it is very smart #chk_1a2b3c4d.",
            "Is the White Rabbit's waistcoat neat?",
            RABBIT,
            False,
        ),
        (
            "It cost 12 guineas #chk_1a2b3c4d.",
            "What did the White Rabbit's waistcoat cost?",
            RABBIT,
            False,
        ),
        # a restated question adds nothing: another check's
        (
            "The White Rabbit's waistcoat has a colour #chk_1a2b3c4d.",
            "What colour is the White Rabbit's waistcoat?",
            RABBIT,
            False,
        ),
    ],
)
def test_words_unheld(answer, question, passage, unheld):
    assert words_unheld(answer, question, [passage]) is unheld


def test_a_hybrid_answer_of_unheld_words_is_not_found():
    question = "What colour is the White Rabbit's waistcoat?"
    retrieved = [{"id": "#chk_1a2b3c4d", "chunk_id": "c1", "text": RABBIT, "source": "Alice"}]
    guessed = finish_grounded(
        "The White Rabbit's waistcoat was bright green #chk_1a2b3c4d.",
        retrieved,
        route="hybrid",
        model_used="m",
        tokens_used=5,
        question=question,
    )
    assert guessed.text == prompts.NOT_ANSWERED and not guessed.citations
    held = finish_grounded(
        "The White Rabbit has pink eyes #chk_1a2b3c4d.",
        retrieved,
        route="hybrid",
        model_used="m",
        tokens_used=5,
        question="What colour are the White Rabbit's eyes?",
    )
    assert "pink" in held.text and held.citations


def test_a_word_of_the_cited_chunk_the_focus_left_out_is_held():
    # the model read the focused passage; the citation opens the whole chunk, which says it
    question = "How can LayoutParser be installed?"
    focused = "This paper introduces LayoutParser, an open-source library."
    whole = focused + " Install it with pip install layoutparser."
    retrieved = [
        {
            "id": "#chk_8afac779",
            "chunk_id": "c1",
            "text": whole,
            "context_text": focused,
            "source": "LayoutParser",
        }
    ]
    answer = finish_grounded(
        "LayoutParser can be installed using pip #chk_8afac779.",
        retrieved,
        route="hybrid",
        model_used="m",
        tokens_used=5,
        question=question,
    )
    assert "pip" in answer.text and answer.citations


def test_an_irregular_past_is_its_base():
    # "shrank" is the passage's "shrinking": held, not the model's own word
    passage = "Alice ate a little bit of the cake and began shrinking directly."
    assert not words_unheld("She shrank #chk_1a2b3c4d.", "What did Alice do?", [passage])
    assert words_unheld("She sneezed #chk_1a2b3c4d.", "What did Alice do?", [passage])
