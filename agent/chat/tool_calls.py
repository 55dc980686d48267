"""The tool calls of a chat turn (seed 003): the one the model chose, run. ``read_summary``
is here: the stored summaries of the books in scope, added to the turn as background for the
answer (they are not passages, so they are not cited; the passages found by retrieval are).
``search_knowledge`` and ``web_search`` live with retrieval and the web.

``state`` is the chat graph's state; the function returns a partial update of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent.chat.retrieval_step import call_knowledge_tool
from agent.chat.tool_selection import SUMMARY, WEB
from agent.chat.web import call_web_tool
from agent.db.scope import SearchScope
from agent.library.book_summaries import read_summaries
from agent.services import Services

SUMMARY_SHARE = 0.4
"""Most of the model's context budget the summaries may take."""


async def call_summary_tool(
    services: Services, state: Mapping[str, Any], *, spec: str, scope: SearchScope
) -> dict:
    """Read the summaries of the books in ``scope`` (best matching the decision's query
    first) into ``summary_context``, within a share of the budget of the model named by
    ``spec``; the call is logged in ``tool_log``."""
    settings = services.settings
    query = state["decision"]["query"]
    budget = int(settings.context_budget(spec) * SUMMARY_SHARE)
    found = await read_summaries(services, scope, query, max_chars=budget)
    log = [
        *(state.get("tool_log") or []),
        {
            "tool": state["decision"]["tool"],
            "query": query,
            "outcome": f"{len(found)} characters of book summaries" if found else "no summary",
        },
    ]
    return {"tool_log": log, "summary_context": found} if found else {"tool_log": log}


async def call_chosen_tool(
    services: Services, state: Mapping[str, Any], *, spec: str, scope: SearchScope
) -> dict:
    """Run the tool the turn's ``decision`` names (documents, summaries or the web) and
    return what it adds to the turn."""
    tool = state["decision"]["tool"]
    if tool == WEB:
        return await call_web_tool(services.settings, state)
    if tool == SUMMARY:
        return await call_summary_tool(services, state, spec=spec, scope=scope)
    return await call_knowledge_tool(services, state, spec=spec, scope=scope)
