"""A question asking for an amount, answered without one, gets the plain "not found" reply."""

from __future__ import annotations

import pytest

from agent import prompts
from agent.chat.answering import finish_grounded
from agent.retrieval.asked_amounts import (
    asks_for_a_figure,
    asks_for_an_amount,
    gives_no_amount_asked,
)


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("How tall does the Caterpillar say is a very good height?", True),
        ("How many daughters do Mr. and Mrs. Bennet have?", True),
        ("How much a year is Mr. Darcy said to have?", True),
        ("How much did Huddersfield Town pay Watford for Roberts?", True),
        ("In what year was the paper published?", True),
        ("What fee did Wolves pay Leicester for Roberts?", True),
        ("How much does Jane love Bingley?", False),  # "very much" answers it
        ("How long did Alice fall?", False),  # "a long time" may answer it
        ("How long does the Beacon Traverse take?", True),  # a duration
        ("What is the population of Lisbon?", True),
        ("What was the attendance at his debut?", True),
        ("What was the crowd's reaction?", False),
        ("What price did the cider maker pay?", True),
        ("What was Iwan Roberts' salary at Gillingham?", True),  # a name, no "the"
        ("What does the Caterpillar smoke?", False),
        # a named value, a rate or a ratio; not the worth of a thing, nor principles
        ("What was the cutoff value of RDW in the study?", True),
        ("What was the five-year survival rate?", True),
        ("What is the hazard ratio for overall survival?", True),
        ("What is the value of friendship?", False),
        ("What are the core values of the firm?", False),
    ],
)
def test_only_plain_questions_for_a_figure_ask_for_an_amount(question, asks):
    assert asks_for_an_amount(question) is asks


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("When did Odile retire?", True),
        ("And when did she leave the lighthouse?", True),
        ("In which season were Norwich promoted?", True),
        ("On what date was the treaty signed?", True),
        ("How long is the Beacon Traverse?", True),
        ("How far is the summit from the car park?", True),
        ("How many daughters do the Bennets have?", True),  # an amount too
        ("By what score did Leicester beat Derby?", True),
        ("What was the score in the final?", True),
        ("Who kept the score?", False),
        ("What is the Caterpillar smoking when Alice meets it?", False),  # a clause
        ("Who lit the lamp?", False),
    ],
)
def test_a_time_or_a_measure_asks_for_a_figure(question, asks):
    assert asks_for_a_figure(question) is asks


@pytest.mark.parametrize(
    ("answer", "none_given"),
    [
        ("The Caterpillar says it is a very good height indeed! #chk_2a6de782", True),
        ("Mr. and Mrs. Bennet have daughters.", True),
        ("Three inches #chk_2a6de782.", False),
        ("They have five daughters.", False),
        ("Ten thousand a year.", False),
        ("Huddersfield paid £275,000.", False),
        ("It is 1.91 m.", False),
        ("Alice is seven and a half years old.", False),
        ("They had no children.", False),
        ("三寸です。", False),  # a caseless script: its number words are not read
    ],
)
def test_an_answer_gives_an_amount_with_a_number_a_number_word_or_a_quantifier(answer, none_given):
    question = "How many inches does the Caterpillar say is a very good height?"
    assert gives_no_amount_asked(answer, question) is none_given


@pytest.mark.parametrize(
    ("answer", "none_given"),
    [
        ("The Beacon Traverse takes 14 km. #chk_4fa26769", True),  # a distance, no time
        ("It is a strenuous route over Beacon Pike.", True),
        ("Allow one hour #chk_4fa26769.", False),
        ("About 5 h.", False),
        ("It takes most of the afternoon.", False),
    ],
)
def test_a_question_how_long_something_takes_asks_for_a_stretch_of_time(answer, none_given):
    assert gives_no_amount_asked(answer, "How long does the Beacon Traverse take?") is none_given
    # how long a thing is may be answered in any measure
    assert not gives_no_amount_asked(answer, "How long is the Beacon Traverse?")


def test_a_number_the_question_gives_is_no_answer():
    question = "How many of the 3 sisters lived in the well?"
    assert gives_no_amount_asked("The 3 sisters lived in the well.", question)
    assert not gives_no_amount_asked("All 3 sisters lived there.", question)


