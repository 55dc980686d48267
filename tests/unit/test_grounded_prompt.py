"""The grounded answering prompt asks its question before the passages and again after."""

from agent.chat.answering import grounded_messages
from agent.models import ExtractiveChatModel


def test_the_question_comes_before_and_after_the_passages():
    block = "#chk_1a2b3c4d [Harbour Notes]\nThe keeper's dog was a grey terrier called Pepper."
    system, user = grounded_messages("Quire", "What was the dog called?", block)
    text = str(user.content)
    assert text.startswith("Question: What was the dog called?\n")
    assert text.rstrip().endswith("Question: What was the dog called?")
    assert text.index("Question:") < text.index("#chk_1a2b3c4d") < text.rindex("Question:")


def test_the_extractive_answerer_still_finds_question_and_passages():
    block = (
        "#chk_1a2b3c4d [Harbour Notes]\nThe lamp came from Bristol in March. "
        "The keeper's dog was a grey terrier called Pepper."
    )
    messages = grounded_messages("Quire", "What was the keeper's dog called?", block)
    answer = ExtractiveChatModel().invoke(messages).content
    assert "Pepper" in answer and "#chk_1a2b3c4d" in answer
    assert "Bristol" not in answer
