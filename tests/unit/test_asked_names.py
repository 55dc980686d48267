"""A question asking for a name, answered without one, gets the plain "not found" reply."""

from __future__ import annotations

import pytest

from agent import prompts
from agent.chat.answering import finish_grounded
from agent.retrieval.asked_names import asks_for_a_name, names_nothing_asked, names_unheld


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("What is the name of Mr. Darcy's estate in Derbyshire?", True),
        ("What was the first name of the second daughter?", True),
        ("What is Darcy's sister's name?", True),
        ("What's the name of the ship?", True),
        ("What is the lizard called?", True),
        ("Which name did the captain give the island?", True),
        ("What name does Alice give the puppy?", True),
        ("What was the ship named?", True),
        ("Who is the eldest Bennet sister?", False),  # may be answered by a description
        ("What does the name Dinah mean?", False),
        ("What happened to the man called Bill after that?", False),
        ("Which club did he join?", False),
        ("Whose name is on the deed?", False),  # "her aunt's" answers it
        ("What named storms hit the coast?", False),
    ],
)
def test_questions_asking_for_a_name(question, asks):
    assert asks_for_a_name(question) is asks


@pytest.mark.parametrize(
    "answer",
    [
        "Mr. Darcy's estate in Derbyshire is a noble one #chk_2a6de782.",
        "The estate is very large and has a fine park.",
        "His estate in Derbyshire #chk_2a6de782",
    ],
)
def test_answers_naming_nothing_asked(answer):
    assert names_nothing_asked(answer, "What is the name of Mr. Darcy's estate in Derbyshire?")


@pytest.mark.parametrize(
    "answer",
    [
        "Pemberley #chk_2a6de782",
        "Mr. Darcy's estate in Derbyshire is Pemberley #chk_2a6de782.",
        "It is called “the great house” by the villagers.",  # a quotation may be a name
        "The estate is Lot 42.",
        "庄园叫彭伯里。",  # no capitals in this script: never taken
    ],
)
def test_answers_that_name_something(answer):
    assert not names_nothing_asked(answer, "What is the name of Mr. Darcy's estate in Derbyshire?")


def test_a_description_answers_a_question_not_asking_for_a_name():
    question = "Who is the eldest Bennet sister?"
    assert not names_nothing_asked("Her elder sister #chk_2a6de782.", question)
    assert not names_nothing_asked("Jane, her elder sister.", question)


def test_a_who_answer_naming_no_one_and_citing_nothing_names_nothing_asked():
    answer = "The Crazy Ones was written by the author of this text."
    assert names_nothing_asked(answer, "Who wrote The Crazy Ones?")
    # cited, or to a question asking where: a description may answer it
    assert not names_nothing_asked(answer + " #chk_b9f460b9", "Who wrote The Crazy Ones?")
    assert not names_nothing_asked("In the author's house.", "Where was it written?")


_RETRIEVED = [
    {
        "id": "#chk_2a6de782",
        "chunk_id": "c1",
        "text": "Pemberley, his estate in Derbyshire, is a noble one.",
        "source": "Book",
    }
]


def test_a_hybrid_answer_without_the_name_asked_is_not_found():
    question = "What is the name of Mr. Darcy's estate in Derbyshire?"
    raw = "Mr. Darcy's estate in Derbyshire is a noble one #chk_2a6de782."
    hybrid = finish_grounded(
        raw, _RETRIEVED, route="hybrid", model_used="m", tokens_used=1, question=question
    )
    assert hybrid.text == prompts.NOT_ANSWERED
    assert hybrid.citations == []
    named = finish_grounded(
        "It is Pemberley #chk_2a6de782.",
        _RETRIEVED,
        route="hybrid",
        model_used="m",
        tokens_used=1,
        question=question,
    )
    assert named.text == "It is Pemberley #chk_2a6de782."


_SISTER_PASSAGES = [
    "Miss Darcy, on her brother’s entrance, exerted herself much more to talk; and Elizabeth "
    "saw that he was anxious for his sister and herself to get acquainted.",
    "Mary, who had neither genius nor taste, had been the only plain one in the family.",
]