_RETRIEVED = [
    {
        "id": "#chk_2a6de782",
        "chunk_id": "c1",
        "text": "“Three inches is such a wretched height to be.” “It is a very good height "
        "indeed!” said the Caterpillar angrily.",
        "source": "Alice, Chapter V",
    }
]


def test_a_hybrid_answer_without_the_amount_asked_is_not_found():
    question = "How tall does the Caterpillar say is a very good height?"
    raw = "The Caterpillar says it is a very good height indeed! #chk_2a6de782"
    hybrid = finish_grounded(
        raw, _RETRIEVED, route="hybrid", model_used="m", tokens_used=1, question=question
    )
    assert hybrid.text == prompts.NOT_ANSWERED and hybrid.citations == []
    given = "Three inches is a very good height #chk_2a6de782."
    kept = finish_grounded(
        given, _RETRIEVED, route="hybrid", model_used="m", tokens_used=1, question=question
    )
    assert kept.text == given and len(kept.citations) == 1


_TREASURER = [
    {
        "id": "#chk_0c0fb15b",
        "chunk_id": "c2",
        "text": "Item: Quiz night; Income: £642; Spend: £58. The Small Room stays at £9 an hour.",
        "source": "Village hall minutes, Treasurer's report",
    }
]


def test_an_uncited_hybrid_answer_of_invented_figures_is_not_found():
    question = "How much income did the quiz night bring in?"
    sums = "The quiz night brought in £9 an hour * 12 hours = £108."
    invented = finish_grounded(
        sums, _TREASURER, route="hybrid", model_used="m", tokens_used=1, question=question
    )
    assert invented.text == prompts.NOT_ANSWERED and invented.citations == []
    # a figure the passage holds stays (and is cited where it stands)
    given = finish_grounded(
        "The quiz night brought in £642.",
        _TREASURER,
        route="hybrid",
        model_used="m",
        tokens_used=1,
        question=question,
    )
    assert "£642" in given.text and len(given.citations) == 1
    # deep reasoning discusses its passages: its answer is left to the sentence checks
    deep = finish_grounded(
        sums, _TREASURER, route="deep_reasoning", model_used="m", tokens_used=1, question=question
    )
    assert deep.text != prompts.NOT_ANSWERED


@pytest.mark.parametrize(
    ("question", "answer", "gives_none"),
    [
        (
            "In which minute did Roberts score against Manchester United in 1986?",
            "Roberts scored his first goal on 16 September 1986 at Vicarage Road #chk_fc02eec6.",
            True,
        ),
        (
            "In which minute did Roberts score against Manchester United in 1986?",
            "Roberts scored in the 67th minute #chk_fc02eec6.",
            False,
        ),
        ("In what minute was the goal?", "The goal came in the 67' #chk_fc02eec6.", False),
        ("In what minute was the goal?", "67th #chk_fc02eec6.", False),
        ("On which page is the recipe for scones?", "The recipe is on page 12 #chk_1.", False),
        ("On which page is the recipe for scones?", "The recipe is in the book #chk_1.", True),
        ("Which floor is the library on?", "The library is on the ground floor #chk_1.", False),
        ("Which lap did the crash happen on?", "The crash happened at the hairpin #chk_1.", True),
        # a chapter is named by its title, and "which minutes" of a meeting are no unit
        ("Which chapter tells of the Caterpillar?", "Advice from a Caterpillar #chk_1.", False),
        ("Which meeting's minutes record the vote?", "The March meeting's #chk_1.", False),
    ],
)
def test_a_counted_unit_asked_for_is_named(question, answer, gives_none):
    assert gives_no_amount_asked(answer, question) is gives_none


@pytest.mark.parametrize(
    ("answer", "none_given"),
    [
        ("The Hatter shook his head mournfully #chk_24e54378.", True),
        ("It is always six o'clock now #chk_24e54378.", False),
        ("At tea-time.", False),
        ("It is always 6 #chk_24e54378.", False),
        ("In the evening, after the concert.", False),
        ("At six, as always.", False),
        ("Alice noticed that one of the trees had a door #chk_24e54378.", True),
        ("Two of the guests were asleep #chk_24e54378.", False),  # a number word: left be
    ],
)
def test_a_question_asking_what_time_wants_a_time_of_day(answer, none_given):
    assert gives_no_amount_asked(answer, "What time is it always at the Mad Tea-Party?") is (
        none_given
    )
