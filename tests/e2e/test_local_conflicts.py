"""Five planted conflicts on the real packaged local model (slow: run sparingly).

Five pairs of small documents disagree on a date, a number, a name, a place and a yes/no
fact. Each question must be answered with both versions, both cited by their ``#chk_`` ids,
and a question asking which source to trust.
"""

from __future__ import annotations

import uuid

import pytest
from langchain_core.messages import HumanMessage

from agent.chat.conflicts import asks_which_to_trust
from agent.ingest.pipeline import ingest_bytes
from agent.retrieval.citations import cited_ids
from graphs.chat import graph, wait_for_background
from graphs.context import Context

pytestmark = pytest.mark.local_model

# kind, question, (first text, second text), (first value, second value)
PLANTED = [
    (
        "date",
        "On what date is the Wrenfield lantern festival held?",
        (
            "The Wrenfield lantern festival is held on 12 June every year.",
            "The Wrenfield lantern festival is held on 19 July every year.",
        ),
        ("12 June", "19 July"),
    ),
    (
        "number",
        "How long is the Corran viaduct?",
        (
            "The Corran viaduct is 450 metres long and carries two railway tracks.",
            "The Corran viaduct is 520 metres long and carries two railway tracks.",
        ),
        ("450", "520"),
    ),
    (
        "name",
        "Who designed the Skerry Point lighthouse?",
        (
            "The Skerry Point lighthouse was designed by the engineer Robert Stevenson.",
            "The Skerry Point lighthouse was designed by the engineer Thomas Telford.",
        ),
        ("Stevenson", "Telford"),
    ),
    (
        "place",
        "Where was the Harbour Treaty signed?",
        (
            "The Harbour Treaty was signed in Vienna by the two trading guilds.",
            "The Harbour Treaty was signed in Geneva by the two trading guilds.",
        ),
        ("Vienna", "Geneva"),
    ),
    (
        "yes/no",
        "Does the Kestrel Bay ferry run on Sundays?",
        (
            "The Kestrel Bay ferry runs on Sundays during the summer season.",
            "The Kestrel Bay ferry does not run on Sundays during the summer season.",
        ),
        ("run", "not"),
    ),
]


@pytest.fixture(scope="module")
async def library(services):
    """One reader with the ten documents (five disagreeing pairs)."""
    from agent.library.accounts import resolve_user

    user = await resolve_user(services, f"local-conflicts-{uuid.uuid4().hex[:6]}")
    for i, (_, _, texts, _) in enumerate(PLANTED):
        for side, body in zip("ab", texts, strict=True):
            await ingest_bytes(services, user.id, body.encode(), f"pair{i}-{side}.txt")
    return user


@pytest.mark.parametrize(
    ("kind", "question", "texts", "values"), PLANTED, ids=[p[0] for p in PLANTED]
)
async def test_the_local_model_shows_both_sides(library, kind, question, texts, values):
    state = await graph.ainvoke(
        {"messages": [HumanMessage(question)]},
        context=Context(user=library.name, chat_model="local"),
    )
    await wait_for_background(timeout=300)  # the chat summary: not beside the next answer
    answer = state["answer"]
    print(f"{kind}: {answer}")
    assert state["model_used"].startswith(("investigator", "deep"))
    [conflict] = state["conflicts"]
    sides = {conflict["first"], conflict["second"]}
    assert sides <= set(cited_ids(answer))  # both versions cited
    assert all(v.lower() in answer.lower() for v in values)  # and both given
    assert asks_which_to_trust(answer)  # and which source to trust asked
