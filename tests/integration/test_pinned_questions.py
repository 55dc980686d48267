"""A question about a year, a version or a code that none of its passages names, through
the chat graph on the real database: the "not found" reply without a model call (the
`unanswered` node), its route record, and the same question about a year the passages do
name answered by the model as before."""

from __future__ import annotations

import uuid

import pytest
from langchain_core.messages import HumanMessage

from agent import prompts
from agent.ingest.pipeline import ingest_bytes
from graphs.chat import graph
from graphs.context import Context

REPORT = b"""Greyholm Volunteer Trust: annual report 2024

Training. In 2024 the trust trained 212 new volunteers across its four sites, up from the
year before. Most of them joined the river clean-up and the reading scheme.

Funding. The trust's income came mainly from the county council and from two local firms.
"""


@pytest.fixture(scope="module")
async def report_reader(services):
    """A user with one year's report (2024) and nothing else."""
    from agent.library.accounts import resolve_user

    user = await resolve_user(services, f"pins-{uuid.uuid4().hex[:6]}")
    await ingest_bytes(services, user.id, REPORT, "report-2024.txt", title="Annual report")
    return user


async def _ask(user, question: str) -> dict:
    context = Context(user=user.name, chat_id=str(uuid.uuid4()))
    return await graph.ainvoke({"messages": [HumanMessage(question)]}, context=context)


async def test_a_year_no_passage_names_is_not_found_without_asking_the_model(
    report_reader, recording
):
    state = await _ask(report_reader, "How many volunteers did the trust train in 2023?")
    assert state["route"] == "hybrid" and state["answer"] == prompts.NOT_ANSWERED
    assert state["model_used"] == "pinned_figure_check"
    assert recording.prompts == []  # no answer was written only to be replaced
    assert state["retrieval"]["unheld_pins"] == ["2023"]
    assert state["routing"]["confidence"] == "low"
    assert "2023, which no passage names" in state["route_reason"]
    assert state["citations"] == [] and state["sources"]  # the passages that were searched
    assert state["message_id"]  # saved as any answer is


async def test_a_year_the_passages_name_is_answered_by_the_model(report_reader, recording):
    state = await _ask(report_reader, "How many volunteers did the trust train in 2024?")
    assert state["model_used"].startswith("investigator_")
    assert len(recording.prompts) == 1  # the grounded prompt, with 2024 in its passages
    assert "2024" in recording.prompts[0][-1].content
    assert "unheld_pins" not in state["retrieval"] and state["routing"]["confidence"] != "low"


async def test_a_code_no_passage_names_is_not_found(services, recording):
    """A model code the deck never names ("S2", over a deck about the S4): "not found",
    without a model call; the S4's own figure is still answered by the model."""
    from agent.library.accounts import resolve_user

    user = await resolve_user(services, f"codes-{uuid.uuid4().hex[:6]}")
    deck = b"Hearthline S4 launch plan. The Hearthline S4 is forecast to sell 71,300 units."
    await ingest_bytes(services, user.id, deck, "launch.txt", title="Launch plan")
    state = await _ask(user, "How many units did the Hearthline S2 sell in its first year?")
    assert state["answer"] == prompts.NOT_ANSWERED and recording.prompts == []
    assert state["retrieval"]["unheld_pins"] == ["S2"]
    named = await _ask(user, "How many units is the Hearthline S4 forecast to sell?")
    assert named["model_used"].startswith("investigator_") and len(recording.prompts) == 1
