"""An answer that is only a citation id becomes the sentence it points at, quoted."""

from __future__ import annotations

import pytest

from agent import prompts
from agent.chat.answering import finish_grounded
from agent.retrieval.quotes import is_bare_citation, pointed_sentence

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
