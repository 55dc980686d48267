"""A question about a year, a version or a code its passages never name gets the plain
"not found" reply."""

from __future__ import annotations

import pytest

from agent import prompts
from agent.chat.answering import finish_grounded
from agent.retrieval.pinned_figures import pin_unheld, pinned_codes, pinned_versions, pinned_years


@pytest.mark.parametrize(
    ("question", "years"),
    [
        ("How many volunteers did the trust train in 2023?", {"2023"}),
        ("What was the 2023 budget?", {"2023"}),
        ("What was 2023's surplus?", {"2023"}),
        ("What did they do in early 2024?", {"2024"}),
        ("What was spent in FY2023?", {"2023"}),
        ("How many visitors came in June 2024?", {"2024"}),
        ("What happened on 3rd March 2021?", {"2021"}),
        ("Who won the 2023-24 title?", {"2023"}),
        ("In 1815, where did the regiment march?", {"1815"}),
        ("What changed before 1900?", set()),  # a bound: another year may answer it
        ("Was the museum founded after 1872?", set()),
        ("How did membership grow between 2019 and 2021?", set()),
        ("How much would printing for 2000 copies cost?", set()),  # a count
        ("What does the Caterpillar smoke?", set()),
    ],
)
def test_only_a_year_the_question_is_about_pins_it(question, years):
    assert pinned_years(question) == years


def test_a_year_counts_as_named_only_as_a_number_of_its_own():
    question = "How many volunteers were trained in 2023?"
    assert pin_unheld(question, ["In 2024 the trust trained 212 volunteers."])
    assert pin_unheld(question, ["Ticket 120231 was issued."])  # inside a longer number
    assert not pin_unheld(question, ["By 12/03/2023 the trust had trained 180."])
    assert not pin_unheld(question, ["Season 2023-24: 180 trained."])
    assert not pin_unheld("What changed after 1900?", ["Nothing changed in 1850."])


_RETRIEVED = [
    {
        "id": "#chk_5b1c0d2e",
        "chunk_id": "c1",
        "text": "In 2024 the trust trained 212 volunteers to survey the river banks.",
        "source": "Fenwick Rivers Trust report, p. 2",
    }
]


def test_a_hybrid_answer_about_a_year_no_passage_names_is_not_found():
    raw = "The trust trained 212 volunteers in 2023 #chk_5b1c0d2e."
    question = "How many volunteers did the trust train in 2023?"
    near_miss = finish_grounded(
        raw, _RETRIEVED, route="hybrid", model_used="m", tokens_used=1, question=question
    )
    assert near_miss.text == prompts.NOT_ANSWERED and near_miss.citations == []
    asked = question.replace("2023", "2024")
    given = "The trust trained 212 volunteers #chk_5b1c0d2e."
    kept = finish_grounded(
        given, _RETRIEVED, route="hybrid", model_used="m", tokens_used=1, question=asked
    )
    assert kept.text == given and len(kept.citations) == 1


def test_a_year_in_the_documents_title_is_named():
    titled = [{**_RETRIEVED[0], "source": "Annual report 2023, p. 2", "text": "We trained 212."}]
    question = "How many volunteers did the 2023 report say were trained?"
    answer = "212 volunteers were trained #chk_5b1c0d2e."
    kept = finish_grounded(
        answer, titled, route="hybrid", model_used="m", tokens_used=1, question=question
    )
    assert kept.text == answer


@pytest.mark.parametrize(
    ("question", "versions"),
    [
        ("When was loamstack 2.8.0 released?", {"2.8.0"}),
        ("Which quarter is Public API v2 scheduled for?", {"2"}),
        ("What changed in version 4.1?", {"4.1"}),
        ("Is the 2.5 mm bit in the kit?", set()),  # a measure, no version
        ("What's new in loamstack 3?", set()),  # a bare number may be written many ways
    ],
)
def test_a_version_counts_when_written_as_one(question, versions):
    assert pinned_versions(question) == versions


def test_a_version_is_named_as_itself_or_spelled_out():
    assert pin_unheld("When was 2.8.0 released?", ["## 2.7.0 (2025-03-02)", "## 12.8.0"])
    assert not pin_unheld("When was 2.8.0 released?", ["## [2.8.0] - 2025-05-01"])
    assert pin_unheld("When is API v2 due?", ["The v1 API stays.", "v21 of the app"])
    assert not pin_unheld("When is API v2 due?", ["Version 2 of the API ships in Q4."])


def test_a_span_of_years_written_short_names_each_year_in_it():
    question = "What did Roberts have removed from his arm in February 2004?"
    season = "The 2003–04 season would be his last. In February of that season he had a scare."
    assert not pin_unheld(question, [season])
    assert not pin_unheld("Who won in 1916?", ["The war of 1914-18 stopped the league."])
    assert pin_unheld(question, ["The 2001–02 season saw the team reach the final."])
    assert pin_unheld(question, ["Signed on 2003-04-15, he left that summer."])  # a date


@pytest.mark.parametrize(
    ("question", "codes"),
    [
        ("How many units did the Hearthline S2 sell in its first year?", {"S2"}),
        ("What was the nitrate reading at site S4u?", {"S4u"}),
        ("Which probe is MP2-0448?", {"MP2-0448"}),
        ("What does the TM-07 meter measure?", {"TM-07"}),
        ("What Top-5 accuracy does DPR reach compared with BM25?", {"BM25"}),
        ("What were sales in Q3 and in H1?", set()),  # often written out
        ("What was spent in FY2023?", set()),  # a year, pinned as one
        ("When is API v2 due?", set()),  # a version, pinned as one
        ("What does the Caterpillar smoke?", set()),
    ],
)
def test_a_code_is_capitals_and_digits(question, codes):
    assert pinned_codes(question) == codes


def test_a_code_is_named_as_a_word_of_its_own_in_any_case():
    question = "How many units did the Hearthline S2 sell in its first year?"
    assert pin_unheld(question, ["The Hearthline S4 sold 71,300 units.", "S2s and S21s"])
    assert not pin_unheld(question, ["Its forerunner, the s2, sold 40,000."])
    assert pin_unheld("What was nitrate at S4u?", ["S4 DO 5.9 mg/L"])
    assert not pin_unheld("What was nitrate at S4?", ["S4 DO 5.9 mg/L", "S4u"])
    assert not pin_unheld("Where is MP2-0448?", ["multiprobe #2 (serial MP2 0448)"])
    assert not pin_unheld("Where is TM07?", ["the turbidity meter TM-07;"])
