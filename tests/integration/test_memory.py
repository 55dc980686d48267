"""Conversation memory: running summary, recent-turn history, standalone follow-ups."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from agent.db.chats import ChatOwnershipError, NewMessage, add_messages, ensure_chat
from agent.memory.conversation import (
    ChatMemory,
    fallback_standalone,
    fallback_summary,
    history_block,
    load_memory,
    looks_like_follow_up,
    standalone_question,
    update_summary,
)
from agent.models import ExtractiveChatModel


class CountingFakeModel(GenericFakeChatModel):
    """A fake chat model that records the messages of every call."""

    calls: list = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any):
        self.calls.append(messages)
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def fake(*replies: str) -> CountingFakeModel:
    return CountingFakeModel(messages=iter([AIMessage(r) for r in replies]), calls=[])


async def make_chat(services, user_id, messages: list[tuple[str, str]] = ()) -> uuid.UUID:
    chat_id = uuid.uuid4()
    async with services.engine.begin() as conn:
        await ensure_chat(conn, user_id, chat_id)
        if messages:
            await add_messages(conn, user_id, chat_id, [NewMessage(r, c) for r, c in messages])
    return chat_id


SUMMARY_1 = (
    "Goals:\n- learn about the Cat\nConstraints:\n- none\nDecisions:\n- none\nKey facts:\n- grin"
)
SUMMARY_2 = (
    "Goals:\n- learn about the Cat\nConstraints:\n- none\nDecisions:\n- none\nKey facts:\n- tea"
)


async def test_summary_is_stored_updated_and_owner_checked(services, new_user):
    owner, intruder = await new_user("owner"), await new_user("intruder")
    chat_id = await make_chat(services, owner.id)
    model = fake(SUMMARY_1, SUMMARY_2)

    # the first exchange is its own summary: no model call (a one-question chat exits at once)
    first = await update_summary(services, owner.id, chat_id, "Q1", "A1 #chk_0123abcd", model)
    assert first == "Q: Q1; A: A1" and model.calls == []
    assert (await load_memory(services, owner.id, chat_id)).summary == first

    assert await update_summary(services, owner.id, chat_id, "Q2", "A2 #chk_0123abcd", model) == (
        SUMMARY_1
    )
    prompt = model.calls[0][-1].content
    assert first in prompt and "Q2" in prompt and "#chk_" not in prompt
    assert "Goals" in model.calls[0][0].content
    assert (await load_memory(services, owner.id, chat_id)).summary == SUMMARY_1

    assert await update_summary(services, owner.id, chat_id, "Q3", "A3", model) == SUMMARY_2
    assert SUMMARY_1 in model.calls[1][-1].content
    assert (await load_memory(services, owner.id, chat_id)).summary == SUMMARY_2

    spy = fake("stolen")
    with pytest.raises(ChatOwnershipError):
        await update_summary(services, intruder.id, chat_id, "Q", "A", spy)
    with pytest.raises(ChatOwnershipError):
        await update_summary(services, owner.id, uuid.uuid4(), "Q", "A", spy)
    assert spy.calls == []
    assert await load_memory(services, intruder.id, chat_id) == ChatMemory()
    assert (await load_memory(services, owner.id, chat_id)).summary == SUMMARY_2


async def test_summary_is_capped_and_survives_model_errors(services, new_user):
    user = await new_user()
    chat_id = await make_chat(services, user.id)
    cap = services.settings.conversation_summary_chars
    long = "\n".join(f"- fact number {i} about the Cheshire Cat" for i in range(200))
    await update_summary(services, user.id, chat_id, "Q0", "A0", fake())  # the first: no call
    assert len(await update_summary(services, user.id, chat_id, "Q", "A", fake(long))) <= cap

    broken = fake()  # no replies: the call raises
    summary = await update_summary(services, user.id, chat_id, "Who?", "Alice. Then Bob.", broken)
    assert len(broken.calls) == 1
    assert summary.endswith("Q: Who?; A: Alice.") and len(summary) <= cap


async def test_history_falls_back_to_last_ten_messages(services, new_user):
    user, intruder = await new_user("user"), await new_user("intruder")
    turns = [("user" if i % 2 == 0 else "assistant", f"message {i:02d}") for i in range(14)]
    turns[-1] = ("assistant", "message 13 #chk_0123abcd")
    chat_id = await make_chat(services, user.id, turns)

    memory = await load_memory(services, user.id, chat_id)
    assert memory.summary is None
    assert [c for _, c in memory.recent] == [c for _, c in turns[4:]]
    block = history_block(memory)
    assert block.startswith("Recent conversation:")
    assert "User: message 04" in block and "Assistant: message 13" in block
    assert "message 03" not in block and "#chk_" not in block

    assert len((await load_memory(services, user.id, chat_id, limit=3)).recent) == 3
    assert await load_memory(services, intruder.id, chat_id) == ChatMemory()
    assert history_block(ChatMemory()) == ""

    await update_summary(services, user.id, chat_id, "Q", "A", fake())
    await update_summary(services, user.id, chat_id, "Q", "A", fake(SUMMARY_1))
    with_summary = await load_memory(services, user.id, chat_id)
    assert len(with_summary.recent) == 10
    block = history_block(with_summary)
    assert SUMMARY_1 in block and "message 13" not in block


async def test_history_leaves_out_questions_of_failed_turns(services, new_user):
    user = await new_user("user")
    chat_id = await make_chat(services, user.id, [("user", "Who is Dinah?")])
    async with services.engine.begin() as conn:
        failed = NewMessage("user", "Who is the Hatter?", error={"code": "model_unavailable"})
        await add_messages(conn, user.id, chat_id, [failed])
        await add_messages(conn, user.id, chat_id, [NewMessage("user", "Who is Bill?")])
    memory = await load_memory(services, user.id, chat_id)
    assert [c for _, c in memory.recent] == ["Who is Dinah?", "Who is Bill?"]


def test_follow_up_detection():
    for question in (
        "What did she say next?",
        "Why?",
        "and the Queen?",
        "What about the Hatter's riddle?",
        "Is that true of the Duchess too?",
        "Tell me more",
    ):
        assert looks_like_follow_up(question), question
    for question in (
        "Who painted the roses red in the Queen's garden?",
        "Which creatures attend the Mad Hatter's tea party?",
    ):
        assert not looks_like_follow_up(question), question


async def test_standalone_rewrite_only_for_follow_ups():
    memory = ChatMemory(
        recent=[
            ("user", "Who is the Cheshire Cat?"),
            ("assistant", "A grinning cat. #chk_0123abcd"),
        ]
    )
    model = fake('Standalone question: "What does the Cheshire Cat do when it vanishes?"')

    plain = "Which creatures attend the Mad Hatter's tea party?"
    assert await standalone_question(model, plain, memory) == plain
    assert await standalone_question(model, "What does it do?", ChatMemory()) == (
        "What does it do?"
    )
    assert model.calls == []

    rewritten = await standalone_question(model, "What does it do when it vanishes?", memory)
    assert rewritten == "What does the Cheshire Cat do when it vanishes?"
    assert len(model.calls) == 1
    prompt = model.calls[0][-1].content
    assert "Who is the Cheshire Cat?" in prompt and "#chk_" not in prompt

    broken = fake()
    assert await standalone_question(broken, "And her?", memory) == "And her?"
    assert len(broken.calls) == 1
    assert await standalone_question(fake(""), "And her?", memory) == "And her?"


async def test_extractive_fallbacks_are_deterministic(services, new_user):
    extractive = ExtractiveChatModel()
    memory = ChatMemory(
        recent=[
            ("user", "Who painted the roses red?"),
            ("assistant", "The gardeners did. #chk_0123abcd"),
            ("user", "Why did they do it?"),
        ]
    )
    first = await standalone_question(extractive, "Why did they do it?", memory)
    assert first == "Why did they do it? painted rose red"
    assert await standalone_question(extractive, "Why did they do it?", memory) == first
    plain = "Which creatures attend the Mad Hatter's tea party?"
    assert await standalone_question(extractive, plain, memory) == plain
    assert fallback_standalone("And then?", ChatMemory(summary="s")) == "And then?"

    user = await new_user()
    chat_id = await make_chat(services, user.id)
    one = await update_summary(
        services,
        user.id,
        chat_id,
        "Who painted the roses?",
        "The gardeners. #chk_0123abcd More.",
        extractive,
    )
    assert one == "Q: Who painted the roses?; A: The gardeners."
    two = await update_summary(services, user.id, chat_id, "Why?", "A mistake! Really.", extractive)
    assert two == "Q: Who painted the roses?; A: The gardeners.\nQ: Why?; A: A mistake!"
    assert (await load_memory(services, user.id, chat_id)).summary == two

    capped = fallback_summary(two, "Next?", "Later.", 40)
    assert capped == "Q: Next?; A: Later."  # the oldest lines go first
    assert fallback_summary(two, "Next?", "Later.", 40) == capped


class SlowEchoModel(GenericFakeChatModel):
    """Writes the summary slowly, as the whole update prompt (previous summary and newest
    exchange), so a lost turn shows."""

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs: Any):
        import asyncio

        from langchain_core.outputs import ChatGeneration, ChatResult

        await asyncio.sleep(0.3)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(messages[-1].content))])


async def test_summary_updates_of_one_chat_run_one_after_another(services, new_user):
    """A turn asked while the last turn's summary is still being written folds into the
    summary that one stores: both turns are kept."""
    from types import SimpleNamespace

    from agent.chat.finished_turn import update_chat_summary, wait_for_background

    user = await new_user("quick-reader")
    chat_id = await make_chat(services, user.id)
    state = {"user_id": str(user.id), "chat_id": str(chat_id), "question": "Who is Dinah?"}
    model = SlowEchoModel(messages=iter([]))
    await update_chat_summary(services, state, SimpleNamespace(text="Alice's cat."), model)
    state = {**state, "question": "What does she catch?"}
    await update_chat_summary(services, state, SimpleNamespace(text="Bats and mice."), model)
    await wait_for_background()
    summary = (await load_memory(services, user.id, chat_id)).summary
    assert "Who is Dinah?" in summary and "What does she catch?" in summary


async def test_a_chats_first_turn_is_summarized_without_the_model(services, new_user):
    """``quire ask`` waits for the turn's background work before it exits: a new chat's first
    exchange is stored as its own summary, with no model call to wait for; the second turn
    is folded in by the model."""
    from types import SimpleNamespace

    from agent.chat.finished_turn import update_chat_summary, wait_for_background

    user = await new_user("one-question")
    chat_id = await make_chat(services, user.id)
    state = {"user_id": str(user.id), "chat_id": str(chat_id), "question": "Who is Dinah?"}
    model = fake(SUMMARY_1)
    await update_chat_summary(
        services, state, SimpleNamespace(text="Alice's cat. #chk_0a1b2c3d"), model
    )
    await wait_for_background()
    assert model.calls == []
    assert (await load_memory(services, user.id, chat_id)).summary == (
        "Q: Who is Dinah?; A: Alice's cat."
    )

    state = {**state, "question": "What does she catch?"}
    await update_chat_summary(services, state, SimpleNamespace(text="Bats and mice."), model)
    await wait_for_background()
    assert len(model.calls) == 1 and "Who is Dinah?" in model.calls[0][-1].content
    assert (await load_memory(services, user.id, chat_id)).summary == SUMMARY_1


async def test_turns_added_at_once_are_all_kept(services, new_user):
    """Turns of one chat finishing together (two server workers, two tabs) each extend the
    summary the other stored: none is lost."""
    import asyncio

    from agent.memory.conversation import record_exchange

    user = await new_user("busy-chat")
    chat_id = await make_chat(services, user.id)
    questions = [f"Question number {i}?" for i in range(6)]
    await asyncio.gather(
        *(record_exchange(services, user.id, chat_id, q, "Answer.") for q in questions)
    )
    summary = (await load_memory(services, user.id, chat_id)).summary
    assert sorted(line.split(";")[0] for line in summary.splitlines()) == sorted(
        f"Q: {q}" for q in questions
    )


async def test_a_rewrite_overtaken_by_a_later_turn_is_not_stored(services, new_user):
    """A model's rewrite stores only over the summary it started from: a turn recorded
    meanwhile keeps its line, and its own rewrite folds in the earlier one's."""
    from agent.memory.conversation import record_exchange, rewrite_summary

    user = await new_user("overtaken")
    chat_id = await make_chat(services, user.id)
    await record_exchange(services, user.id, chat_id, "Who is Dinah?", "Alice's cat.")
    second = await record_exchange(services, user.id, chat_id, "What does she catch?", "Bats.")
    third = await record_exchange(services, user.id, chat_id, "And the Cat?", "It grins.")
    assert await rewrite_summary(services, user.id, chat_id, second, fake(SUMMARY_1)) is None
    assert (await load_memory(services, user.id, chat_id)).summary == third.stored

    model = fake(SUMMARY_2)
    assert await rewrite_summary(services, user.id, chat_id, third, model) == SUMMARY_2
    prompt = model.calls[0][-1].content
    assert "What does she catch?" in prompt and "And the Cat?" in prompt
    assert (await load_memory(services, user.id, chat_id)).summary == SUMMARY_2


