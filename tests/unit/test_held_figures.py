"""An amount asked for and answered with a figure no passage holds gets the "not found"
reply; a figure a passage states, in digits, in words or as money, stays."""

from __future__ import annotations

import pytest

from agent import prompts
from agent.chat.answering import finish_grounded
from agent.retrieval.held_figures import figure_values, figures_unheld

STORY = (
    "Every evening at six, Odile Marchetti climbed the iron ladder. The council had replaced "
    "every other lamp with electric ones in 1931. Bastien liked to say the pole had lit "
    "eleven thousand evenings before she was born. On the eighth night he asked why. Teodor "
    "collected two hundred signatures. Odile lit it for another nineteen years."
)
HARVEST = (
    "Variety: Bramley; Tonnes 2024: 412; Tonnes 2025: 388; Main buyer: Hartwell Ciders. "
    "Variety: Cox; Tonnes 2024: 156; Tonnes 2025: 171; Main buyer: farm shop. The surplus "
    "was £94,000, of which £60,000 is paid to members. Membership grew from 37 to 41 growers."
)
PRICES = "Item | Price (£) | Stock. Widget | 12.50 | 40."


def test_figures_are_read_in_digits_and_in_words():
    assert figure_values("1,931 and 3.5") == {1931.0, 3.5}
    assert figure_values(STORY) >= {6.0, 1931.0, 11_000.0, 8.0, 200.0, 19.0}
    assert figure_values("one hundred and five, forty-two") == {105.0, 42.0}


@pytest.mark.parametrize(
    ("answer", "question", "passage", "unheld"),
    [
        ("Odile was 89 years old when she retired #chk_a.", "How old was Odile?", STORY, True),
        ("She lit it for 19 more years.", "How many years did Odile light it?", STORY, False),
        ("He collected two hundred.", "How many signatures did Teodor collect?", STORY, False),
        ("He collected 200 #chk_a.", "How many signatures did Teodor collect?", STORY, False),
        # a harvest's tonnes are no price
        ("Hartwell paid £171 per tonne.", "What price per tonne did Hartwell pay?", HARVEST, True),
        ("£60,000 is paid to members.", "How much is paid to members?", HARVEST, False),
        ("It grew by 4 growers.", "How many growers joined?", HARVEST, False),  # 41 - 37
        ("A widget costs £12.50.", "What is the price of a widget?", PRICES, False),  # heading
        ("A widget costs £40.", "What is the price of a widget?", PRICES, True),  # the stock
        # not a question for an amount, or no figure to check: other checks' cases
        ("Odile was 89.", "Who lit the lamp?", STORY, False),
        ("Nobody knows.", "How old was Odile?", STORY, False),
    ],
)
def test_an_amount_is_held_only_where_a_passage_states_it(answer, question, passage, unheld):
    assert figures_unheld(answer, question, [passage]) is unheld


SEASONS = "Norwich were promoted in the 2003-04 season. The lamps went electric in 1931."


@pytest.mark.parametrize(
    ("question", "answer", "unheld"),
    [
        ("When did the lamps go electric?", "In 1952 #chk_a.", True),
        ("When did the lamps go electric?", "In 1931 #chk_a.", False),
        ("When did the lamps go electric?", "Long ago, on a cold evening.", False),  # no figure
        ("In what season were Norwich promoted?", "In 2004.", False),  # a span's second year
        ("In what season were Norwich promoted?", "In 1998.", True),
        ("How far did Norwich travel?", "They travelled 212 miles.", True),
        # a clause with "when" asks for no time
        ("What lit up when the lamps went electric?", "1952 candles.", False),
    ],
)
def test_a_time_or_a_measure_asked_for_is_held_like_an_amount(question, answer, unheld):
    assert figures_unheld(answer, question, [SEASONS]) is unheld


CAREER = (
    "Roberts scored 278 goals in 84 games for Norwich. Gillingham signed him for £10,000, and "
    "he earned 500 pounds a week there."
)


@pytest.mark.parametrize(
    ("answer", "unheld"),
    [
        # held figures, but counting goals and games: no salary
        ("His salary at Gillingham was 278 goals in 84 games #chk_07f1e0b0.", True),
        ("He earned 500 pounds a week.", False),
        ("He earned 500 a week.", False),  # a rate
        ("His salary was 500 per week.", False),
        ("Gillingham paid 10,000 for him.", False),  # a function word after it: no count
    ],
)
def test_a_sum_of_money_asked_for_is_no_count_of_something_else(answer, unheld):
    question = "What was Iwan Roberts' salary at Gillingham?"
    assert figures_unheld(answer, question, [CAREER]) is unheld
    # a question counting things is answered by a count
    assert not figures_unheld("278 goals.", "How many goals did Roberts score?", [CAREER])


def test_a_hybrid_answer_with_an_invented_age_is_not_found():
    retrieved = [{"id": "#chk_aca7f632", "chunk_id": "c1", "text": STORY, "source": "Story"}]
    question = "How old was Odile when she retired?"
    invented = finish_grounded(
        "Odile was 89 years old when she retired #chk_aca7f632.",
        retrieved,
        route="hybrid",
        model_used="m",
        tokens_used=1,
        question=question,
    )
    assert invented.text == prompts.NOT_ANSWERED and invented.citations == []
    held = finish_grounded(
        "Teodor collected 200 signatures #chk_aca7f632.",
        retrieved,
        route="hybrid",
        model_used="m",
        tokens_used=1,
        question="How many signatures did Teodor collect?",
    )
    assert "200" in held.text and len(held.citations) == 1


_FINANCES = [
    {
        "id": "#chk_7ba849d8",
        "chunk_id": "c2",
        "text": "Turnover rose to £1.26 million, from £1.11 million in 2024. The surplus after "
        "costs was £94,000, of which £60,000 is paid to members as a dividend and the rest "
        "kept in reserve. The new cold store at Ashby Lane cost £310,000, part-funded by a "
        "£120,000 rural development grant. It holds 900 tonnes and opened in August.",
        "source": "Annual Report 2025, Finances",
    }
]


@pytest.mark.parametrize(
    ("question", "quoted"),
    [
        ("How much dividend is paid to members?", "£60,000 is paid to members as a dividend"),
        ("What was the cooperative's turnover in 2025?", "Turnover rose to £1.26 million"),
    ],
)
def test_an_answer_about_another_amount_becomes_the_sentence_stating_the_one_asked(
    question, quoted
):
    off = (
        "The new cold store at Ashby Lane cost £310,000, part-funded by a £120,000 rural "
        "development grant #chk_7ba849d8. It holds 900 tonnes and opened in August."
    )
    answer = finish_grounded(
        off, _FINANCES, route="hybrid", model_used="m", tokens_used=1, question=question
    )
    assert quoted in answer.text and answer.text.startswith("Your documents say")
    assert [c["id"] for c in answer.citations] == ["#chk_7ba849d8"]
    # a short answer sharing no word with the question is left as it is
    short = finish_grounded(
        "£60,000 #chk_7ba849d8.",
        _FINANCES,
        route="hybrid",
        model_used="m",
        tokens_used=1,
        question="How much dividend is paid to members?",
    )
    assert short.text.startswith("£60,000")
    # an answer whose figure's sentence shares the question's words stays
    kept = "The cold store cost £310,000 #chk_7ba849d8, part-funded by a rural development grant."
    asked = "How much did the cold store cost?"
    same = finish_grounded(
        kept, _FINANCES, route="hybrid", model_used="m", tokens_used=1, question=asked
    )
    assert same.text.startswith("The cold store cost £310,000")
