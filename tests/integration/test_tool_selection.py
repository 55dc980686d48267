"""ReAct tool selection (seed 003) in the chat graph: the model sees the passages and the
offered tools, searches again or goes to the web, within the per-turn cap; plus the pieces
recorded with each answer (tool log, removed citations) and the chat persona."""

from __future__ import annotations

import json
import uuid

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import SecretStr
from sqlalchemy import text

import agent.chat.web as chat_web
from agent.chat.tool_selection import (
    KNOWLEDGE,
    SUMMARY,
    WEB,
    ToolDecision,
    decide_tool,
    decision_schema,
    parse_decision,
)
from agent.ingest.pipeline import ingest_bytes
from agent.models import ExtractiveChatModel
from agent.retrieval.citations import cited_ids
from agent.web_search import WebResult
from graphs.chat import graph
from graphs.context import Context

LIGHTHOUSE = (
    "The lighthouse keeper Tomas polishes the great lamp every evening before the storm. "
    "He has kept the Skerry light for thirty years."
)
BAKERY = (
    "The village bakery on the harbour sells rye bread and honey cakes on market days. "
    "Its oven was built by the keeper's grandmother."
)


async def _library(services, new_user):
    user = await new_user("react")
    await ingest_bytes(services, user.id, LIGHTHOUSE.encode(), "lighthouse.txt")
    await ingest_bytes(services, user.id, BAKERY.encode(), "bakery.txt")
    return user


async def _saved(services, chat_id: str):
    async with services.engine.connect() as conn:
        return (
            await conn.execute(
                text(
                    "SELECT retrieval_metrics, citations_removed, model_used, content "
                    "FROM chat_messages WHERE chat_id = :c AND role = 'assistant'"
                ),
                {"c": uuid.UUID(chat_id)},
            )
        ).one()


def _ask(question: str):
    return {"messages": [HumanMessage(question)]}


# --- the decision itself -----------------------------------------------------------------


def test_decisions_parse_only_offered_tools():
    tools = [KNOWLEDGE]
    assert parse_decision('{"tool": "search_knowledge", "query": "oven"}', tools) == ToolDecision(
        KNOWLEDGE, "oven"
    )
    assert parse_decision('{"tool": "web_search", "query": "x"}', tools).tool == "none"
    assert parse_decision("I would search the web", tools).tool == "none"
    assert parse_decision('{"tool_name": "search_knowledge", "arguments": {"query": "q"}}', tools)
    # the model said the passages answer it: no second search
    judged = '{"passages_answer_it": true, "tool": "search_knowledge", "query": "q"}'
    assert parse_decision(judged, tools).tool == "none"
    schema = decision_schema([KNOWLEDGE, WEB])
    assert schema["properties"]["tool"]["enum"] == ["none", KNOWLEDGE, WEB]
    assert list(schema["properties"])[0] == "passages_answer_it"


class JsonModel(BaseChatModel):
    """A local-style model: replies with JSON and records the generation kwargs."""

    reply: str = ""
    seen: list = []

    @property
    def _llm_type(self) -> str:
        return "json-fake"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.seen.append((messages, kwargs))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(self.reply))])


async def test_local_models_decide_through_schema_constrained_json():
    model = JsonModel(reply='{"passages_answer_it": false, "tool": "web_search", "query": "news"}')
    decision = await decide_tool(
        model, "What happened today?", [KNOWLEDGE, WEB], context=None, constrained_json=True
    )
    assert decision == ToolDecision(WEB, "news")
    messages, kwargs = model.seen[0]
    assert kwargs["response_format"]["type"] == "json_object"
    assert kwargs["response_format"]["schema"]["properties"]["tool"]["enum"] == [
        "none",
        KNOWLEDGE,
        WEB,
    ]
    assert "web_search(query)" in messages[0].content
    # passages, when relevant, are shown before the question
    await decide_tool(
        model, "Who?", [KNOWLEDGE], context="#chk_1a2b3c4d Tomas.", constrained_json=True
    )
    assert "#chk_1a2b3c4d Tomas." in model.seen[-1][0][-1].content


async def test_models_without_tools_answer_directly():
    decision = await decide_tool(ExtractiveChatModel(), "Who keeps the light?", [KNOWLEDGE])
    assert decision.tool == "none"


# --- through the graph ---------------------------------------------------------------------


async def test_the_model_searches_again_and_answers_from_both_searches(
    services, new_user, scripted
):
    user = await _library(services, new_user)
    scripted.decisions = [(KNOWLEDGE, "who built the bakery oven"), None]
    state = await graph.ainvoke(
        _ask("What does the lighthouse keeper polish?"), context=Context(user=user.name)
    )
    assert state["route"] == "hybrid" and "lamp" in state["answer"]
    # web search is not configured: the documents and their summaries are offered
    assert scripted.offered == [[KNOWLEDGE, SUMMARY], [KNOWLEDGE, SUMMARY]]
    texts = " ".join(c["text"] for c in state["citations"])
    assert "lamp" in texts
    assert state["tool_log"] == [
        {"tool": KNOWLEDGE, "query": "who built the bakery oven", "outcome": "1 new passages"}
    ]
    # the second decision saw the first call and the passages it added
    second = scripted.prompts[1][-1].content
    assert "search_knowledge('who built the bakery oven')" in second and "honey cakes" in second
    assert set(cited_ids(state["answer"])) <= set(state["chunk_map"])
    metrics, removed, model_used, _ = await _saved(services, state["chat_id"])
    assert metrics["tools"] == state["tool_log"] and removed == 0
    assert model_used == "investigator_extractive"


