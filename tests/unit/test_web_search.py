"""The SerpAPI ``web_search`` tool, against canned SerpAPI payloads (never the network)."""

from __future__ import annotations

import json
import re
import threading
import time

import pytest
import requests

from agent import prompts
from agent.config import Settings
from agent.retrieval.citations import cited_ids
from agent.web_search import (
    NO_RESULTS,
    WebResult,
    WebSearchError,
    format_web_results,
    search_web,
    web_citations,
    web_search_available,
)
from tools.web_search import web_search_tool

KEY = "test-serpapi-key-0123456789"
CHUNK_ID = re.compile(r"#chk_[0-9a-f]{8}")

PAYLOAD = {
    "search_metadata": {"id": "abc", "status": "Success"},
    "search_parameters": {"engine": "google", "q": "tallest building"},
    "answer_box": {
        "type": "organic_result",
        "title": "Burj Khalifa - Wikipedia",
        "link": "https://en.wikipedia.org/wiki/Burj_Khalifa",
        "displayed_link": "https://en.wikipedia.org › wiki › Burj_Khalifa",
        "answer": "828 m",
        "snippet": "The Burj Khalifa in Dubai is the world's tallest building at 828 metres.",
    },
    "organic_results": [
        {
            "position": 1,
            "title": "Burj Khalifa - Wikipedia",
            "link": "https://en.wikipedia.org/wiki/Burj_Khalifa",
            "displayed_link": "https://en.wikipedia.org › wiki › Burj_Khalifa",
            "snippet": "Duplicate of the answer box link: dropped.",
            "source": "Wikipedia",
        },
        {
            "position": 2,
            "title": "List of [tallest] buildings",
            "link": "https://www.ctbuh.org/tallest",
            "displayed_link": "https://www.ctbuh.org › tallest",
            "snippet": "The  Council on Tall Buildings\nranks the 100 tallest buildings.",
            "date": "Mar 3, 2025",
            "source": "CTBUH",
        },
        {
            "position": 3,
            "title": "Merdeka 118",
            "link": "https://news.example.com/merdeka-118",
            "snippet": "Merdeka 118 in Kuala Lumpur is the second tallest.",
        },
        {"position": 4, "title": "No link: skipped", "snippet": "x"},
    ],
}


class FakeSearch:
    """Stands in for ``serpapi.GoogleSearch``: records its params, returns a canned dict."""

    def __init__(self, payload=None, *, error: Exception | None = None, delay: float = 0.0):
        self.payload = payload
        self.error = error
        self.delay = delay
        self.params: dict | None = None
        self.timeout: float | None = 60000
        self.thread: threading.Thread | None = None

    def __call__(self, params: dict) -> FakeSearch:
        self.params = params
        return self

    def get_dict(self) -> dict:
        self.thread = threading.current_thread()
        if self.delay:
            time.sleep(self.delay)
        if self.error is not None:
            raise self.error
        return self.payload


def make_settings(key: str | None = KEY, **kw) -> Settings:
    return Settings(serpapi_api_key=key, _env_file=None, **kw)


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any real SerpAPI HTTP request fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("web_search tests must not touch the network")

    monkeypatch.setattr("serpapi.serp_api_client.requests.get", refuse)


# --- configuration -----------------------------------------------------------------------------


def test_available_only_with_a_key():
    assert web_search_available(make_settings())
    assert not web_search_available(make_settings(None))
    assert not web_search_available(make_settings("   "))
    assert web_search_tool(make_settings(None)) is None
    assert web_search_tool(make_settings("")) is None
    assert KEY not in repr(make_settings())  # a SecretStr: never printed


def test_key_from_serpapi_env_names(monkeypatch):
    monkeypatch.delenv("QUIRE_SERPAPI_API_KEY", raising=False)
    monkeypatch.delenv("SERPAPI_API_KEY", raising=False)
    assert Settings(_env_file=None).serpapi_api_key is None
    monkeypatch.setenv("SERPAPI_API_KEY", "plain")
    assert Settings(_env_file=None).serpapi_api_key.get_secret_value() == "plain"
    monkeypatch.setenv("QUIRE_SERPAPI_API_KEY", "prefixed")
    assert Settings(_env_file=None).serpapi_api_key.get_secret_value() == "prefixed"
    defaults = Settings(_env_file=None)
    assert defaults.web_search_results == 5 and defaults.web_search_timeout_seconds == 10.0


