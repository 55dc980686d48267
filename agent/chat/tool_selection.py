"""ReAct-style tool selection (seed 003): with the retrieved passages in view, the model
decides to answer from them, to call a tool first, or to answer from general knowledge.

Hosted models decide through native tool calling; the local llama.cpp model cannot call
tools on its own (it prints the call as text), so it answers a JSON object constrained by a
schema (``response_format``), whose ``tool`` field can only name an offered tool.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.constants import TAG_NOSTREAM

from agent import prompts
from agent.chat.routing import asks_for_web
from agent.config import Settings
from agent.models import is_hosted
from agent.web_search import web_search_available

NONE = "none"
KNOWLEDGE = "search_knowledge"
SUMMARY = "read_summary"
WEB = "web_search"


def tools_by_default(settings: Settings, model_spec: str) -> bool:
    """Whether Path A offers tools when a turn does not say: ``QUIRE_TOOL_SELECTION`` if
    set, else on for a hosted chat model (``model_spec``, the turn's) and off for the
    packaged ones: on the 68-question eval the local 1.5B model matched fewer answers with
    tools (59% vs 63%) at ~5x the time, and the extractive answerer cannot choose tools."""
    if settings.tool_selection is not None:
        return settings.tool_selection
    return is_hosted(model_spec)


@dataclass(frozen=True)
class ToolDecision:
    """What the model chose: ``tool`` is ``none`` or an offered tool's name."""

    tool: str
    query: str = ""

    @property
    def uses_tool(self) -> bool:
        """Whether a tool is to be called before answering."""
        return self.tool != NONE


def decision_schema(tools: list[str]) -> dict:
    """JSON schema of a decision among ``tools`` (and ``none``), for constrained decoding."""
    # the model judges the passages before it picks a tool (constrained output keeps this
    # order): without that first field the local 1.5B model searched again 3 times in 3
    return {
        "type": "object",
        "properties": {
            "passages_answer_it": {"type": "boolean"},
            "tool": {"type": "string", "enum": [NONE, *tools]},
            "query": {"type": "string"},
        },
        "required": ["passages_answer_it", "tool", "query"],
    }


def tool_specs(tools: list[str]) -> list[dict]:
    """OpenAI-format function specs of the offered tools (for native tool calling)."""
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": prompts.TOOL_DESCRIPTIONS[name],
                "parameters": {
                    "type": "object",
                    "properties": {"query": {"type": "string", "description": "Search query."}},
                    "required": ["query"],
                },
            },
        }
        for name in tools
    ]


def decision_messages(
    question: str, tools: list[str], context: str | None, observations: list[str]
) -> list[BaseMessage]:
    """The decision prompt: tools in the system message, passages and past calls after."""
    return [
        SystemMessage(
            prompts.TOOL_DECISION_SYSTEM.format(
                tools="\n".join(f"- {prompts.TOOL_DESCRIPTIONS[t]}" for t in tools)
            )
        ),
        HumanMessage(
            prompts.TOOL_DECISION_USER.format(
                context=prompts.TOOL_DECISION_CONTEXT.format(context=context) if context else "",
                observations=prompts.TOOL_DECISION_OBSERVATIONS.format(
                    observations="\n".join(observations)
                )
                if observations
                else "",
                question=question,
            )
        ),
    ]


def parse_decision(text: str, tools: list[str]) -> ToolDecision:
    """A decision from the model's JSON reply; anything unusable means ``none``."""
    match = re.search(r"\{.*\}", text or "", re.S)
    try:
        data = json.loads(match.group(0)) if match else {}
    except json.JSONDecodeError:
        data = {}
    tool = str(data.get("tool") or data.get("tool_name") or NONE).strip()
    query = data.get("query") or (data.get("arguments") or {}).get("query") or ""
    if tool not in tools or (tool == KNOWLEDGE and data.get("passages_answer_it") is True):
        return ToolDecision(NONE)
    return ToolDecision(tool, str(query).strip())


def _from_tool_calls(message: AIMessage, tools: list[str]) -> ToolDecision:
    for call in message.tool_calls:
        if call["name"] in tools:
            return ToolDecision(call["name"], str(call["args"].get("query", "")).strip())
    return ToolDecision(NONE)


async def decide_tool(
    model: BaseChatModel,
    question: str,
    tools: list[str],
    *,
    context: str | None = None,
    observations: list[str] | None = None,
    constrained_json: bool = False,
) -> ToolDecision:
    """Ask ``model`` whether to answer now or call one of ``tools`` first.

    ``context`` is the retrieved passages when they are relevant (else ``None``);
    ``observations`` lists the calls already made this turn. ``constrained_json`` selects
    schema-constrained JSON (the local model) over native tool calling (hosted models).
    A model that can do neither answers without tools.
    """
    if not tools:
        return ToolDecision(NONE)
    messages = decision_messages(question, tools, context, observations or [])
    config = {"tags": [TAG_NOSTREAM], "run_name": "tool_decision"}  # not a user-facing answer
    if constrained_json:
        bound = model.bind(
            response_format={"type": "json_object", "schema": decision_schema(tools)}
        )
        reply = await bound.ainvoke(messages, config=config)
        return parse_decision(str(reply.content), tools)
    try:
        bound = model.bind_tools(tool_specs(tools))
    except NotImplementedError:
        return ToolDecision(NONE)
    reply = await bound.ainvoke(messages, config=config)
    if isinstance(reply, AIMessage) and reply.tool_calls:
        return _from_tool_calls(reply, tools)
    return parse_decision(str(reply.content), tools)


ANSWER_NOW = {"tool": NONE, "query": ""}
"""The ``decision`` to call no (more) tools and answer."""


def tool_calls_left(settings: Settings, state: Mapping[str, Any]) -> bool:
    """Whether the turn may call another tool (at most ``max_tool_calls``)."""
    return len(state.get("tool_log") or []) < settings.max_tool_calls


def offered_tools(settings: Settings, state: Mapping[str, Any]) -> list[str]:
    """The tools the model may call this step: the documents again and the book summaries;
    the web only when a key is set and either the user asked for it or the passages found
    are not relevant (documents first)."""
    tools = [KNOWLEDGE, SUMMARY]
    if web_search_available(settings) and (
        not state.get("relevant") or asks_for_web(state["question"])
    ):
        tools.append(WEB)
    return tools


async def next_step(
    model: BaseChatModel, settings: Settings, state: Mapping[str, Any], *, constrained_json: bool
) -> dict:
    """The turn's next ``decision`` (seed 003): a tool to call with its query, or none.

    ``state`` is the chat graph's state: the question, the passages when relevant, and the
    tool calls made so far. Repeating an earlier call means answering now."""
    log = state.get("tool_log") or []
    tools = offered_tools(settings, state)
    decision = await decide_tool(
        model,
        state["question"],
        tools,
        context=state["context"] if state.get("relevant") else None,
        observations=[f"{e['tool']}({e['query']!r}): {e['outcome']}" for e in log],
        constrained_json=constrained_json,
    )
    query = decision.query or state.get("search_query") or state["question"]
    if any(e["tool"] == decision.tool and e["query"] == query for e in log):
        return {"decision": dict(ANSWER_NOW)}
    return {"decision": {"tool": decision.tool, "query": query}}
