"""The web on a chat turn: the results for a current-events question (or the answer that
says why there are none), the prompt and cited answer made from them, and the ReAct
``web_search`` tool call, whose ``#web_N`` ids continue across the turn's calls."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import BaseMessage

from agent import prompts
from agent.chat.answering import Answer, finish_web, web_messages
from agent.config import Settings
from agent.web_search import (
    WebResult,
    WebSearchError,
    format_web_results,
    search_web,
    web_citations,
    web_search_available,
)


def _no_results(text: str) -> Answer:
    return Answer(text=text, route="web_search", model_used="no_context_response")


async def find_on_web(settings: Settings, question: str) -> list[WebResult] | Answer:
    """The web results for ``question``, or the answer that says why there are none (web
    search not configured, or the search failed)."""
    if not web_search_available(settings):
        return _no_results(prompts.WEB_NOT_CONFIGURED)
    try:
        return await search_web(question, settings)
    except WebSearchError as exc:
        return _no_results(f"Web search failed: {exc}")


def web_prompt(settings: Settings, question: str, results: list[WebResult]) -> list[BaseMessage]:
    """Messages for answering ``question`` from the web ``results`` (cited as ``#web_N``)."""
    return web_messages(settings.assistant_name, question, format_web_results(results))


def web_answer(raw: str, results: list[WebResult], *, model: str, tokens: int) -> Answer:
    """The model's answer from ``results`` with its ``#web_N`` citations checked."""
    return finish_web(
        raw, web_citations(results), model_used=f"web_search_{model}", tokens_used=tokens
    )


_WEB_ID = re.compile(r"#web_\d+\b")


def _shift_web_id(web_id: str, offset: int) -> str:
    return f"#web_{int(web_id.removeprefix('#web_')) + offset}"


async def call_web_tool(settings: Settings, state: Mapping[str, Any]) -> dict:
    """Search the web (the ``web_search`` tool, with the decision's query) and add the results
    to the turn's web context; a failed search is logged as the tool's outcome."""
    tool, query = state["decision"]["tool"], state["decision"]["query"]
    log = list(state.get("tool_log") or [])
    try:
        results = await search_web(query, settings)
    except WebSearchError as exc:
        log.append({"tool": tool, "query": query, "outcome": f"failed: {exc}"})
        return {"tool_log": log}
    # ids continue after earlier web calls' so every #web_N stays unique this turn
    known = state.get("web_results") or []
    offset = len(known)
    cited = [{**c, "id": _shift_web_id(c["id"], offset)} for c in web_citations(results)]
    text = _WEB_ID.sub(lambda m: _shift_web_id(m.group(0), offset), format_web_results(results))
    log.append({"tool": tool, "query": query, "outcome": f"{len(cited)} web results"})
    context = "\n\n".join(p for p in (state.get("web_context"), text) if p)
    return {"tool_log": log, "web_results": known + cited, "web_context": context}
