"""Secrets stay secret: API tokens are stored only as sha256 hashes, API keys never reach
logs or error messages, ``.env`` is git-ignored, and error responses carry no stack traces."""

from __future__ import annotations

import hashlib
import logging
import uuid

import httpx
import pathspec
import pytest
import requests
from langchain_core.messages import HumanMessage
from pydantic import SecretStr
from sqlalchemy import text

import agent.web_search as web_module
from agent.config import Settings
from agent.web_search import WebSearchError, search_web
from tests.support.paths import ROOT

SERPAPI_KEY = "serp-secret-" + uuid.uuid4().hex
OPENAI_KEY = "sk-test-" + uuid.uuid4().hex


# --- tokens --------------------------------------------------------------------------------


async def test_tokens_are_stored_only_as_sha256(services):
    from agent.library.accounts import add_user, issue_user_token

    user, token = await add_user(services, f"secret-{uuid.uuid4().hex[:6]}")
    _, second = await issue_user_token(services, user.name)
    async with services.engine.connect() as conn:
        rows = (
            (
                await conn.execute(
                    text("SELECT * FROM api_tokens WHERE user_id = :u"), {"u": user.id}
                )
            )
            .mappings()
            .all()
        )
        everything = (await conn.execute(text("SELECT * FROM api_tokens"))).all()
        users_rows = (await conn.execute(text("SELECT * FROM users"))).all()
    stored = {r["token_hash"] for r in rows}
    assert stored == {hashlib.sha256(t.encode()).hexdigest() for t in (token, second)}
    dump = repr(everything) + repr(users_rows)
    for plain in (token, second):
        assert plain not in dump
        assert plain[len(plain) // 2 :] not in dump  # not even a part of it


async def test_a_token_hash_is_not_a_token(services):
    """Someone who reads the api_tokens table cannot use what is there."""
    from agent.library.accounts import add_user
    from api.app import app

    user, token = await add_user(services, f"secret-{uuid.uuid4().hex[:6]}")
    digest = hashlib.sha256(token.encode()).hexdigest()
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        ok = await client.get("/api/usage", headers={"Authorization": f"Bearer {token}"})
        stolen = await client.get("/api/usage", headers={"Authorization": f"Bearer {digest}"})
    assert ok.status_code == 200
    assert stolen.status_code == 401 and token not in stolen.text


# --- API keys ------------------------------------------------------------------------------


@pytest.fixture
def keyed(monkeypatch):
    """Settings with a SerpAPI key from the environment and an OpenAI-style key set."""
    monkeypatch.setenv("QUIRE_SERPAPI_API_KEY", SERPAPI_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    return Settings()


class LeakyClient:
    """A SerpAPI client whose failure message carries the key (as requests' errors carry
    the request URL, ``...?api_key=...``) and which logs its request URL at DEBUG."""

    def __init__(self, params):
        self.params = params

    def get_dict(self):
        url = f"https://serpapi.com/search?q={self.params['q']}&api_key={self.params['api_key']}"
        raise requests.ConnectionError(f"Max retries exceeded with url: {url} ({OPENAI_KEY!r})")


def test_settings_never_print_the_keys(keyed):
    assert keyed.serpapi_api_key.get_secret_value() == SERPAPI_KEY
    for shown in (repr(keyed), str(keyed), keyed.model_dump_json()):
        assert SERPAPI_KEY not in shown and OPENAI_KEY not in shown


async def test_a_failing_web_search_hides_the_key(keyed, caplog):
    caplog.set_level(logging.DEBUG)
    with pytest.raises(WebSearchError) as info:
        await search_web("tide tables", keyed, client_factory=LeakyClient)
    message = str(info.value)
    assert "api_key=***" in message
    assert SERPAPI_KEY not in message
    assert SERPAPI_KEY not in caplog.text and OPENAI_KEY not in caplog.text
    assert info.value.__cause__ is None and info.value.__suppress_context__  # `from None`


async def test_a_failing_web_search_in_a_chat_hides_the_key(
    services, new_user, keyed, monkeypatch, caplog
):
    """The chat graph's web path with a SerpAPI client that fails with the key in its error:
    the answer, the saved message and the logs never contain the key."""
    import graphs.chat  # noqa: F401  (the graph module reads settings from services)
    from graphs.chat import graph
    from graphs.context import Context

    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr(services.settings, "serpapi_api_key", SecretStr(SERPAPI_KEY))
    monkeypatch.setattr(web_module, "GoogleSearch", LeakyClient)
    user = await new_user("secret-web")
    state = await graph.ainvoke(
        {"messages": [HumanMessage("What is the latest news about tide tables?")]},
        context=Context(user=user.name),
    )
    assert state["route"] == "web_search"
    assert "Web search failed" in state["answer"] and "api_key=***" in state["answer"]
    assert SERPAPI_KEY not in state["answer"]
    async with services.engine.connect() as conn:
        saved = (
            await conn.execute(
                text("SELECT content FROM chat_messages WHERE user_id = :u"), {"u": user.id}
            )
        ).scalars()
        saved_text = " ".join(saved)
    assert SERPAPI_KEY not in saved_text
    assert SERPAPI_KEY not in caplog.text


# --- .env ----------------------------------------------------------------------------------


def _gitignore() -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines((ROOT / ".gitignore").read_text().splitlines())


def test_dotenv_is_git_ignored():
    spec = _gitignore()
    for path in (".env", "api/.env", "agent/sub/.env"):
        assert spec.match_file(path), path
    for data in (".quire/test/pgdata/PG_VERSION", ".venv/bin/python"):  # local data and keys
        assert spec.match_file(data), data
    assert not spec.match_file("agent/config.py")  # the patterns are not ignoring everything


# --- error responses -----------------------------------------------------------------------


@pytest.fixture
async def raw_client(services):
    from api.app import app

    # the app answers 500 itself; do not re-raise the exception into the test
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        yield client


async def test_an_unexpected_error_answers_the_generic_shape(
    services, raw_client, monkeypatch, caplog
):
    import api.routes.chats as chats_routes
    from agent.library.accounts import add_user

    async def explode(*args, **kwargs):
        raise RuntimeError(f"boom in {__file__} with password=hunter2 and {SERPAPI_KEY}")

    monkeypatch.setattr(chats_routes, "month_usage", explode)
    _, token = await add_user(services, f"secret-{uuid.uuid4().hex[:6]}")
    caplog.set_level(logging.ERROR)
    r = await raw_client.get("/api/usage", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 500
    assert r.json() == {"error": {"code": "internal", "message": "Internal server error."}}
    for leak in ("Traceback", "boom", "hunter2", SERPAPI_KEY, ".py", "/work", 'File "'):
        assert leak not in r.text
    assert "boom" in caplog.text  # the server log has it, for the operator


async def test_client_errors_carry_no_internals(services, raw_client):
    from agent.library.accounts import add_user

    _, token = await add_user(services, f"secret-{uuid.uuid4().hex[:6]}")
    headers = {"Authorization": f"Bearer {token}"}
    answers = [
        await raw_client.get("/api/usage"),  # no token
        await raw_client.get("/api/usage", headers={"Authorization": "Bearer nope"}),
        await raw_client.get(f"/api/chats/{uuid.uuid4()}", headers=headers),
        await raw_client.post("/api/search", headers=headers, content=b"{not json"),
        await raw_client.post("/api/search", headers=headers, json={"query": ""}),
        await raw_client.get("/api/chunks/%23chk_zzzz", headers=headers),
    ]
    for r in answers:
        assert 400 <= r.status_code < 500, (r.status_code, r.text)
        body = r.json()
        assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
        assert "Traceback" not in r.text and 'File "' not in r.text and ".py" not in r.text
