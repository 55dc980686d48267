"""An answer tying a figure or a name to a name of the question that no passage holds:
"not found" (agent.retrieval.unheld_question_names, through
agent.chat.answering.finish_grounded). No database, no model."""

from __future__ import annotations

from agent.retrieval.unheld_question_names import ties_to_an_unheld_name
from tests.support.guards import refused_then_kept

# a Google Docs table as pypdf reads it: one country a column
TABLE = (
    "Indonesia Germany Austria France Vatican Continent Asia Europe Capital Jakarta Berlin "
    "Vienna Paris Vatican City Currency Rupia EUR (€) Population 273.879.750 83,190,556 "
    "8,935,112 67,413,000 453"
)
LODGE = (
    "Sir William Lucas had been formerly in trade in Meryton. He removed with his family to "
    "a house about a mile from Meryton, denominated from that period Lucas Lodge."
)
ESTATE = "Elizabeth heard that Pemberley was a noble place in Derbyshire."


def test_a_figure_given_to_a_country_no_passage_names():
    answer = "The population of Italy is 67,413,000 #chk_a60d86fe."
    assert ties_to_an_unheld_name(answer, "What is the population of Italy?", [TABLE])
    # a name no passage holds, given a name of the passages
    answer = "Sir William's home near Longbourn is called Pemberley #chk_2e1ab661."
    question = "Whose name is used for Sir William's home near Longbourn?"
    assert ties_to_an_unheld_name(answer, question, [LODGE, ESTATE])


def test_answers_about_names_the_passages_hold_pass():
    answer = "The population of France is 67,413,000 #chk_a60d86fe."
    assert not ties_to_an_unheld_name(answer, "What is the population of France?", [TABLE])
    question = "Whose name is used for Sir William's home near Meryton?"
    assert not ties_to_an_unheld_name("It is called Lucas Lodge.", question, [LODGE])


def test_a_refusal_a_title_or_a_typo_is_no_unheld_name():
    # the model's own "not mentioned" adds no name or figure
    no = "Your documents do not mention Italy."
    assert not ties_to_an_unheld_name(no, "What is the population of Italy?", [TABLE])
    # a title the passages leave out ("Mr") is no name of its own
    moved = "Lucas moved to Lucas Lodge, a mile from Meryton."
    assert not ties_to_an_unheld_name(moved, "Where did Mr. Lucas move?", [LODGE])
    # a user's misspelling of a name the passages hold
    assert not ties_to_an_unheld_name(
        "Sir William Lucus moved to Lucas Lodge.", "Where did Sir William Lucus move?", [LODGE]
    )


def test_a_hybrid_answer_about_an_unheld_country_is_not_found():
    retrieved = [{"id": "#chk_a60d86fe", "chunk_id": "c1", "text": TABLE, "source": "Example"}]
    refused_then_kept(
        "The population of Italy is 67,413,000 #chk_a60d86fe.",
        retrieved,
        "What is the population of Italy?",
        "What is the population of the country with Paris as its capital?",
    )


_NANOSCOPY = (
    "We tagged proteins with the fluorescent proteins Citrine or tdEos and expressed them in "
    "Caenorhabditis elegans, fixed the worms and embedded them in plastic."
)


def test_an_answer_repeating_the_questions_closing_noun_no_passage_holds():
    question = "Which fluorescent proteins were used to tag proteins in zebrafish?"
    cited = "Citrine and tdEos were used to tag proteins in zebrafish #chk_d4297a42."
    assert ties_to_an_unheld_name(cited, question, [_NANOSCOPY])
    # the model's own refusal cites nothing; a noun the passage holds ("worms"); an answer
    # that does not repeat it
    assert not ties_to_an_unheld_name(
        "Your documents do not mention zebrafish.", question, [_NANOSCOPY]
    )
    held = "Which fluorescent proteins were used to tag proteins in worms?"
    assert not ties_to_an_unheld_name(
        "Citrine and tdEos were used in the worms #chk_d4297a42.", held, [_NANOSCOPY]
    )
    assert not ties_to_an_unheld_name("Citrine and tdEos #chk_d4297a42.", question, [_NANOSCOPY])
