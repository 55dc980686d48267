"""``langgraph dev`` with Quire's auth: bearer tokens, thread ownership, runs as the caller."""

import uuid

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import APIStatusError
from sqlalchemy import text

from agent.retrieval.citations import citation_id, cited_ids

pytestmark = pytest.mark.server

A_TEXT = (
    b"The orchard keeper Ottoline grafts quince branches onto pear trees every March. "
    b"She records each graft in a green ledger kept in the cider barn."
)
B_TEXT = (
    b"The glassblower Benedikt anneals cobalt vases overnight in a brick kiln. "
    b"He sells the finished vases at the harbour market on Saturdays."
)


@pytest.fixture(scope="module")
async def people(services):
    """Two users with a token and one small document each."""
    from agent.ingest.pipeline import ingest_bytes
    from agent.library.accounts import add_user

    made = {}
    for key, body in (("a", A_TEXT), ("b", B_TEXT)):
        user, token = await add_user(services, f"lg-{key}-{uuid.uuid4().hex[:6]}")
        doc = await ingest_bytes(services, user.id, body, f"{key}.txt")
        made[key] = (user, token, doc)
    return made


def _client(url: str, token: str):
    return get_client(url=url, headers={"Authorization": f"Bearer {token}"})


def _ask(question: str) -> dict:
    return {"messages": [{"role": "user", "content": question}]}


async def _refused(call) -> int:
    """The HTTP status a refused SDK call failed with (the SDK raises either type)."""
    with pytest.raises((APIStatusError, httpx.HTTPStatusError)) as refused:
        await call
    error = refused.value
    return error.status_code if isinstance(error, APIStatusError) else error.response.status_code


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer qk_not-a-token"}])
def test_requests_without_a_valid_token_are_refused(langgraph_server, headers):
    for method, path, body in (
        ("POST", "/threads", {}),
        ("POST", "/threads/search", {}),
        ("POST", "/assistants/search", {"graph_id": "chat"}),
        ("POST", "/runs/wait", {"assistant_id": "search", "input": {"query": "x"}}),
    ):
        r = httpx.request(
            method, f"{langgraph_server}{path}", json=body, headers=headers, timeout=30
        )
        assert r.status_code in (401, 403), (path, r.status_code, r.text)


def test_a_copy_of_a_thread_that_never_ran_can_be_read_and_run(langgraph_server, people):
    """The in-memory runtime's copy of an empty thread answered every state read with 500
    and failed every run (api/inmem_thread_copies.py)."""
    headers = {"Authorization": f"Bearer {people['a'][1]}"}
    with httpx.Client(base_url=langgraph_server, headers=headers, timeout=120) as http:
        source = http.post("/threads", json={}).json()["thread_id"]
        copied = http.post(f"/threads/{source}/copy")
        assert copied.status_code == 200, copied.text
        copy_id = copied.json()["thread_id"]
        state = http.get(f"/threads/{copy_id}/state")
        assert state.status_code == 200, state.text
        assert state.json()["values"] == {}
        body = {"assistant_id": "chat", "input": _ask("What does Ottoline graft?")}
        ran = http.post(f"/threads/{copy_id}/runs/wait", json=body)
        assert ran.status_code == 200, ran.text
        assert "__error__" not in ran.json(), ran.text
        assert http.get(f"/threads/{copy_id}/state").json()["values"]["messages"]


async def test_threads_are_private_to_their_owner(langgraph_server, people):
    (_, token_a, _), (_, token_b, _) = people["a"], people["b"]
    alice, bob = _client(langgraph_server, token_a), _client(langgraph_server, token_b)
    thread = await alice.threads.create(metadata={"owner": "someone-else"})
    await alice.runs.wait(thread["thread_id"], "chat", input=_ask("What does Ottoline graft?"))
    assert (await alice.threads.get(thread["thread_id"]))["thread_id"] == thread["thread_id"]
    assert thread["thread_id"] in {t["thread_id"] for t in await alice.threads.search(limit=100)}

    assert thread["thread_id"] not in {t["thread_id"] for t in await bob.threads.search(limit=100)}
    for attempt in (
        bob.threads.get(thread["thread_id"]),
        bob.threads.get_state(thread["thread_id"]),
        bob.threads.update(thread["thread_id"], metadata={"owner": "me"}),
        bob.threads.delete(thread["thread_id"]),
        bob.runs.wait(thread["thread_id"], "chat", input=_ask("What does Ottoline graft?")),
    ):
        assert await _refused(attempt) in (403, 404)
    # bob's attempts changed nothing: the thread is still alice's, with one turn
    state = await alice.threads.get_state(thread["thread_id"])
    assert len(state["values"]["messages"]) == 2


