"""Which tools the ReAct step offers (seed 003, documents first): the documents and the book
summaries always; the web only with a key, and then only when the passages missed or the
user asked for the web."""

from __future__ import annotations

from pydantic import SecretStr

from agent.chat.tool_selection import KNOWLEDGE, SUMMARY, WEB, offered_tools, tools_by_default
from agent.config import Settings


def _state(question: str, relevant: bool) -> dict:
    return {"question": question, "relevant": relevant}


def test_without_a_web_key_the_web_is_never_offered():
    settings = Settings(serpapi_api_key=None)
    for relevant in (True, False):
        assert offered_tools(settings, _state("Search the web for the news", relevant)) == [
            KNOWLEDGE,
            SUMMARY,
        ]


def test_with_a_key_the_web_waits_for_a_miss_or_an_explicit_request():
    settings = Settings(serpapi_api_key=SecretStr("key"))
    assert WEB not in offered_tools(settings, _state("Who won the Caucus-race?", True))
    assert offered_tools(settings, _state("Who won the Caucus-race?", False)) == [
        KNOWLEDGE,
        SUMMARY,
        WEB,
    ]
    assert WEB in offered_tools(settings, _state("Search the web for Lewis Carroll", True))


def test_tools_are_on_by_default_for_hosted_models_only_unless_set():
    assert tools_by_default(Settings(tool_selection=None), "openai:gpt-4o-mini")
    assert not tools_by_default(Settings(tool_selection=None), "local")
    assert not tools_by_default(Settings(tool_selection=None), "extractive")
    assert tools_by_default(Settings(tool_selection=True), "local")
    assert not tools_by_default(Settings(tool_selection=False), "openai:gpt-4o-mini")
