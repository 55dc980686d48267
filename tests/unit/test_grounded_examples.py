"""A grounded answer's prompt opens with worked examples (agent.prompts.GROUNDED_EXAMPLES):
the 1.5B model then names the thing asked for, cites at the sentence's end, and says plainly
when a passage lacks the answer. They sit in the prefix the model process warms at start,
so a question reads only its own passages."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from agent import prompts
from agent.chat.answering import grounded_messages
from agent.chat.cited_answer import cited_answer_messages
from agent.config import Settings
from agent.model_server.warm import warm_messages
from agent.retrieval.citations import cited_ids
from bench.eval_answers_scoring import is_refusal

ROLES = {SystemMessage: "system", HumanMessage: "user", AIMessage: "assistant"}


def _state(route: str) -> dict:
    return {
        "route": route,
        "question": "Who is Dinah?",
        "relevant": True,
        "context": "#chk_11111111 [Alice]\nDinah's our cat.",
        "retrieved": [],
    }


def test_a_grounded_prompt_opens_with_the_examples_then_asks_its_question():
    messages = grounded_messages("Quire", "Who is Dinah?", "#chk_11111111\nDinah's our cat.")
    assert [type(m) for m in messages] == [SystemMessage, HumanMessage]
    shown = grounded_messages(
        "Quire", "Who is Dinah?", "#chk_11111111\nDinah's our cat.", examples=True
    )
    worked = prompts.grounded_example_messages()
    assert [m["role"] for m in worked] == ["user", "assistant"] * (len(worked) // 2)
    turns = [(u["content"], a["content"]) for u, a in zip(worked[::2], worked[1::2], strict=True)]
    assert len(shown) == 2 + 2 * len(turns) and len(turns) >= 2
    assert shown[0] == messages[0] and shown[-1] == messages[-1]
    for (asked, replied), user, reply in zip(turns, shown[1:-1:2], shown[2:-1:2], strict=True):
        assert isinstance(user, HumanMessage) and user.content == asked
        assert isinstance(reply, AIMessage) and reply.content == replied
    # an answer cites a passage its own context shows, at the sentence's end; a reply that
    # says the passages lack the answer cites nothing
    answers = [(a, r) for a, r in turns if cited_ids(r)]
    refusals = [r for _, r in turns if not cited_ids(r)]
    assert answers and refusals and all(is_refusal(r) for r in refusals)
    for asked, replied in answers:
        ids = cited_ids(replied)
        assert all(i in asked for i in ids) and replied.rstrip(".").endswith(ids[-1])


def test_the_hybrid_path_shows_the_examples_and_deep_reasoning_does_not():
    settings = Settings()
    hybrid = cited_answer_messages(settings, _state("hybrid"))
    deep = cited_answer_messages(settings, _state("deep_reasoning"))
    assert any(isinstance(m, AIMessage) for m in hybrid)
    assert [type(m) for m in deep] == [SystemMessage, HumanMessage]
    assert "Dinah's our cat." in hybrid[-1].content and "Dinah's our cat." in deep[-1].content


def test_the_warmed_grounded_opening_is_the_prompt_of_every_hybrid_answer_but_its_question():
    settings = Settings()
    prompt = cited_answer_messages(settings, _state("hybrid"))
    warmed = warm_messages(settings)[0]
    sent = [{"role": ROLES[type(m)], "content": m.content} for m in prompt]
    assert warmed[:-1] == sent[:-1]
    assert warmed[-1] == {"role": "user", "content": ""}


def test_the_chat_summarys_system_prompt_is_warmed_too():
    """Every turn's running-summary update opens with a warmed (and saved) system prompt,
    so it reads only the exchange it folds in."""
    from agent.memory.conversation import summary_update_messages

    settings = Settings()
    sent = summary_update_messages(
        None, "Who is Dinah?", "Alice's cat.", settings.conversation_summary_chars
    )
    openings = [w[0] for w in warm_messages(settings)]
    assert {"role": "system", "content": sent[0].content} in openings
    assert isinstance(sent[1], HumanMessage) and "Alice's cat." in sent[1].content