async def test_tool_calls_are_capped_per_turn(services, new_user, scripted, monkeypatch):
    user = await _library(services, new_user)
    monkeypatch.setattr(services.settings, "max_tool_calls", 2)
    scripted.decisions = [(KNOWLEDGE, f"query {n}") for n in range(6)]
    state = await graph.ainvoke(_ask("Who polishes the lamp?"), context=Context(user=user.name))
    assert [e["query"] for e in state["tool_log"]] == ["query 0", "query 1"]
    assert len(scripted.decisions) == 4  # no third decision was even asked for
    assert state["answer"]


async def test_repeating_the_same_call_ends_the_loop(services, new_user, scripted):
    user = await _library(services, new_user)
    scripted.decisions = [(KNOWLEDGE, "oven"), (KNOWLEDGE, "oven"), (KNOWLEDGE, "other")]
    state = await graph.ainvoke(_ask("Who polishes the lamp?"), context=Context(user=user.name))
    assert [e["query"] for e in state["tool_log"]] == ["oven"]


async def test_web_results_join_the_documents_and_both_citations_are_guarded(
    services, new_user, scripted, monkeypatch
):
    user = await _library(services, new_user)

    async def fake_search(query, settings):
        assert query == "skerry light history"
        return [
            WebResult(
                "#web_1",
                "Skerry light",
                "https://lights.example/skerry",
                "Lit in 1851.",
                "lights.example",
            )
        ]

    monkeypatch.setattr(services.settings, "serpapi_api_key", SecretStr("test-key"))
    monkeypatch.setattr(chat_web, "search_web", fake_search)
    # the passages answer it: documents first, the web is not offered
    scripted.decisions = [None]
    covered = await graph.ainvoke(
        _ask("What does the lighthouse keeper polish?"), context=Context(user=user.name)
    )
    assert scripted.offered[0] == [KNOWLEDGE, SUMMARY] and covered["tool_log"] == []
    chk = next(iter(covered["chunk_map"]))
    # nothing relevant: the web is offered; the model then also searches the documents, and
    # its answer cites a web result, a real chunk and a made-up chunk id
    scripted.offered.clear()
    scripted.decisions = [
        (WEB, "skerry light history"),
        (KNOWLEDGE, "What does the lighthouse keeper polish?"),
        None,
    ]
    scripted.answer = f"The lamp is polished {chk}. The light was lit in 1851 #web_1 #chk_deadbeef."
    second = await graph.ainvoke(
        _ask("Who painted the Mona Lisa?"), context=Context(user=user.name)
    )
    assert scripted.offered[0] == [KNOWLEDGE, SUMMARY, WEB]
    assert [e["tool"] for e in second["tool_log"]] == [WEB, KNOWLEDGE]
    assert second["model_used"] == "web_search_extractive"
    assert "#chk_deadbeef" not in second["answer"] and "#web_1" in second["answer"]
    kinds = {c.get("kind", "chunk") for c in second["citations"]}
    assert kinds == {"web", "chunk"}
    assert "https://lights.example/skerry" in second["sources"]
    assert second["citations_removed"] == 1
    _, removed, _, content = await _saved(services, second["chat_id"])
    assert removed == 1 and "#chk_deadbeef" not in content


async def test_without_tool_selection_the_graph_never_asks(
    services, new_user, scripted, monkeypatch
):
    user = await _library(services, new_user)
    monkeypatch.setattr(services.settings, "tool_selection", False)
    scripted.decisions = [(KNOWLEDGE, "oven")]
    state = await graph.ainvoke(_ask("Who polishes the lamp?"), context=Context(user=user.name))
    assert scripted.offered == [] and state["tool_log"] == []
    # ... and the per-run context switch turns it on
    on = await graph.ainvoke(
        _ask("Who polishes the lamp?"), context=Context(user=user.name, tool_selection=True)
    )
    assert scripted.offered and on["tool_log"]


async def test_unset_tool_selection_is_on_for_hosted_models_and_off_for_the_local_one(
    services, new_user, scripted, monkeypatch
):
    user = await _library(services, new_user)
    monkeypatch.setattr(services.settings, "tool_selection", None)
    monkeypatch.setattr(services.settings, "chat_model", "local")
    scripted.decisions = [(KNOWLEDGE, "oven")]
    off = await graph.ainvoke(_ask("Who polishes the lamp?"), context=Context(user=user.name))
    assert scripted.offered == [] and off["tool_log"] == []
    monkeypatch.setattr(services.settings, "chat_model", "openai:gpt-4o-mini")
    on = await graph.ainvoke(_ask("Who polishes the lamp?"), context=Context(user=user.name))
    assert scripted.offered and on["tool_log"]
    # the run's own model decides: the local one named for this run gets no tools
    scripted.offered.clear()
    local = await graph.ainvoke(
        _ask("Who polishes the lamp?"), context=Context(user=user.name, chat_model="local")
    )
    assert scripted.offered == [] and local["tool_log"] == []


# --- persona -----------------------------------------------------------------------------


async def test_a_chat_keeps_its_persona(services, new_user, recording):
    model = recording
    user = await _library(services, new_user)
    chat = str(uuid.uuid4())
    persona = "a patient tutor for twelve-year-olds"
    await graph.ainvoke(
        _ask("Who polishes the lamp?"),
        context=Context(user=user.name, chat_id=chat, persona=persona),
    )
    assert persona in model.prompts[-1][0].content
    await graph.ainvoke(_ask("And the bakery?"), context=Context(user=user.name, chat_id=chat))
    assert persona in model.prompts[-1][0].content  # kept with the chat
    other = await new_user("no-persona")
    await graph.ainvoke(_ask("hello"), context=Context(user=other.name))
    assert persona not in json.dumps([str(m.content) for m in model.prompts[-1]])
