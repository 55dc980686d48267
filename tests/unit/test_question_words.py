"""What the documents must know of a question no chunk is near: its names, and when it is
about them."""

from __future__ import annotations

import pytest

from agent.retrieval.held_words import (
    KNOWN_NEAREST,
    KNOWN_WORDS_SHARE,
    QuestionWords,
    names_used,
    question_names,
)


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("What is Ewan's favourite colour?", ["Ewan"]),
        ("Who won the 2018 football World Cup?", ["2018", "Cup", "World"]),
        ("What was the DO reading at S4?", ["DO", "S4"]),  # acronyms and codes, no "S"
        ("Where is MP2-0448 kept?", ["0448", "MP2"]),
        ("What is the name of the volunteer lock-keeper's dog?", []),
    ],
)
def test_a_questions_names_are_its_capitalised_words_figures_and_acronyms(question, names):
    assert question_names(question) == names


def test_a_question_is_about_the_documents_when_they_hold_its_words_and_names():
    assert QuestionWords(KNOWN_WORDS_SHARE, (), ("Ewan",), KNOWN_NEAREST).about_the_documents
    assert not QuestionWords(0.9, ("Peru",), (), 0.5).about_the_documents  # a name they lack
    assert not QuestionWords(KNOWN_WORDS_SHARE - 0.01, (), (), 0.5).about_the_documents
    # their words, but far from every chunk: "the speed of light in a vacuum" and a novel
    assert not QuestionWords(0.58, (), (), KNOWN_NEAREST - 0.03).about_the_documents


def test_a_name_is_used_when_a_text_writes_it_as_the_question_does():
    question = "Who won the 2018 football World Cup?"
    assert names_used(question, ["The cup was passed round the world."]) == ()
    assert names_used(question, ["After the World Cup final of 2018…"]) == ("World Cup",)
    assert names_used("What is Ewan's favourite colour?", ["kept by Ewan Lutterworth"]) == ("Ewan",)
    assert names_used("What is Ewan's favourite colour?", ["Ewanby Hall"]) == ()