async def test_a_process_that_leaves_before_the_rewrite_loses_no_turn(services, new_user):
    """``quire ask --chat`` exits once its answer is printed, cancelling the summary's
    rewrite: the turn stays in the summary as its plain line, and the chat's next rewrite
    folds it in."""
    from types import SimpleNamespace

    from agent.chat.finished_turn import update_chat_summary, wait_for_background

    user = await new_user("hurried")
    chat_id = await make_chat(services, user.id)
    state = {"user_id": str(user.id), "chat_id": str(chat_id)}
    slow = SlowEchoModel(messages=iter([]))
    for question, answer in [("Who is Dinah?", "Alice's cat."), ("Her prey?", "Bats.")]:
        turn = SimpleNamespace(text=answer)
        await update_chat_summary(services, {**state, "question": question}, turn, slow)
        await wait_for_background(summaries=False)
    assert (await load_memory(services, user.id, chat_id)).summary == (
        "Q: Who is Dinah?; A: Alice's cat.\nQ: Her prey?; A: Bats."
    )

    model = fake(SUMMARY_1)
    turn = SimpleNamespace(text="It grins.")
    await update_chat_summary(services, {**state, "question": "And the Cat?"}, turn, model)
    await wait_for_background()
    prompt = model.calls[0][-1].content
    assert "Her prey?" in prompt and "And the Cat?" in prompt
    assert (await load_memory(services, user.id, chat_id)).summary == SUMMARY_1
