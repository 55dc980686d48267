"""The ``chat`` graph: route each message to the cheapest path that answers it well.

    START -> route -> direct   -> save -> END      (name question: fixed reply)
                   -> general  -> save             (small talk: short reply, no retrieval)
                   -> retrieve -> generate -> save (hybrid retrieval, cited answer)

Nodes are thin: each calls into ``agent`` and returns a partial state update.
"""

from __future__ import annotations

import uuid
from typing import Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from agent import prompts
from agent.accounts import resolve_user
from agent.answering import (
    Answer,
    chunk_payload,
    finish_grounded,
    general_messages,
    grounded_messages,
)
from agent.chat_log import open_chat, save_turn
from agent.db.scope import SearchScope
from agent.models import achat_model, model_label
from agent.retrieval.knowledge import knowledge_search
from agent.retrieval.search import SearchOptions
from agent.router import classify_route
from agent.services import get_services
from graphs.context import Context
from graphs.state import ChatState, InputState, OutputState


def _last_question(messages: list[BaseMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            content = message.content
            return content if isinstance(content, str) else str(content)
    return ""


def _model_spec(runtime: Runtime[Context], default: str) -> str:
    ctx = runtime.context
    return (ctx.chat_model if ctx and ctx.chat_model else None) or default


def _answer_update(answer: Answer) -> dict:
    return {
        "answer": answer.text,
        "route": answer.route,
        "citations": answer.citations,
        "sources": answer.sources,
        "chunk_map": answer.chunk_map,
        "model_used": answer.model_used,
        "tokens_used": answer.tokens_used,
        "messages": [AIMessage(answer.text, id=str(uuid.uuid4()))],
    }


async def _stream_text(model, messages: list[BaseMessage]) -> tuple[str, int]:
    """Stream a reply (tokens reach LangGraph's ``messages`` stream) and count tokens."""
    text, tokens = "", 0
    async for chunk in model.astream(messages):
        text += chunk.content if isinstance(chunk.content, str) else ""
        if chunk.usage_metadata:
            tokens += chunk.usage_metadata.get("total_tokens", 0)
    return text.strip(), tokens


async def route(state: ChatState, runtime: Runtime[Context]) -> dict:
    """Identify the user and chat, and classify the question."""
    services = await get_services()
    ctx = runtime.context or Context()
    user = await resolve_user(services, ctx.user)
    thread_id = (get_config().get("configurable") or {}).get("thread_id")
    chat_id = (
        uuid.UUID(str(ctx.chat_id or thread_id)) if (ctx.chat_id or thread_id) else uuid.uuid4()
    )
    question = _last_question(state["messages"])
    await open_chat(services, user.id, chat_id, question)
    return {
        "question": question,
        "user_id": str(user.id),
        "chat_id": str(chat_id),
        "route": classify_route(question),
        "retrieved": [],
        "context": "",
        "retrieval": {},
    }


def pick_path(state: ChatState) -> Literal["direct", "general", "retrieve"]:
    """Branch on the route the router chose."""
    return "retrieve" if state["route"] == "hybrid" else state["route"]  # type: ignore[return-value]


async def direct(state: ChatState, runtime: Runtime[Context]) -> dict:
    """The name question: a fixed reply, no model call."""
    services = await get_services()
    text = prompts.NAME_REPLY.format(name=services.settings.assistant_name)
    return _answer_update(Answer(text=text, route="direct", model_used="direct_response"))


async def general(state: ChatState, runtime: Runtime[Context]) -> dict:
    """Small talk: a short reply without retrieval."""
    services = await get_services()
    settings = services.settings
    spec = _model_spec(runtime, settings.chat_model)
    model = await achat_model(spec, settings, settings.temperature_general)
    text, tokens = await _stream_text(
        model, general_messages(settings.assistant_name, state["question"])
    )
    return _answer_update(
        Answer(
            text=text, route="direct", model_used=f"general_{model_label(spec)}", tokens_used=tokens
        )
    )


async def retrieve(state: ChatState, runtime: Runtime[Context]) -> dict:
    """Hybrid search in the user's visible documents and build the cited context."""
    services = await get_services()
    settings = services.settings
    ctx = runtime.context or Context()
    scope = SearchScope(
        user_id=uuid.UUID(state["user_id"]),
        document_ids=tuple(uuid.UUID(d) for d in ctx.document_ids) if ctx.document_ids else None,
        corpus=ctx.corpus,
    )
    spec = _model_spec(runtime, settings.chat_model)
    options = SearchOptions(
        k=ctx.top_k or settings.top_k(spec),
        threshold=settings.threshold_specific,
        query_type="specific",
        expand=settings.query_expansion,
        rerank=settings.rerank_enabled,
    )
    model = None
    if options.expand or options.rerank or settings.compress_context:
        model = await achat_model(spec, settings, 0.0)
    found = await knowledge_search(
        services,
        scope,
        state["question"],
        options,
        max_chars=settings.context_budget(spec),
        model=model,
    )
    built = found.context
    return {
        "retrieval": found.result.metrics.as_dict(),
        "context": built.text,
        "retrieved": [
            chunk_payload(c, settings.citation_preview_chars, built.bodies[c.citation_id])
            for c in built.chunks
        ],
    }


async def generate(state: ChatState, runtime: Runtime[Context]) -> dict:
    """Answer from the context with inline ``#chk_`` citations, then guard them."""
    services = await get_services()
    settings = services.settings
    spec = _model_spec(runtime, settings.chat_model)
    if not state.get("retrieved"):
        return _answer_update(
            Answer(text=prompts.NOTHING_FOUND, route="hybrid", model_used="no_context_response")
        )
    model = await achat_model(spec, settings, settings.temperature_specific)
    raw, tokens = await _stream_text(
        model, grounded_messages(settings.assistant_name, state["question"], state["context"])
    )
    answer = finish_grounded(
        raw,
        state["retrieved"],
        route="hybrid",
        model_used=f"investigator_{model_label(spec)}",
        tokens_used=tokens,
    )
    return _answer_update(answer)


async def save(state: ChatState, runtime: Runtime[Context]) -> dict:
    """Persist both messages of the turn and count usage."""
    services = await get_services()
    answer = Answer(
        text=state["answer"],
        route=state["route"],
        model_used=state["model_used"],
        tokens_used=state.get("tokens_used", 0),
        citations=state.get("citations", []),
        sources=state.get("sources", []),
        chunk_map=state.get("chunk_map", {}),
        retrieved_chunk_ids=[c["chunk_id"] for c in state.get("retrieved", [])],
        retrieval_metrics=state.get("retrieval"),
    )
    await save_turn(
        services,
        uuid.UUID(state["user_id"]),
        uuid.UUID(state["chat_id"]),
        state["question"],
        answer,
    )
    return {}


def build_graph():
    """The uncompiled chat graph (compile with or without a checkpointer)."""
    builder = StateGraph(
        ChatState, input_schema=InputState, output_schema=OutputState, context_schema=Context
    )
    builder.add_node("route", route)
    builder.add_node("direct", direct)
    builder.add_node("general", general)
    builder.add_node("retrieve", retrieve)
    builder.add_node("generate", generate)
    builder.add_node("save", save)
    builder.add_edge(START, "route")
    builder.add_conditional_edges("route", pick_path)
    builder.add_edge("retrieve", "generate")
    for node in ("direct", "general", "generate"):
        builder.add_edge(node, "save")
    builder.add_edge("save", END)
    return builder


graph = build_graph().compile(name="chat")
