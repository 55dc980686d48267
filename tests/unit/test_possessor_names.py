"""An answer naming the question's owner as what it owns ("The Rabbit's servant is the
White Rabbit") names nothing asked; another person, title or name is an answer."""

from __future__ import annotations

import pytest

from agent.retrieval.possessor_names import names_the_possessor

SERVANT = "Who is the Rabbit's servant that Alice calls for?"


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        (SERVANT, "The Rabbit's servant is the White Rabbit #chk_1a2b3c4d."),
        (SERVANT, "The Rabbit #chk_1a2b3c4d."),
        (SERVANT, "The Rabbit's servant is the White Rabbit, namely the Rabbit #chk_1a2b3c4d."),
        ("What is the name of Darcy's friend?", "Darcy's friend is Darcy #chk_1a2b3c4d."),
        ("Who is Mr. Darcy's cousin?", "Mr. Darcy's cousin is Mr. Darcy #chk_1a2b3c4d."),
        ("Who guards the Queen's garden?", "The Queen of Hearts guards it #chk_1a2b3c4d."),
    ],
)
def test_the_owner_alone_names_nothing_asked(question, answer):
    assert names_the_possessor(answer, question)


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        (SERVANT, "The Rabbit's servant is Mary Ann #chk_1a2b3c4d."),
        (SERVANT, "Pat, the Rabbit's servant #chk_1a2b3c4d."),
        (SERVANT, "The Rabbit's servant is Pat, not the White Rabbit #chk_1a2b3c4d."),
        (SERVANT, "The Rabbit's servant is the White Rabbit, namely Pat #chk_1a2b3c4d."),
        (SERVANT, "The Rabbit calls its servant “Mary Ann” #chk_1a2b3c4d."),
        ("Who is Mr. Darcy's younger sister?", "Miss Darcy #chk_1a2b3c4d."),
        ("Who is Mr. Bennet's wife?", "Mr. Bennet's wife is Mrs. Bennet #chk_1a2b3c4d."),
        ("Who is Mr. Bennet's second daughter?", "Elizabeth Bennet #chk_1a2b3c4d."),
        ("Who is Colonel Fitzwilliam's cousin?", "Colonel Fitzwilliam's cousin is Miss Darcy."),
        ("Who is Mr. Bingley's sister?", "Miss Bingley's sister Louisa #chk_1a2b3c4d."),
        ("Which room is the Rabbit's?", "The Rabbit's room is room 12 #chk_1a2b3c4d."),
        ("What does the Rabbit's servant carry?", "The White Rabbit #chk_1a2b3c4d."),
        ("Who is the keeper of the lighthouse?", "The keeper is Tom Vell #chk_1a2b3c4d."),
    ],
)
def test_another_name_title_or_question_is_an_answer(question, answer):
    assert not names_the_possessor(answer, question)


def test_a_hybrid_answer_naming_the_owner_is_not_answered():
    from agent import prompts
    from agent.chat.answering import finish_grounded

    text = (
        "“Pat! Pat! Where are you?” And then a voice she had never heard before, “Sure then "
        "I’m here! Digging for apples, yer honour!” The White Rabbit called to his servant."
    )
    retrieved = [{"id": "#chk_54bffae5", "chunk_id": "c1", "text": text, "source": "Alice"}]
    common = dict(route="hybrid", model_used="m", tokens_used=1, question=SERVANT)
    raw = "The Rabbit's servant is the White Rabbit #chk_54bffae5."
    assert finish_grounded(raw, retrieved, **common).text == prompts.NOT_ANSWERED
    raw = "The Rabbit's servant is Pat #chk_54bffae5."
    assert finish_grounded(raw, retrieved, **common).text == raw
