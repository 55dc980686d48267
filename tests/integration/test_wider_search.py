"""A second look before "not found", through the chat graph on the real database: an answer
that says nothing asked for (the guards make it the plain "not found" reply) searches once
more past the passages it read, and the model answers again from the next ones."""

from __future__ import annotations

import re
import uuid

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from agent import prompts
from agent.ingest.pipeline import ingest_bytes
from graphs.chat import graph
from graphs.context import Context
from graphs.streaming import stream_turn
from tests.support.fakes import answer_with

LOGBOOK = """Greyholm Point keeper's logbook, spring.

Painting the lantern room of Greyholm Point took the keeper nine days in April, as it does
every spring. The lantern room has forty panes and a brass rail, and the keeper painted the
lantern room by hand, from a ladder, with the lamp lit each dusk and the shutters drawn in
the afternoons. He kept the brushes in turpentine overnight in the oil store below.

The relief keeper, Tamsin Vell, rowed out with the supplies on the fourth day. She brought
flour, lamp oil, two sacks of coal and a crate of tinned fish from the mainland. She stayed
one night because the sea was too rough for the return crossing, and left on the morning
tide with the mail and the keeper's list of stores for the next month.

This year's tins were ochre, ordered from the chandler in Harbury after the old white
peeled in the winter gales. Ochre, the chandler said, hides the salt stains better than
white does and keeps its shine for three seasons or more. The tins came across on the
supply boat in March, packed in straw against the spray, with a new ladder and brushes.

In May the fog signal failed twice. The keeper mended its bellows with a spare leather and
logged each failure, with the hour and the state of the tide, for the inspector's visit.
The inspector came on the twentieth, read the log, and signed it without a word of comment.
"""

NOTE = b"""The keeper's cat sleeps on the oil store's warm pipes every night of the winter."""


class SecondLook(BaseChatModel):
    """Restates the question (a non-answer) unless its passages name the paint's colour;
    then answers with it, cited by the passage's id. Records every prompt."""

    prompts: list = []

    @property
    def _llm_type(self) -> str:
        return "quire-extractive"  # LLM-free for the memory update

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.prompts.append(messages)
        asked = str(messages[-1].content)
        block = re.search(r"(#chk_[0-9a-f]{8})[^\n]*\n[^#]*\bochre\b", asked)
        reply = (
            f"The lantern room was painted ochre {block.group(1)}."
            if block
            else "The keeper painted the lantern room."
        )
        return ChatResult(generations=[ChatGeneration(message=AIMessage(reply))])


@pytest.fixture
def second_look(monkeypatch):
    return answer_with(monkeypatch, SecondLook(prompts=[]))


@pytest.fixture(scope="module")
async def keeper(services):
    """A user with the logbook (flat chunks: each paragraph a passage of its own)."""
    from agent.library.accounts import resolve_user

    user = await resolve_user(services, f"wider-{uuid.uuid4().hex[:6]}")
    await ingest_bytes(services, user.id, LOGBOOK.encode(), "logbook.txt", title="Logbook")
    return user


def _context(user, **kw) -> Context:
    # one passage a search, so the colour's paragraph is never in the first one's context
    return Context(user=user.name, chat_id=str(uuid.uuid4()), top_k=1, **kw)


QUESTION = "What colour did the keeper paint the lantern room?"


async def test_a_non_answer_searches_past_its_passages_and_answers_from_the_next(
    keeper, second_look
):
    state = await graph.ainvoke({"messages": [HumanMessage(QUESTION)]}, context=_context(keeper))
    first, second = (p[-1].content for p in second_look.prompts)
    print("SECOND>>>", second, "\nANSWER>>>", state["answer"], state["citations"])
    assert "ochre" not in first and "ochre" in second
    assert "nine days" in first and "nine days" not in second  # the first passage is skipped
    assert state["retrieval"]["wider_search"] == {"skipped_passages": 1}
    assert state["route_reason"].endswith("the first passages did not say it: searched further")
    assert "ochre" in state["answer"] and state["answer"] != prompts.NOT_ANSWERED
    (cited,) = state["citations"]
    assert "ochre" in cited["text"] and cited["id"] in state["answer"]
    assert state["message_id"]


async def test_the_second_answer_is_not_streamed_over_the_first(keeper, second_look):
    tokens, nodes, final = [], [], {}
    async for event in stream_turn(graph, QUESTION, context=_context(keeper)):
        if event.kind == "token":
            tokens.append(event.text)
        elif event.kind == "node":
            nodes.append(event.node)
        else:
            final = event.state
    assert nodes.index("generate") < nodes.index("search_further") < nodes.index("answer_again")
    assert "ochre" not in "".join(tokens)  # only the first answer streamed
    assert "ochre" in final["answer"]


async def test_nothing_further_keeps_the_first_reply(services, second_look, monkeypatch):
    from agent.library.accounts import resolve_user

    user = await resolve_user(services, f"wider-{uuid.uuid4().hex[:6]}")
    await ingest_bytes(services, user.id, NOTE, "note.txt", title="Note")
    monkeypatch.setattr(SecondLook, "_generate", _restates)
    # the note tells of winter nights only, so no sentence of it answers the summer's
    question = "Where does the keeper's cat sleep in the summer?"
    state = await graph.ainvoke({"messages": [HumanMessage(question)]}, context=_context(user))
    assert state["answer"] == prompts.NOT_ANSWERED
    assert state["route_reason"].endswith("nor did any other")  # its one passage was read
    assert len(second_look.prompts) == 1  # no second answer without new passages


async def test_off_by_setting(keeper, second_look, services, monkeypatch):
    monkeypatch.setattr(services.settings, "wider_search", False)
    state = await graph.ainvoke({"messages": [HumanMessage(QUESTION)]}, context=_context(keeper))
    assert state["answer"] == prompts.NOT_ANSWERED
    assert "did not say it" not in state["route_reason"] and len(second_look.prompts) == 1


def _restates(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
    self.prompts.append(messages)
    reply = "The keeper's cat sleeps in the summer."
    return ChatResult(generations=[ChatGeneration(message=AIMessage(reply))])


async def test_the_local_model_searches_further_only_when_asked(
    keeper, second_look, services, monkeypatch
):
    """Off by default for the 1.5B model (measured: no answer gained on the book set)."""
    local = _context(keeper, chat_model="local")
    state = await graph.ainvoke({"messages": [HumanMessage(QUESTION)]}, context=local)
    assert state["answer"] == prompts.NOT_ANSWERED and len(second_look.prompts) == 1
    monkeypatch.setattr(services.settings, "local_wider_search", True)
    state = await graph.ainvoke({"messages": [HumanMessage(QUESTION)]}, context=local)
    assert "ochre" in state["answer"] and len(second_look.prompts) == 3


async def test_each_turn_of_a_thread_may_search_further(keeper, second_look):
    """The wider search's mark is the turn's: a checkpointed thread's next turn starts
    without it (else only a thread's first "not found" would ever look further)."""
    from langgraph.checkpoint.memory import InMemorySaver

    from graphs.chat import build_graph

    threaded = build_graph().compile(checkpointer=InMemorySaver())
    context = _context(keeper)
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    for turn in (1, 2):
        nodes = [
            event.node
            async for event in stream_turn(threaded, QUESTION, context=context, config=config)
            if event.kind == "node"
        ]
        assert "search_further" in nodes and "answer_again" in nodes, (turn, nodes)