async def test_a_streamed_chat_run_sends_tokens_and_its_thread_stays_private(
    langgraph_server,
    services,
    people,
):
    (_, token_a, doc_a), (_, token_b, _) = people["a"], people["b"]
    alice, bob = _client(langgraph_server, token_a), _client(langgraph_server, token_b)
    thread = await alice.threads.create()
    tokens: list[str] = []
    final: dict = {}
    async for part in alice.runs.stream(
        thread["thread_id"],
        "chat",
        input=_ask("What does Ottoline graft onto pear trees?"),
        stream_mode=["messages-tuple", "values"],
    ):
        assert part.event != "error", part.data
        if part.event == "messages":
            chunk, meta = part.data
            # token chunks of the answering node (its whole message follows as type "ai")
            if meta.get("langgraph_node") == "generate" and chunk["type"] == "AIMessageChunk":
                tokens.append(chunk["content"])
        elif part.event == "values":
            final = part.data

    # the answer came as token chunks, and the final state holds it with its citations
    assert len([t for t in tokens if t]) >= 2, tokens
    answer = final["answer"]
    assert "".join(tokens).strip() == answer and "quince" in answer
    ids = cited_ids(answer)
    assert ids and set(ids) <= {c["id"] for c in final["citations"]}
    async with services.engine.connect() as conn:
        for cid in ids:
            chunk_id = final["chunk_map"][cid]
            assert citation_id(chunk_id) == cid
            row = (
                await conn.execute(
                    text("SELECT document_id, text FROM child_chunks WHERE id = :id"),
                    {"id": chunk_id},
                )
            ).one()
            assert row.document_id == doc_a.document_id and "Ottoline" in row.text

    # another user can neither read the thread nor find it
    assert await _refused(bob.threads.get(thread["thread_id"])) in (403, 404)
    assert await _refused(bob.threads.get_state(thread["thread_id"])) in (403, 404)
    assert thread["thread_id"] not in {t["thread_id"] for t in await bob.threads.search(limit=100)}
    assert thread["thread_id"] in {t["thread_id"] for t in await alice.threads.search(limit=100)}


async def test_a_run_acts_as_the_caller_whatever_the_context_says(
    langgraph_server,
    services,
    people,
):
    (user_a, token_a, doc_a), (user_b, _, doc_b) = people["a"], people["b"]
    alice = _client(langgraph_server, token_a)
    # the search graph searches the caller's documents, not those of the named user
    found = await alice.runs.wait(
        None, "search", input={"query": "cobalt vases kiln"}, context={"user": user_b.name}
    )
    documents = {c["documentId"] for c in found["citations"]}
    assert str(doc_b.document_id) not in documents
    assert documents <= {str(doc_a.document_id)}
    # the chat graph saves the turn in the caller's chat, answered from the caller's library
    # (the user named in the older ``configurable`` form is overridden as well)
    thread = await alice.threads.create()
    result = await alice.runs.wait(
        thread["thread_id"],
        "chat",
        input=_ask("Who anneals cobalt vases in a brick kiln?"),
        config={"configurable": {"user": user_b.name}},
    )
    assert all(c.get("document_id") != str(doc_b.document_id) for c in result["citations"])
    async with services.engine.connect() as conn:
        owner = (
            await conn.execute(
                text("SELECT user_id FROM chats WHERE id = :c"), {"c": result["chat_id"]}
            )
        ).scalar()
    assert owner == user_a.id


async def test_ingest_from_a_server_path_is_refused(langgraph_server, people):
    _, token_a, _ = people["a"]
    alice = _client(langgraph_server, token_a)
    assert await _refused(alice.runs.wait(None, "ingest", input={"path": "/etc/hostname"})) == 403


async def test_studio_acts_as_the_local_default_user(langgraph_server, services, people):
    from agent.library.accounts import resolve_user

    _, token_a, _ = people["a"]
    alice = _client(langgraph_server, token_a)
    private = await alice.threads.create()
    studio = get_client(url=langgraph_server, headers={"x-auth-scheme": "langsmith"})
    assert await studio.assistants.search(graph_id="chat")
    thread = await studio.threads.create()
    local = await resolve_user(services, services.settings.default_user)
    assert thread["metadata"]["owner"] == str(local.id)
    seen = {t["thread_id"] for t in await studio.threads.search(limit=100)}
    assert thread["thread_id"] in seen and private["thread_id"] not in seen


