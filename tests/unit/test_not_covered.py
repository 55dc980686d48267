"""The not-covered reply: the notice, then the model's general answer marked as such."""

from agent.chat.cited_answer import not_covered_answer


def test_a_general_answer_is_marked_as_not_from_the_documents():
    state = {"route": "hybrid"}
    answer = not_covered_answer(" The survey was abandoned for bad weather. ", state, tokens=9)
    assert answer.text == (
        "Your documents don't seem to cover this: the closest passages I found are not about"
        " it. From general knowledge, not from your documents: The survey was abandoned for"
        " bad weather."
    )
    assert answer.model_used == "no_context_response" and answer.citations == []


def test_without_a_general_answer_the_notice_stands_alone():
    answer = not_covered_answer("  ", {"route": "deep_reasoning"}, tokens=0)
    assert answer.text.endswith("are not about it.")
    assert "general knowledge" not in answer.text
