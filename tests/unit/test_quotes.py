"""An answer that is only a citation id becomes the sentence it points at, quoted."""

from __future__ import annotations

import pytest

from agent import prompts
from agent.chat.answering import finish_grounded
from agent.retrieval.quotes import covering_sentence, is_bare_citation, pointed_sentence

_WATCH = (
    "Burning with curiosity, she ran across the field after it. … When the Rabbit actually "
    "took a watch out of its waistcoat-pocket, and looked at it, Alice started to her feet. "
    "It was all very well to say."
)
_PASSAGES = {"#chk_4654e6e4": _WATCH, "#chk_0badc0de": "The Queen shouted at the Knave."}
_QUESTION = "What does the White Rabbit take out of its waistcoat-pocket?"


@pytest.mark.parametrize(
    ("answer", "bare"),
    [
        ("#chk_4654e6e4", True),
        (" [#chk_4654e6e4]. ", True),
        ("#chk_4654e6e4, #chk_0badc0de", True),
        ("A watch #chk_4654e6e4", False),
        ("", False),
        ("nothing cited", False),
    ],
)
def test_is_bare_citation(answer, bare):
    assert is_bare_citation(answer) is bare


def test_the_named_passage_sentence_sharing_most_question_words_is_pointed_at():
    sentence, citation = pointed_sentence("#chk_0badc0de #chk_4654e6e4", _PASSAGES, _QUESTION)
    assert citation == "#chk_4654e6e4"
    assert sentence.startswith("When the Rabbit actually took a watch")
    assert "…" not in sentence and "Burning" not in sentence  # a gap is a sentence break


@pytest.mark.parametrize(
    "answer",
    [
        "The Rabbit took a watch #chk_4654e6e4.",  # says something: not a pointer
        "#chk_0badc0de",  # the named passage shares no question word
        "#chk_12345678",  # an id outside the passages
    ],
)
def test_nothing_is_pointed_at(answer):
    assert pointed_sentence(answer, _PASSAGES, _QUESTION) is None


def _chunk(cid: str, text: str) -> dict:
    return {"id": cid, "chunk_id": cid[5:], "text": text, "source": "Alice"}


def test_a_hybrid_bare_id_answer_shows_the_sentence_it_points_at():
    retrieved = [_chunk(cid, text) for cid, text in _PASSAGES.items()]
    answer = finish_grounded(
        "#chk_4654e6e4",
        retrieved,
        route="hybrid",
        model_used="m",
        tokens_used=1,
        question=_QUESTION,
    )
    assert answer.text.startswith("Your documents say: “When the Rabbit actually took a watch")
    assert answer.text.endswith("” #chk_4654e6e4")
    assert [c["id"] for c in answer.citations] == ["#chk_4654e6e4"]
    elsewhere = finish_grounded(
        "#chk_0badc0de",
        retrieved,
        route="hybrid",
        model_used="m",
        tokens_used=1,
        question=_QUESTION,
    )
    assert elsewhere.text == prompts.NOT_ANSWERED and elsewhere.citations == []


_CLOCK = (
    "Inhibition of the circadian clock depends on repressive complexes of MYC with MIZ1. We "
    "show furthermore that BMAL1 expression levels correlate inversely with MYC levels in 102 "
    "human lymphomas. Our data suggest that MYC acts as a master coordinator."
)
_COUNTED = "We show furthermore that BMAL1 expression levels correlate inversely with MYC levels in 102 human lymphomas."  # noqa: E501


@pytest.mark.parametrize(
    ("question", "quoted"),
    [
        (
            "In how many human lymphomas did BMAL1 expression correlate inversely with MYC?",
            _COUNTED,
        ),
        # a question word no sentence holds; a figure asked and none given; too few words
        ("In how many mouse lymphomas did BMAL1 expression correlate with MYC?", None),
        ("When did MYC form repressive complexes with MIZ1?", None),
        ("What is MYC?", None),
        # a name asked for that the sentence does not give
        ("Who showed that BMAL1 expression correlates inversely with MYC?", None),
    ],
)
def test_a_sentence_holding_every_word_of_the_question(question, quoted):
    found = covering_sentence(question, {"#chk_24df342e": _CLOCK})
    assert (found[0] if found else None) == quoted


def test_a_not_found_reply_over_a_covering_sentence_quotes_it():
    retrieved = [{"id": "#chk_24df342e", "chunk_id": "c1", "text": _CLOCK, "source": "Clock"}]
    common = dict(route="hybrid", model_used="m", tokens_used=1)
    refusal = "Your documents do not contain enough information to answer this question."
    question = "In how many human lymphomas did BMAL1 expression correlate inversely with MYC?"
    got = finish_grounded(refusal, retrieved, question=question, **common)
    assert got.text == f"Your documents say: “{_COUNTED}” #chk_24df342e"
    assert [c["id"] for c in got.citations] == ["#chk_24df342e"]
    other = "In how many mouse lymphomas did BMAL1 expression correlate inversely with MYC?"
    assert finish_grounded(refusal, retrieved, question=other, **common).text != got.text


_LEAVE = (
    "Employees may return on a phased schedule of up to 4 weeks. Keeping-in-touch days, up "
    "to 10 in total, are paid at the normal daily rate."
)


@pytest.mark.parametrize(
    ("question", "quoted"),
    [
        (
            "How many keeping-in-touch days are allowed?",
            "Keeping-in-touch days, up to 10 in total, are paid at the normal daily rate.",
        ),
        ("How many keeping-in-touch days are permitted?", _LEAVE.split(". ")[1]),
        # another word of the question the sentence lacks still keeps it out
        ("How many unpaid keeping-in-touch days are allowed?", None),
    ],
)
def test_an_allowance_asked_for_needs_no_word_of_allowing(question, quoted):
    found = covering_sentence(question, {"#chk_23d8f3b5": _LEAVE})
    assert (found[0] if found else None) == quoted