def test_prompts_for_web_answers():
    assert "SERPAPI_API_KEY" in prompts.WEB_NOT_CONFIGURED
    assert "not configured" in prompts.WEB_NOT_CONFIGURED
    system = prompts.WEB_ANSWER_SYSTEM.format(name="Quire")
    assert "#web_1" in system and "#chk_" not in system


# --- searching and parsing ---------------------------------------------------------------------


async def test_answer_box_first_then_organic_results():
    fake = FakeSearch(PAYLOAD)
    results = await search_web("  tallest building ", make_settings(), client_factory=fake)
    assert fake.params == {"engine": "google", "q": "tallest building", "api_key": KEY, "num": 5}
    assert fake.timeout == 10.0
    assert fake.thread is not threading.main_thread()  # ran off the event loop

    assert [r.citation_id for r in results] == ["#web_1", "#web_2", "#web_3"]
    box, ctbuh, merdeka = results
    assert box.title == "Burj Khalifa - Wikipedia"
    assert box.url == "https://en.wikipedia.org/wiki/Burj_Khalifa"
    assert box.source == "en.wikipedia.org"
    assert box.snippet.startswith("828 m. The Burj Khalifa")
    assert ctbuh == WebResult(
        "#web_2",
        "List of [tallest] buildings",
        "https://www.ctbuh.org/tallest",
        "The Council on Tall Buildings ranks the 100 tallest buildings.",
        "ctbuh.org",
        "Mar 3, 2025",
    )
    assert merdeka.source == "news.example.com" and merdeka.date is None
    for r in results:
        assert not CHUNK_ID.search(r.citation_id)
        assert re.fullmatch(r"#web_[1-9][0-9]*", r.citation_id)


async def test_results_are_capped_at_the_setting():
    results = await search_web(
        "q", make_settings(web_search_results=2), client_factory=FakeSearch(PAYLOAD)
    )
    assert [r.citation_id for r in results] == ["#web_1", "#web_2"]


async def test_answer_box_variants():
    only_highlight = {
        "answer_box": {"title": "Capital", "snippet_highlighted_words": ["Canberra"]},
        "organic_results": [{"title": "Canberra", "link": "https://gov.au/canberra"}],
    }
    results = await search_web("q", make_settings(), client_factory=FakeSearch(only_highlight))
    assert results[0].snippet == "Canberra" and results[0].source == "google.com"
    assert results[0].url == "" and results[1].citation_id == "#web_2"
    assert results[1].snippet == ""
    text = format_web_results(results)
    assert text.startswith("#web_1 Capital — google.com\nCanberra")
    assert "#web_2 [Canberra — gov.au](https://gov.au/canberra)" in text

    as_list = {"answer_box_list": [{"result": "42", "link": "https://calc.example/x"}]}
    (only,) = await search_web("q", make_settings(), client_factory=FakeSearch(as_list))
    assert only.snippet == "42" and only.title == "Answer box" and only.source == "calc.example"


async def test_empty_payloads_give_no_results():
    settings = make_settings()
    assert await search_web("q", settings, client_factory=FakeSearch({})) == []
    no_results = {
        "search_metadata": {"status": "Success"},
        "error": "Google hasn't returned any results for this query.",
    }
    assert await search_web("q", settings, client_factory=FakeSearch(no_results)) == []
    assert format_web_results([]) == NO_RESULTS


async def test_serpapi_error_payload_raises_a_clear_error():
    bad_key = {
        "error": "Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key"
    }
    with pytest.raises(WebSearchError, match=r"^SerpAPI returned an error: Invalid API key"):
        await search_web("q", make_settings(), client_factory=FakeSearch(bad_key))
    assert issubclass(WebSearchError, RuntimeError)


async def test_network_errors_are_wrapped_without_leaking_the_key():
    error = requests.ConnectionError(
        f"HTTPSConnectionPool(host='serpapi.com'): Max retries exceeded with url: /search?q=x&api_key={KEY}"
    )
    with pytest.raises(WebSearchError) as info:
        await search_web("q", make_settings(), client_factory=FakeSearch(error=error))
    message = str(info.value)
    assert message.startswith("SerpAPI request failed (ConnectionError)")
    assert KEY not in message and "api_key=***" in message

    broken = json.JSONDecodeError("Expecting value", "<html>", 0)
    with pytest.raises(WebSearchError, match="JSONDecodeError"):
        await search_web("q", make_settings(), client_factory=FakeSearch(error=broken))

    with pytest.raises(WebSearchError, match="unexpected response"):
        await search_web("q", make_settings(), client_factory=FakeSearch(["not", "a", "dict"]))


