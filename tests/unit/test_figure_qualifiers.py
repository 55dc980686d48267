"""A figure asked for, answered with one the passages state for something else (another
club, another final): "not found" (agent.retrieval.figure_qualifiers, through
agent.chat.answering.finish_grounded). No database, no model."""

from __future__ import annotations

from agent.retrieval.figure_qualifiers import figure_for_something_else
from tests.support.guards import refused_then_kept

CAREER = (
    "His goals for Leicester persuaded Wolves to sign Roberts for £1.3m in the summer of 1996. "
    "He spent only one season at Molineux. "
    "In July 1997 Norwich City paid £850,000 for him. "
    "Walker was replaced during the summer by Bruce Rioch. "
    "During pre-season training, Roberts weighed in at 15 stone 3 pounds (97 kg). "
    "The turnaround was due to Rioch."
)
FINALS = (
    "Roberts broke some ribs a few weeks later. "
    "He returned in time for the 1993-94 play-off final, which Leicester won 2-1 against Derby. "
    "In the 1994-95 Premiership, Leicester struggled. "
    "He was not selected for the squad for the play-off final against Crystal Palace. "
    "Leicester won the match."
)
OTHERS = ["Roberts scored twice for Norwich.", "Roberts was born in Bangor."]


def test_a_figure_stated_away_from_the_name_the_answer_left_out():
    weight = "How much did Roberts weigh when he joined Wolves?"
    answer = "Roberts weighed in at 15 stone 3 pounds (97 kg) #chk_9bcbc1b4."
    assert figure_for_something_else(answer, weight, [CAREER, *OTHERS])
    score = "By what score did Leicester beat Crystal Palace in the play-off final?"
    other_final = "Leicester won 2–1 against Derby in the play-off final #chk_0b0bb15b."
    assert figure_for_something_else(other_final, score, [FINALS, *OTHERS])


def test_figures_stated_with_the_names_asked_about_pass():
    passages = [CAREER, *OTHERS]
    # the name the answer left out stands beside the figure
    assert not figure_for_something_else("£850,000.", "How much did Norwich pay Wolves?", passages)
    # the answer keeps every name of the question
    fee = "What fee did Wolves pay Leicester for Roberts?"
    assert not figure_for_something_else("Wolves paid Leicester £1.3m.", fee, passages)
    derby = "By what score did Leicester beat Derby in the play-off final?"
    assert not figure_for_something_else("Leicester won 2-1.", derby, [FINALS, *OTHERS])
    # a name most passages hold (the subject) qualifies nothing; no figure asked for
    assert not figure_for_something_else(
        "He weighed 97 kg.", "How much did Roberts weigh?", [CAREER, *OTHERS]
    )
    assert not figure_for_something_else("Rioch, in 1998.", "Who replaced Walker?", passages)
    # a figure no passage states plainly is left to the other checks
    assert not figure_for_something_else(
        "It was 99 kg.", "How much did he weigh at Wolves?", passages
    )


def test_a_hybrid_answer_with_another_finals_score_is_not_found():
    retrieved = [
        {"id": "#chk_0b0bb15b", "chunk_id": "c1", "text": FINALS, "source": "Iwan Roberts"},
        {"id": "#chk_1a2b3c4d", "chunk_id": "c2", "text": OTHERS[0], "source": "Iwan Roberts"},
    ]
    refused_then_kept(
        "Leicester won 2–1 against Derby in the play-off final #chk_0b0bb15b.",
        retrieved,
        "By what score did Leicester beat Crystal Palace in the play-off final?",
        "By what score did Leicester beat Derby in the play-off final?",
    )