@pytest.mark.parametrize(
    ("answer", "question", "unheld"),
    [
        # names in no passage shown: the model's guess
        ("The name of his younger sister is Georgiana #chk_1.", "What is his sister's name?", True),
        ("Georgiana.", "Who is Mr. Darcy's younger sister?", True),
        # a name a passage holds, a description, a refusal: not this check's
        ("His younger sister is Mary #chk_1.", "What is his sister's name?", False),
        ("It is Miss Darcy.", "Who is Mr. Darcy's younger sister?", False),
        ("His sister.", "Who is she?", False),
        ("Nobody.", "Who is she?", False),
        # a place no passage names, and one a passage does
        ("She lives in Bath #chk_1.", "Where does Mr. Darcy's sister live?", True),
        ("She is with Elizabeth in the family.", "Where is Mary?", False),
        ("In the family.", "Where is Mary?", False),  # no name at all
        # a question for neither a name nor a person
        ("Georgiana.", "How old is she?", False),
    ],
)
def test_a_name_no_passage_holds_is_no_answer(answer, question, unheld):
    assert names_unheld(answer, question, _SISTER_PASSAGES) is unheld


def test_a_code_opening_the_answer_is_read_as_the_passages_words():
    cells = ["Doxycycline induces apoptosis in PANC-1 pancreatic cancer cells."]
    question = "Which cancer cells does doxycycline induce apoptosis in?"
    assert not names_unheld("PANC-1 pancreatic cancer cells #chk_1.", question, cells)
    assert names_unheld("HeLa-2 cells #chk_1.", question, cells)


def test_a_name_in_a_passage_label_is_held():
    retrieved = [
        {
            "id": "#chk_0a1b2c3d",
            "chunk_id": "c1",
            "text": "The baby grunted again, and Alice looked very anxiously into its face.",
            "source": "Alice's Adventures in Wonderland, CHAPTER VI. Pig and Pepper",
        }
    ]
    kept = finish_grounded(
        "It is in Pig and Pepper #chk_0a1b2c3d.",
        retrieved,
        route="hybrid",
        model_used="m",
        tokens_used=1,
        question="Which chapter has the Duchess's baby?",
    )
    assert kept.text != prompts.NOT_ANSWERED
    guessed = finish_grounded(
        "The baby is called Percival #chk_0a1b2c3d.",
        retrieved,
        route="hybrid",
        model_used="m",
        tokens_used=1,
        question="Who is the Duchess's baby?",
    )
    assert guessed.text == prompts.NOT_ANSWERED and guessed.citations == []


def test_a_name_only_in_the_part_of_a_chunk_the_model_did_not_read_is_not_held():
    retrieved = [
        {
            "id": "#chk_0a1b2c3d",
            "chunk_id": "c1",
            "text": "Mary played the pianoforte. Far below, the baby grunted again.",
            "context_text": "… Far below, the baby grunted again.",
            "source": "Chapter VI",
        }
    ]
    answer = finish_grounded(
        "The one who plays is Mary #chk_0a1b2c3d.",
        retrieved,
        route="hybrid",
        model_used="m",
        tokens_used=1,
        question="Who plays the pianoforte?",
    )
    assert answer.text == prompts.NOT_ANSWERED


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("namely Mr. Gardiner and his wife #chk_1a2b3c4d.", True),
        ("namely “Pat”", True),  # a quotation gives something
        ("namely The Crazy Ones October 14, 1998 #chk_1a2b3c4d.", False),  # a title, a date
        ("namely the author", False),
        ("namely Mr. Darcy's sister", False),  # the question's own name, with a title
        ("namely Georgiana", True),
    ],
)
def test_a_name_the_question_lacks(text, named):
    from agent.retrieval.asked_names import names_someone_new

    question = "Who wrote The Crazy Ones for Mr. Darcy?"
    assert names_someone_new(text, question) is named
