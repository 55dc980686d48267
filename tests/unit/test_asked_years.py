"""A question about one year answered with what the passages say of another: "not found"
(agent.retrieval.asked_years, through agent.chat.answering.finish_grounded). No database,
no model."""

from __future__ import annotations

from agent.retrieval.asked_years import answer_of_another_year
from tests.support.guards import refused_then_kept

SALE = (
    "Overall, whilst playing for Huddersfield he scored 50 goals in 142 games. "
    "In November 1993 he was signed by Leicester City for £300,000. "
    "Neil Warnock, Huddersfield's manager, needed to sell players and Leicester manager Brian "
    "Little took an interest. "
    "Roberts made his debut for Leicester in a Midlands derby."
)
MOVE = "Roberts moved to Huddersfield Town before the 1990-91 season, for £275,000."
RACES = "The 2022 race was won by the Harbour crew. In 2019 the race was cancelled for storms."
OTHERS = ["Roberts was born in Bangor.", "Roberts played for Wales."]


def test_an_answer_drawn_from_another_years_sentence():
    question = "Who was Huddersfield Town's manager when Roberts joined them in 1990?"
    answer = "Neil Warnock, Huddersfield's manager, needed to sell players #chk_2513cc1f."
    assert answer_of_another_year(answer, question, [SALE, MOVE, *OTHERS])
    rowing = "Which crew won the rowing race in 2019?"
    assert answer_of_another_year("The Harbour crew won #chk_1.", rowing, [RACES, *OTHERS])


def test_answers_about_the_year_asked_pass():
    assert not answer_of_another_year(
        "The Harbour crew won.", "Which crew won the rowing race in 2022?", [RACES, *OTHERS]
    )
    hand = "In 1990 Roberts moved to Huddersfield, where Eoin Hand was manager. In 1993 he left."
    question = "Who was Huddersfield Town's manager when Roberts joined them in 1990?"
    assert not answer_of_another_year("Eoin Hand was the manager.", question, [hand, *OTHERS])
    # the answer gives the asked year; no year asked; a sentence naming no year near
    assert not answer_of_another_year("In 1993, Neil Warnock.", "Who sold him in 1993?", [SALE])
    assert not answer_of_another_year("Neil Warnock.", "Who sold Roberts?", [SALE, *OTHERS])
    debut = "Where did Roberts make his 1993 debut for Leicester?"
    assert not answer_of_another_year(
        "In a Midlands derby.", debut, ["Roberts made his debut for Leicester in a Midlands derby."]
    )


def test_a_hybrid_answer_about_another_year_is_not_found():
    retrieved = [
        {"id": "#chk_2513cc1f", "chunk_id": "c1", "text": SALE, "source": "Iwan Roberts"},
        {"id": "#chk_1a2b3c4d", "chunk_id": "c2", "text": MOVE, "source": "Iwan Roberts"},
    ]
    refused_then_kept(
        "Neil Warnock was Huddersfield's manager #chk_2513cc1f.",
        retrieved,
        "Who was Huddersfield Town's manager when Roberts joined them in 1990?",
        "Who was Huddersfield Town's manager in 1993?",
    )
