"""A follow-up continues its chat's last grounded exchange (agent.chat.follow_up): the model
is sent the earlier prompt and its own reply, then only what is new, so its prompt cache
holds the rest; the earlier passages stay citable. Real Postgres, a recording model."""

from __future__ import annotations

import uuid

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from agent import prompts
from agent.chat.follow_up import EXCHANGES
from agent.ingest.pipeline import ingest_bytes
from agent.retrieval.citations import cited_ids
from graphs.chat import graph, wait_for_background
from graphs.context import Context
from tests.support.fakes import RecordingModel

BAKERY = (
    "The corner bakery in Millbrook sells dark rye bread on market days. "
    "Its rye loaves are baked in a wood-fired oven that was built in 1911. "
    "The bakery opens at six in the morning and closes when the bread runs out."
)


def _ask(question: str):
    return {"messages": [HumanMessage(question)]}


def _answering_prompts(model: RecordingModel) -> list[list]:
    """The prompts of grounded answers (the system prompt names the passages)."""
    return [
        p
        for p in model.prompts
        if isinstance(p[0], SystemMessage) and "context passages" in str(p[0].content)
    ]


async def test_a_follow_up_continues_the_last_exchange(services, new_user, recording):
    model = recording
    user = await new_user("follow-up")
    doc = await ingest_bytes(services, user.id, BAKERY.encode(), "bakery.txt", title="Millbrook")
    chat = str(uuid.uuid4())
    first = await graph.ainvoke(
        _ask("What bread does the Millbrook bakery sell on market days?"),
        context=Context(user=user.name, chat_id=chat),
    )
    await wait_for_background()
    second = await graph.ainvoke(
        _ask("When was its oven built?"), context=Context(user=user.name, chat_id=chat)
    )
    await wait_for_background()
    before, after = _answering_prompts(model)[-2:]
    # the earlier prompt and the model's own reply, unchanged, then one new message
    assert after[: len(before)] == before
    assert isinstance(after[len(before)], AIMessage)
    assert after[len(before)].content == EXCHANGES.last(chat).messages[len(before)].content
    assert isinstance(after[-1], HumanMessage) and len(after) == len(before) + 2
    assert "Question: When was its oven built?" in after[-1].content
    # the passage shown in the first turn is not repeated, and stays citable
    shown = set(first["chunk_map"])
    assert not any(cid in after[-1].content for cid in shown)
    assert shown <= set(second["chunk_map"])
    assert "1911" in second["answer"]
    assert set(cited_ids(second["answer"])) <= set(second["chunk_map"])

    # another chat starts afresh: no earlier exchange in its prompt
    await graph.ainvoke(
        _ask("When was the Millbrook oven built?"),
        context=Context(user=user.name, chat_id=str(uuid.uuid4())),
    )
    fresh = _answering_prompts(model)[-1]
    worked = {m["content"] for m in prompts.grounded_example_messages() if m["role"] == "assistant"}
    assert len(fresh) == len(before)  # system prompt, worked examples, question
    assert all(m.content in worked for m in fresh if isinstance(m, AIMessage))

    # the caller narrows the search to chosen documents: the chat's exchange is not
    # continued (the passages it showed may lie outside them), the prompt starts afresh
    await graph.ainvoke(
        _ask("When does it open?"),
        context=Context(user=user.name, chat_id=chat, document_ids=[str(doc.document_id)]),
    )
    await wait_for_background()
    narrowed = _answering_prompts(model)[-1]
    assert len(narrowed) == len(before) and "When does it open?" in narrowed[-1].content
