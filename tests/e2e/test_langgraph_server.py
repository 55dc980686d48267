"""``langgraph dev`` serves the ``chat`` graph and the mounted FastAPI app, offline."""

import asyncio
import base64
import uuid

import httpx
import pytest
from langgraph_sdk import get_client

from agent.retrieval.citations import cited_ids

pytestmark = pytest.mark.server


async def bearer(services, user) -> dict:
    """Headers with a fresh API token of ``user`` (the server requires one)."""
    from agent.db.users import issue_token

    async with services.engine.begin() as conn:
        return {"Authorization": f"Bearer {await issue_token(conn, user.id)}"}


def test_mounted_app_health(langgraph_server):
    assert httpx.get(f"{langgraph_server}/health").json()["status"] == "ok"


async def test_chat_graph_runs_through_the_sdk(langgraph_server, services, alice_reader):
    user, _ = alice_reader
    client = get_client(url=langgraph_server, headers=await bearer(services, user))
    assistants = await client.assistants.search(graph_id="chat")
    assert assistants
    thread = await client.threads.create()
    result = await client.runs.wait(
        thread["thread_id"],
        "chat",
        input={"messages": [{"role": "user", "content": "Who is Dinah?"}]},
        context={"user": user.name},
    )
    assert result["route"] == "hybrid"
    assert result["citations"] and any("Dinah" in c["text"] for c in result["citations"])
    assert set(cited_ids(result["answer"])) <= {c["id"] for c in result["citations"]}
    assert result["chat_id"] == thread["thread_id"]

    streamed = []
    async for part in client.runs.stream(
        thread["thread_id"],
        "chat",
        input={"messages": [{"role": "user", "content": "What is your name?"}]},
        context={"user": user.name},
        stream_mode="values",
    ):
        if part.event == "values":
            streamed.append(part.data)
    assert streamed[-1]["route"] == "direct"
    # the thread's checkpointed state holds both turns
    state = await client.threads.get_state(thread["thread_id"])
    assert len(state["values"]["messages"]) == 4


async def test_ingest_graph_runs_in_the_background_and_summaries_follow(langgraph_server, services):
    from sqlalchemy import text

    from agent.library.accounts import add_user
    from tests.support.samples import book_text

    owner, token = await add_user(services, f"server-ingest-{uuid.uuid4().hex[:6]}")
    client = get_client(url=langgraph_server, headers={"Authorization": f"Bearer {token}"})
    thread = await client.threads.create()
    data = base64.b64encode(book_text().encode()).decode()
    run = await client.runs.create(
        thread["thread_id"],
        "ingest",
        input={"content_base64": data, "filename": "tale.txt"},
        context={"user": owner.name},
    )
    result = await client.runs.join(thread["thread_id"], run["run_id"])
    assert result["status"] == "ingested" and result["parents"] >= 3
    # nobody asked for summaries: the server's background worker writes them
    status = None
    for _ in range(120):
        async with services.engine.connect() as conn:
            status = (
                await conn.execute(
                    text("SELECT summary_status FROM documents WHERE id = :d"),
                    {"d": result["document_id"]},
                )
            ).scalar()
        if status == "done":
            break
        await asyncio.sleep(0.5)
    assert status == "done"


async def test_search_graph_answers_in_the_knowledge_search_shape(
    langgraph_server, services, alice_reader
):
    user, _ = alice_reader
    client = get_client(url=langgraph_server, headers=await bearer(services, user))
    result = await client.runs.wait(
        None, "search", input={"query": "Dinah the cat", "topK": 3}, context={"user": user.name}
    )
    assert len(result["citations"]) == 3
    assert set(cited_ids(result["answerHints"])) == {c["id"] for c in result["citations"]}
    assert result["searchMetadata"]["resultsFound"] == 3


async def test_the_routing_set_through_the_server(langgraph_server, services):
    """Every message of ``tests/data/routing.jsonl`` as a run of the served ``chat`` graph
    with the default setup (extractive model, no web key): at least 95% take the expected
    route (and mode), every trap does, and each run's output says why."""
    from agent.library.accounts import resolve_user
    from bench.eval_answers import ingest_documents
    from bench.eval_routing import RoutingResult, class_figures, load_routing_set

    items = load_routing_set()
    paths = list(dict.fromkeys(p for item in items for p in item.books))
    ids, _ = await ingest_documents(services, "routing-reader", paths)
    user = await resolve_user(services, "routing-reader")
    client = get_client(url=langgraph_server, headers=await bearer(services, user))
    limit = asyncio.Semaphore(4)

    async def run(item) -> RoutingResult:
        async with limit:
            result = await client.runs.wait(
                None,
                "chat",
                input={"messages": [{"role": "user", "content": item.message}]},
                context={"user": user.name, "document_ids": [str(ids[p]) for p in item.books]},
            )
        routing = result.get("routing") or {}
        assert result["route_reason"] == routing.get("reason"), result
        return RoutingResult(
            message=item.message,
            cls=item.cls,
            expected=item.route,
            route=result["route"],
            reason=routing.get("reason") or "",
            expected_mode=item.mode,
            mode=routing.get("mode"),
            confidence=routing.get("confidence"),
        )

    results = await asyncio.gather(*(run(item) for item in items))
    figures = {row.cls: row for row in class_figures(list(results))}
    misses = [(r.message, r.route, r.mode, r.reason) for r in results if not r.correct]
    assert figures["all"].messages == len(items) >= 80
    assert figures["all"].accuracy >= 0.95, misses
    assert figures["trap"].accuracy == 1.0 and figures["trap"].messages >= 20, misses
    assert all(r.reason and r.confidence for r in results)
    assert not [r.message for r in results if r.route == "web_search"]
