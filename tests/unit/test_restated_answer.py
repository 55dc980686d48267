"""A local answer that only restated the question is written on from its own sentence
(", namely …") before it becomes "not found"; refusals, invented names and other paths are
not."""

from __future__ import annotations

import pytest

from agent import prompts
from agent.chat.answering import Answer, finish_grounded
from agent.chat.restated_answer import finished_answer, restated_prefix
from agent.config import Settings

QUESTION = "What does Alice give the animals as prizes after the Caucus-race?"
PASSAGE = (
    "Alice had no idea what to do, and in despair she put her hand in her pocket, and pulled "
    "out a box of comfits, and handed them round as prizes."
)
RETRIEVED = [{"id": "#chk_fdeeb730", "chunk_id": "c1", "text": PASSAGE, "source": "Alice"}]
STATE = {"route": "hybrid", "question": QUESTION}


def _guarded(raw: str, question: str = QUESTION) -> Answer:
    return finish_grounded(
        raw, RETRIEVED, route="hybrid", model_used="m", tokens_used=5, question=question
    )


def test_a_restated_question_is_continued_from_its_own_words():
    raw = "Alice gave the animals as prizes after the Caucus-race #chk_fdeeb730."
    first = _guarded(raw)
    assert first.text == prompts.NOT_ANSWERED and first.said_nothing_asked
    prefix = restated_prefix(Settings(), STATE, raw, first)
    assert prefix == "Alice gave the animals as prizes after the Caucus-race, namely"
    # the continuation goes through the same guards: named and cited, it is the answer
    answer = _finished(first, prefix, " a box of comfits #chk_fdeeb730.", tokens=12)
    assert "comfits" in answer.text and "#chk_fdeeb730" in answer.text
    assert answer.text.startswith(prefix) and answer.tokens_used == 5 + 12
    assert [c["id"] for c in answer.citations] == ["#chk_fdeeb730"]


def test_a_continuation_that_still_says_nothing_keeps_not_found():
    raw = "Alice gave the animals as prizes after the Caucus-race #chk_fdeeb730."
    first = _guarded(raw)
    prefix = restated_prefix(Settings(), STATE, raw, first)
    answer = _finished(first, prefix, " the prizes #chk_fdeeb730.", tokens=7)
    assert answer.text == prompts.NOT_ANSWERED and answer.tokens_used == 12


def test_a_who_question_written_on_with_no_name_keeps_not_found():
    # "Who wrote The Crazy Ones?" written on with the title and a date: nobody named
    question = "Who handed round the comfits as prizes?"
    raw = "The comfits were handed round as prizes #chk_fdeeb730."
    first = _guarded(raw, question)
    assert first.text == prompts.NOT_ANSWERED and first.said_nothing_asked
    prefix = restated_prefix(Settings(), {**STATE, "question": question}, raw, first)
    for nobody in (" the prizes of October 14 #chk_fdeeb730.", " a box #chk_fdeeb730."):
        answer = _finished(first, prefix, nobody, tokens=0, question=question)
        assert answer.text == prompts.NOT_ANSWERED, nobody
    answer = _finished(first, prefix, " Alice #chk_fdeeb730.", tokens=0, question=question)
    assert "namely Alice" in answer.text


def _finished(first, prefix, written, *, tokens, question=QUESTION):
    def guard(raw, tokens):
        answer = _guarded(raw, question)
        answer.tokens_used = tokens
        return answer

    return finished_answer(first, question, prefix, written, tokens, guard)


def test_a_name_no_passage_holds_is_refused_before_and_after():
    # "Marta" is the model's invention: refused for what it names, not for naming nothing
    question = "Who is the Dodo's daughter?"
    raw = "The Dodo's daughter is Marta #chk_fdeeb730."
    first = _guarded(raw, question)
    assert first.text == prompts.NOT_ANSWERED and not first.said_nothing_asked
    assert restated_prefix(Settings(), {**STATE, "question": question}, raw, first) is None


@pytest.mark.parametrize(
    "raw",
    [
        "Your documents do not say what Alice gives the animals as prizes.",  # a refusal
        "Alice gave the animals\nas prizes after the Caucus-race #chk_fdeeb730.",  # two lines
        "What does Alice give the animals as prizes after the Caucus-race?",  # a question
    ],
)
def test_refusals_and_odd_replies_are_not_continued(raw):
    flagged = Answer(
        text=prompts.NOT_ANSWERED, route="hybrid", model_used="m", said_nothing_asked=True
    )
    assert restated_prefix(Settings(), STATE, raw, flagged) is None


def test_only_a_flagged_hybrid_answer_with_the_setting_on_is_continued():
    raw = "Alice gave the animals as prizes after the Caucus-race #chk_fdeeb730."
    first = _guarded(raw)
    assert restated_prefix(Settings(finish_restated=False), STATE, raw, first) is None
    deep = {**STATE, "route": "deep_reasoning"}
    assert restated_prefix(Settings(), deep, raw, first) is None
    web = {**STATE, "web_context": "[#web_1] …"}
    assert restated_prefix(Settings(), web, raw, first) is None
    answered = _guarded("Alice handed round comfits as prizes #chk_fdeeb730.")
    assert not answered.said_nothing_asked
    assert restated_prefix(Settings(), STATE, raw, answered) is None


def test_a_question_asking_for_a_figure_is_not_continued():
    # the model guesses a figure after "namely"; the article holds other numbers
    question = "In which minute did Roberts score against Manchester United in 1986?"
    raw = "Roberts scored against Manchester United in 1986 #chk_fdeeb730."
    flagged = Answer(
        text=prompts.NOT_ANSWERED, route="hybrid", model_used="m", said_nothing_asked=True
    )
    state = {**STATE, "question": question}
    assert restated_prefix(Settings(), state, raw, flagged) is None
    state = {**STATE, "question": "Who did Roberts score against in 1986?"}
    restated = "Roberts did score against them in 1986 #chk_fdeeb730."
    assert restated_prefix(Settings(), state, restated, flagged) is not None


def test_a_question_asking_for_a_name_is_not_continued():
    # "…is Mr, namely Mr. Darcy": pressed for a first name the novel never gives, the model
    # took the nearest name in sight
    question = "What is Mr. Bennet's first name?"
    raw = "Mr. Bennet's first name is Mr #chk_379b407f."
    first = _guarded(raw, question)
    assert first.text == prompts.NOT_ANSWERED and first.said_nothing_asked
    assert restated_prefix(Settings(), {**STATE, "question": question}, raw, first) is None


def test_only_a_restated_question_is_continued():
    # "…is the White Rabbit" names the question's owner: refused, but it is no restatement,
    # and written on it would be a second guess
    question = "Who is the Rabbit's servant that Alice calls for?"
    raw = "The Rabbit's servant is the White Rabbit #chk_fdeeb730."
    flagged = Answer(
        text=prompts.NOT_ANSWERED, route="hybrid", model_used="m", said_nothing_asked=True
    )
    assert restated_prefix(Settings(), {**STATE, "question": question}, raw, flagged) is None
