"""A comparison one of whose subjects no passage is on (Path C): the answer says the
documents do not mention it, and drops the model's sentences about it."""

from __future__ import annotations

from agent import prompts
from agent.chat.cited_answer import cited_answer_messages, finish_cited_answer
from agent.config import Settings
from agent.retrieval.types import chunk_payload
from tests.support.chunks import retrieved_chunk


def _state(missing: list[str]) -> dict:
    norwich = retrieved_chunk(
        "Norwich City won promotion in 2004 under Nigel Worthington.", cite_as="#chk_1a2b3c4d"
    )
    return {
        "question": "Compare Norwich City and Real Madrid.",
        "route": "deep_reasoning",
        "search_mode": "deep",
        "relevant": True,
        "context": "#chk_1a2b3c4d\nNorwich City won promotion in 2004 under Nigel Worthington.",
        "retrieved": [chunk_payload(norwich)],
        "conflicts": [],
        "missing_subjects": missing,
    }


RAW = (
    "Norwich City won promotion in 2004 #chk_1a2b3c4d. "
    "Real Madrid is a far bigger club #chk_1a2b3c4d."
)


def test_the_answer_says_which_subject_the_documents_lack_and_drops_what_it_invented():
    answer = finish_cited_answer(RAW, _state(["Real Madrid"]), model="x", tokens=0)
    lead = prompts.MISSING_SUBJECTS.format(names="Real Madrid")
    assert answer.text.startswith(lead + "\n\n")
    assert "Norwich City won promotion in 2004 #chk_1a2b3c4d." in answer.text
    assert "bigger club" not in answer.text
    assert [c["id"] for c in answer.citations] == ["#chk_1a2b3c4d"]


def test_with_every_subject_held_the_answer_is_the_models():
    answer = finish_cited_answer(RAW, _state([]), model="x", tokens=0)
    assert not answer.text.startswith("Your documents don't mention")
    assert "bigger club" in answer.text  # the question names Real Madrid: not invented


def test_the_model_is_asked_the_question_as_written():
    # telling the 1.5B model what is missing made it write "CONFLICT DETECTED: Real Madrid:
    # not mentioned" and nothing on Norwich: the answer's lead says it instead
    messages = cited_answer_messages(Settings(), _state(["Real Madrid"]))
    assert messages[-1].content.rstrip().endswith("Question: Compare Norwich City and Real Madrid.")