# --- generated requests over threads: the same property as tests/api/test_isolation_property ---

THREAD_OPS = ("create", "get", "state", "history", "update", "search", "delete", "copy", "run")


def _thread_request(http: httpx.Client, token: str, op: str, thread_id: str | None):
    """One LangGraph API request as ``token``'s user; the response."""
    headers = {"Authorization": f"Bearer {token}"}
    base = f"/threads/{thread_id}"
    if op == "create":
        return http.post("/threads", json={"metadata": {"owner": "forged"}}, headers=headers)
    if op == "search":
        return http.post("/threads/search", json={"limit": 1000}, headers=headers)
    if op == "get":
        return http.get(base, headers=headers)
    if op == "state":
        return http.get(f"{base}/state", headers=headers)
    if op == "history":
        return http.post(f"{base}/history", json={"limit": 5}, headers=headers)
    if op == "update":
        return http.patch(base, json={"metadata": {"note": "touched"}}, headers=headers)
    if op == "delete":
        return http.delete(base, headers=headers)
    if op == "copy":
        return http.post(f"{base}/copy", headers=headers)
    body = {"assistant_id": "chat", "input": _ask("Who grafts quince branches?")}
    return http.post(f"{base}/runs/wait", json=body, headers=headers)


async def test_generated_thread_requests_never_cross_users(langgraph_server, people, services):
    """Hypothesis drives create/get/state/history/update/search/delete/copy/run as three
    users over each other's threads: only the owner's requests succeed, nobody's search
    lists another's thread, and a refused request changes nothing the owner sees."""
    import asyncio

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from agent.library.accounts import add_user

    third, token_c = await add_user(services, f"lg-c-{uuid.uuid4().hex[:6]}")
    tokens = {"a": people["a"][1], "b": people["b"][1], "c": token_c}
    owner: dict[str, str] = {}  # thread id -> user key
    deleted: set[str] = set()
    tally = {"requests": 0, "refused": 0, "leaks": 0}
    step = st.tuples(
        st.sampled_from(sorted(tokens)),
        st.sampled_from(THREAD_OPS),
        st.integers(0, 1000),
    )

    @settings(
        max_examples=60,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(st.lists(step, min_size=3, max_size=10))
    def run(steps):
        with httpx.Client(base_url=langgraph_server, timeout=30) as http:
            for who, op, pick in steps:
                known = sorted(owner)
                if op not in ("create", "search") and not known:
                    op = "create"
                target = known[pick % len(known)] if known else None
                if op == "run" and (target in deleted or pick % 4):  # runs are slow: 1 in 4
                    op = "get"
                r = _thread_request(http, tokens[who], op, target)
                tally["requests"] += 1
                if op == "create":
                    assert r.status_code == 200, r.text
                    owner[r.json()["thread_id"]] = who
                    continue
                if op == "search":
                    assert r.status_code == 200, r.text
                    listed = {t["thread_id"] for t in r.json()}
                    foreign = {t for t in listed if owner.get(t, who) != who}
                    tally["leaks"] += len(foreign)
                    assert not foreign, (who, foreign)
                    assert {t for t, o in owner.items() if o == who} - deleted <= listed
                    continue
                mine = owner[target] == who
                if not mine or target in deleted:
                    tally["refused"] += 1
                    if r.status_code < 400:
                        tally["leaks"] += 1
                    # copying a thread one cannot see: 409, as for a thread that never existed
                    refused = (403, 404, 409) if op == "copy" else (403, 404)
                    assert r.status_code in refused, (who, op, r.status_code, r.text)
                    continue
                assert r.status_code < 300, (who, op, r.status_code, r.text)
                if op == "delete":
                    deleted.add(target)
                elif op == "copy":
                    owner[r.json()["thread_id"]] = who  # a copy belongs to the copier

    await asyncio.to_thread(run)
    assert tally["leaks"] == 0
    assert tally["requests"] >= 250 and tally["refused"] >= 50, tally
    # the owners' threads are intact: each live one still answers its owner
    with httpx.Client(base_url=langgraph_server, timeout=60) as http:
        for thread_id, who in owner.items():
            r = _thread_request(http, tokens[who], "get", thread_id)
            assert r.status_code == (404 if thread_id in deleted else 200), (thread_id, r.text)
    print(f"thread requests {tally['requests']}, refused {tally['refused']}, leaks 0")
