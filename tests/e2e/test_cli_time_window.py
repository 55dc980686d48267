"""``quire ask``/``quire chat`` with ``--since``/``--until`` (a real subprocess on the test
database): only documents created in the window are cited, ``--json`` says which window and
which conflicts, and an unreadable window is one error line."""

from __future__ import annotations

import json
import uuid

from sqlalchemy import text

from agent.retrieval.citations import cited_ids
from tests.support.programs import quire

OLD = "The old almanac says the tide mill at Saltmarsh grinds barley for the abbey."
NEW = "The new almanac says the tide mill at Saltmarsh now grinds oats for the bakery."
QUESTION = "What does the tide mill at Saltmarsh grind?"


async def _aged(services, user, body: str, days: float) -> str:
    from agent.ingest.pipeline import ingest_bytes

    doc = await ingest_bytes(services, user.id, body.encode(), f"{uuid.uuid4().hex[:6]}.txt")
    async with services.engine.begin() as conn:
        await conn.execute(
            text(
                "UPDATE documents SET created_at = now() - make_interval(secs => :s) WHERE id = :d"
            ),
            {"s": days * 86400, "d": doc.document_id},
        )
    return str(doc.document_id)


def _ask(question: str, *args: str) -> dict:
    run = quire("ask", question, *args, "--json")
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


async def test_ask_keeps_to_the_window_and_says_so(services, new_user):
    user = await new_user("cli-window")
    old, new = await _aged(services, user, OLD, 30), await _aged(services, user, NEW, 0.1)
    recent = _ask(QUESTION, "--user", user.name, "--since", "7d")
    assert {c["chunk_id"] for c in recent["citations"]}
    assert "oats" in recent["answer"] and "barley" not in recent["answer"]
    assert recent["time_window"]["since"] and recent["time_window"]["until"] is None
    earlier = _ask(QUESTION, "--user", user.name, "--until", "7d")
    assert "barley" in earlier["answer"] and "oats" not in earlier["answer"]
    documents = {(await _document_of(services, c["chunk_id"])) for c in recent["citations"]} | {
        (await _document_of(services, c["chunk_id"])) for c in earlier["citations"]
    }
    assert documents == {old, new}


async def _document_of(services, chunk_id: str) -> str:
    async with services.engine.connect() as conn:
        found = await conn.execute(
            text("SELECT document_id FROM child_chunks WHERE id = :c"), {"c": uuid.UUID(chunk_id)}
        )
        return str(found.scalar_one())


def test_an_unreadable_window_is_one_error_line():
    for command in (["ask", QUESTION], ["chat"]):
        run = quire(*command, "--since", "2025-03-05", "--until", "2025-03-01")
        assert run.returncode == 2
        assert "invalid_time_window" in run.stderr and "must be after 'since'" in run.stderr
        assert "Traceback" not in run.stderr
    run = quire("ask", QUESTION, "--since", "fortnight")
    assert run.returncode == 2 and "cannot read the time 'fortnight'" in run.stderr


async def test_json_lists_the_conflicts(services, new_user):
    user = await new_user("cli-conflict")
    await _aged(services, user, "The Saltmarsh tide mill was built in 1764 by monks.", 1)
    await _aged(services, user, "The Saltmarsh tide mill was built in 1802 by monks.", 1)
    answer = _ask("When was the Saltmarsh tide mill built?", "--user", user.name)
    [conflict] = answer["conflicts"]
    assert {conflict["first_value"], conflict["second_value"]} == {"1764", "1802"}
    assert {conflict["first"], conflict["second"]} <= set(cited_ids(answer["answer"]))