async def test_timeout_and_bad_input():
    slow = FakeSearch(PAYLOAD, delay=0.5)
    with pytest.raises(WebSearchError, match=r"did not answer within 0.05 seconds"):
        await search_web("q", make_settings(web_search_timeout_seconds=0.05), client_factory=slow)
    with pytest.raises(WebSearchError, match="non-empty query"):
        await search_web("   ", make_settings(), client_factory=FakeSearch(PAYLOAD))
    with pytest.raises(WebSearchError, match="not configured: set SERPAPI_API_KEY"):
        await search_web("q", make_settings(None), client_factory=FakeSearch(PAYLOAD))


async def test_default_client_is_serpapi_google_search(monkeypatch):
    """Without a factory the real ``serpapi.GoogleSearch`` is used (HTTP faked here)."""
    calls = []

    class Response:
        text = json.dumps(PAYLOAD)

    def fake_get(url, params, timeout):
        calls.append((url, dict(params), timeout))
        return Response()

    monkeypatch.setattr("serpapi.serp_api_client.requests.get", fake_get)
    results = await search_web("tallest", make_settings(web_search_timeout_seconds=3))
    assert len(results) == 3
    ((url, params, timeout),) = calls
    assert url == "https://serpapi.com/search" and timeout == 3
    assert params["engine"] == "google" and params["q"] == "tallest"
    assert params["api_key"] == KEY and params["num"] == 5


# --- formatting and citations ------------------------------------------------------------------


async def test_format_and_citations():
    results = await search_web("q", make_settings(), client_factory=FakeSearch(PAYLOAD))
    text = format_web_results(results)
    blocks = text.split("\n\n")
    assert len(blocks) == 3
    assert blocks[0] == (
        "#web_1 [Burj Khalifa - Wikipedia — en.wikipedia.org]"
        "(https://en.wikipedia.org/wiki/Burj_Khalifa)\n"
        "828 m. The Burj Khalifa in Dubai is the world's tallest building at 828 metres."
    )
    # brackets in titles would break the markdown link
    assert blocks[1].startswith(
        "#web_2 [List of (tallest) buildings — ctbuh.org](https://www.ctbuh.org/tallest) (Mar 3, 2025)\n"
    )
    assert not CHUNK_ID.search(text) and cited_ids(text) == []

    citations = web_citations(results)
    assert [c["id"] for c in citations] == ["#web_1", "#web_2", "#web_3"]
    assert all(c["kind"] == "web" for c in citations)
    assert citations[1] == {
        "id": "#web_2",
        "title": "List of [tallest] buildings",
        "url": "https://www.ctbuh.org/tallest",
        "snippet": "The Council on Tall Buildings ranks the 100 tallest buildings.",
        "source": "ctbuh.org",
        "date": "Mar 3, 2025",
        "kind": "web",
    }


# --- the LangChain tool ------------------------------------------------------------------------


async def test_tool_returns_formatted_results():
    search = web_search_tool(make_settings(), client_factory=FakeSearch(PAYLOAD))
    assert search is not None and search.name == "web_search"
    assert "#web_N" in search.description and "current events" in search.description
    assert list(search.args) == ["query"]
    out = await search.ainvoke({"query": "tallest building"})
    assert out.startswith("#web_1 [Burj Khalifa") and "#web_3" in out


async def test_tool_returns_an_error_string_instead_of_raising():
    bad_key = {"error": "Invalid API key."}
    search = web_search_tool(make_settings(), client_factory=FakeSearch(bad_key))
    out = await search.ainvoke({"query": "anything"})
    assert out == "Web search failed: SerpAPI returned an error: Invalid API key."

    down = FakeSearch(error=requests.ConnectionError(f"no route, api_key={KEY}"))
    out = await web_search_tool(make_settings(), client_factory=down).ainvoke({"query": "x"})
    assert out.startswith("Web search failed: SerpAPI request failed (ConnectionError)")
    assert KEY not in out

    empty = web_search_tool(make_settings(), client_factory=FakeSearch({}))
    assert await empty.ainvoke({"query": "x"}) == NO_RESULTS


async def test_answer_already_in_the_snippet_is_not_repeated():
    box = {
        "answer_box": {
            "answer": "Canberra",
            "snippet": "The capital is Canberra.",
            "link": "https://a.au",
        }
    }
    (only,) = await search_web("q", make_settings(), client_factory=FakeSearch(box))
    assert only.snippet == "The capital is Canberra."
