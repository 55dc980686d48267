"""A sum of money, a measure or a head count asked for, answered only with figures that count
something else, gives none; a figure with its currency, unit, scale, rate or people gives
one."""

from __future__ import annotations

import pytest

from agent.retrieval.counted_figures import counts_another_thing, counts_something_else
from tests.support.guards import refused_then_kept


@pytest.mark.parametrize(
    ("question", "answer", "counts_else"),
    [
        # figures of other things: no price, height or salary
        (
            "How much does a celebration cake cost?",
            "It can be ordered seven days ahead #chk_434a23f5. It comes in three sizes.",
            True,
        ),
        ("How tall is the lighthouse?", "Its keepers lived in the two cottages.", True),
        ("What was Roberts' salary at Gillingham?", "It was 278 goals in 84 games.", True),
        ("What is the height of the tower?", "It has 12 bells.", True),
        # the figure asked for, with its currency, scale, rate or unit, or alone
        ("How much does a large sourdough loaf cost?", "It costs £4.20.", False),
        ("What is the budget for the launch?", "Forty-five thousand pounds.", False),
        ("What is the budget for the launch?", "45,000.", False),
        ("What was his salary?", "He earned 500 a week.", False),
        ("How old was Odile?", "She was 89 years old.", False),
        ("How old was Odile?", "She was eighty-nine.", False),
        ("How tall is the lighthouse?", "It is 40 m high.", False),
        ("How far do they deliver?", "Within 5 miles of the market square.", False),
        ("How much did Huddersfield pay?", "They paid 300,000 for him.", False),
        # a head count asked for: people, or a figure alone; a plural noun of other things
        ("What was the attendance at his debut?", "It was 142 games.", True),
        ("How many people live in Kellmouth?", "About 20 boats work from it.", True),
        ("What is the population of Tokyo?", "Tokyo has 23 wards.", True),
        ("What is the population of Tokyo?", "It has 14 million inhabitants.", False),
        ("How many people live in Kellmouth?", "About 300 live in the village.", False),
        ("What was the attendance at his debut?", "The attendance was 21,000.", False),
        ("What was the attendance at his debut?", "A crowd of 21,000 spectators.", False),
        ("What was the attendance at his debut?", "1,200 attended the match.", False),
        ("What was the turnout in 2019?", "Turnout was 4 boroughs.", True),
        # questions a count may answer
        ("How many goals did he score?", "278 goals.", False),
        ("How long is the book?", "300 pages.", False),
        ("How big is the harbour?", "Big enough for 20 boats.", False),
        ("Who lit the lamp?", "The two keepers.", False),
    ],
)
def test_figures_that_count_something_else_give_no_amount(question, answer, counts_else):
    assert counts_something_else(answer, question) is counts_else


def test_a_hybrid_answer_pricing_nothing_is_not_found():
    retrieved = [
        {
            "id": "#chk_434a23f5",
            "chunk_id": "c1",
            "text": "Celebration cakes can be ordered at least seven days ahead. They are made "
            "to order in three sizes and can be collected from the shop.",
            "source": "Hexley Bakehouse, FAQ",
        }
    ]
    # a question the passage answers (the second) keeps its answer
    refused_then_kept(
        "A celebration cake can be ordered at least seven days ahead #chk_434a23f5.",
        retrieved,
        "How much does a celebration cake cost?",
        "How many days ahead can a celebration cake be ordered?",
    )


_PLASMA = (
    "Plasma analysis of fourteen cystic fibrosis (CF) patients revealed high levels of LPS "
    "compared to healthy volunteers and patients who suffer from Chronic Obstructive "
    "Pulmonary Disease."
)


@pytest.mark.parametrize(
    ("question", "answer", "counts_else"),
    [
        # the passage names the volunteers, counts only the patients
        (
            "How many healthy volunteers were included in the study?",
            "The study included fourteen CF patients #chk_4c219265.",
            True,
        ),
        ("How many volunteers took part?", "There were 14 patients.", True),
        # the thing counted, named in the answer; a figure with no noun; the passage's word
        # for a thing it never names as asked; a head count
        ("How many CF patients were analysed?", "Fourteen CF patients were analysed.", False),
        (
            "How many cystic fibrosis patients had their plasma analysed?",
            "Fourteen CF patients had their plasma analysed.",
            False,
        ),
        ("How many healthy volunteers were included?", "14 healthy volunteers.", False),
        ("How many healthy volunteers were included?", "It included fourteen.", False),
        ("How many children did the patients have?", "They had three daughters.", False),
        ("How many people were analysed?", "Fourteen CF patients.", False),
    ],
)
def test_a_count_of_another_thing_the_passage_names(question, answer, counts_else):
    assert counts_another_thing(answer, question, [_PLASMA]) is counts_else


def test_a_hybrid_answer_counting_the_patients_for_the_volunteers_is_not_found():
    retrieved = [{"id": "#chk_4c219265", "chunk_id": "c1", "text": _PLASMA, "source": "CF"}]
    refused_then_kept(
        "The study included fourteen CF patients #chk_4c219265.",
        retrieved,
        "How many healthy volunteers were included in the plasma study?",
        "How many CF patients were included in the plasma study?",
    )
