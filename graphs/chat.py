"""The ``chat`` graph: route each message to the cheapest path that answers it well.

    START -> route -> direct      -> save -> END   (name question: fixed reply)
                   -> general     -> save          (small talk: short reply, no retrieval)
                   -> overview    -> save          (Path B: stored summary / ToC of one book)
                                  -> retrieve      (... nothing pre-computed: Path A)
                   -> web_search  -> save          (current events)
                   -> retrieve -> generate    -> save   (Path A investigator / Path C deep)
                               -> not_covered -> save   (relevance gate: nothing relevant)
                   -> refuse      -> save          (an unknown --book; over the monthly
                                  -> END            limit nothing is saved or counted)

Nodes are thin: each calls into ``agent`` and returns a partial state update.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from agent import prompts
from agent.accounts import resolve_user
from agent.answering import (
    Answer,
    chunk_payload,
    finish_grounded,
    finish_web,
    general_messages,
    grounded_messages,
    web_messages,
)
from agent.books import UnknownBook, only_book, resolve_book
from agent.chat_log import open_chat, over_monthly_limit, save_turn
from agent.corrections import corrections_prompt, relevant_corrections
from agent.db.scope import SearchScope
from agent.memory import (
    ChatMemory,
    history_block,
    is_extractive,
    load_memory,
    standalone_question,
    update_summary,
)
from agent.models import achat_model, model_label
from agent.overview import overview_prompt
from agent.retrieval.knowledge import knowledge_search
from agent.retrieval.search import SearchOptions
from agent.router import classify_route
from agent.services import get_services
from graphs.context import Context
from graphs.state import ChatState, InputState, OutputState
from tools.web_search import (
    WebSearchError,
    format_web_results,
    search_web,
    web_citations,
    web_search_available,
)


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


def _scope(state: ChatState, runtime: Runtime[Context]) -> SearchScope:
    ctx = runtime.context or Context()
    if state.get("book_id"):
        documents = (uuid.UUID(state["book_id"]),)
    elif ctx.document_ids:
        documents = tuple(uuid.UUID(d) for d in ctx.document_ids)
    else:
        documents = None
    return SearchScope(
        user_id=uuid.UUID(state["user_id"]), document_ids=documents, corpus=ctx.corpus
    )


async def route(state: ChatState, runtime: Runtime[Context]) -> dict:
    """Identify the user, chat and book in scope, and pick the path (seed 000 priority)."""
    services = await get_services()
    settings = services.settings
    ctx = runtime.context or Context()
    user = await resolve_user(services, ctx.user)
    thread_id = (get_config().get("configurable") or {}).get("thread_id")
    chat_id = (
        uuid.UUID(str(ctx.chat_id or thread_id)) if (ctx.chat_id or thread_id) else uuid.uuid4()
    )
    question = _last_question(state["messages"])
    if await over_monthly_limit(services, user.id):  # checked before any work
        limit = settings.monthly_message_limit
        return {
            "question": question,
            "user_id": str(user.id),
            "route": "over_limit",
            "answer": prompts.MONTHLY_LIMIT.format(limit=limit),
        }
    await open_chat(services, user.id, chat_id, question)
    memory = await load_memory(services, user.id, chat_id)
    update = {
        "history": history_block(memory),
        "memory": {"summary": memory.summary, "recent": [list(t) for t in memory.recent]},
        "question": question,
        "user_id": str(user.id),
        "chat_id": str(chat_id),
        "book_id": "",
        "retrieved": [],
        "context": "",
        "retrieval": {},
    }
    book = None
    if ctx.book:
        try:
            book = await resolve_book(services, user.id, ctx.book)
        except UnknownBook as exc:
            update["route"] = "unknown_book"
            update["answer"] = f"I can't answer that: {exc}."
            return update
    else:
        book = await only_book(services, _scope({**state, **update}, runtime))
    if book is not None and ctx.book:
        update["book_id"] = str(book.id)
    update["route"] = classify_route(
        question,
        single_book=book is not None,
        summary_keywords=settings.global_summary_keywords,
        reasoning_keywords=settings.reasoning_keywords,
    )
    if update["route"] == "global_summary" and book is not None:
        update["book_id"] = str(book.id)
    if update["route"] not in ("direct", "general"):
        corrections = await relevant_corrections(
            services,
            user.id,
            question,
            document_id=uuid.UUID(update["book_id"]) if update["book_id"] else None,
        )
        update["corrections"] = corrections_prompt(corrections)
    else:
        update["corrections"] = ""
    return update


def _guidance(state: ChatState) -> str:
    """The user's relevant corrections, then the conversation so far."""
    return "\n\n".join(p for p in (state.get("corrections"), state.get("history")) if p)


def pick_path(
    state: ChatState,
) -> Literal["direct", "general", "overview", "retrieve", "web_search", "refuse"]:
    """Branch on the route the router chose."""
    return {
        "direct": "direct",
        "general": "general",
        "global_summary": "overview",
        "web_search": "web_search",
        "unknown_book": "refuse",
        "over_limit": "refuse",
    }.get(state["route"], "retrieve")  # type: ignore[return-value]


async def refuse(state: ChatState, runtime: Runtime[Context]) -> dict:
    """A request that cannot be served (an unknown book, the monthly limit): say why."""
    return _answer_update(
        Answer(
            text=state["answer"],
            route="direct",
            model_used="monthly_limit" if state["route"] == "over_limit" else "direct_response",
        )
    )


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
        model,
        general_messages(settings.assistant_name, state["question"], state.get("history", "")),
    )
    return _answer_update(
        Answer(
            text=text,
            route="general",
            model_used=f"general_{model_label(spec)}",
            tokens_used=tokens,
        )
    )


async def overview(state: ChatState, runtime: Runtime[Context]) -> dict:
    """Path B: the book's stored summary (or its table of contents) presented in structure."""
    services = await get_services()
    settings = services.settings
    book = await resolve_book(services, uuid.UUID(state["user_id"]), state["book_id"])
    prompt = await overview_prompt(services, book, state["question"])
    if prompt is None:  # nothing pre-computed and no chapters: answer from chunks instead
        return {"route": "hybrid"}
    spec = _model_spec(runtime, settings.chat_model)
    model = await achat_model(spec, settings, settings.temperature_summary)
    text, tokens = await _stream_text(model, prompt.messages)
    return _answer_update(
        Answer(
            text=text,
            route="global_summary",
            model_used=prompt.label,
            tokens_used=tokens,
            sources=[book.title],
        )
    )


def after_refusal(state: ChatState) -> Literal["save", "__end__"]:
    """Over the monthly limit nothing is saved or counted; other refusals are logged."""
    return END if state["model_used"] == "monthly_limit" else "save"


def after_overview(state: ChatState) -> Literal["retrieve", "save"]:
    """Path B fell back to retrieval when the book had nothing pre-computed."""
    return "retrieve" if state["route"] == "hybrid" else "save"


async def web_search(state: ChatState, runtime: Runtime[Context]) -> dict:
    """Current events: answered from the web when configured, else said so plainly."""
    services = await get_services()
    settings = services.settings
    if not web_search_available(settings):
        return _answer_update(
            Answer(
                text=prompts.WEB_NOT_CONFIGURED,
                route="web_search",
                model_used="no_context_response",
            )
        )
    try:
        results = await search_web(state["question"], settings)
    except WebSearchError as exc:
        return _answer_update(
            Answer(
                text=f"Web search failed: {exc}",
                route="web_search",
                model_used="no_context_response",
            )
        )
    spec = _model_spec(runtime, settings.chat_model)
    model = await achat_model(spec, settings, settings.temperature_specific)
    raw, tokens = await _stream_text(
        model,
        web_messages(settings.assistant_name, state["question"], format_web_results(results)),
    )
    return _answer_update(
        finish_web(
            raw,
            web_citations(results),
            model_used=f"web_search_{model_label(spec)}",
            tokens_used=tokens,
        )
    )


async def retrieve(state: ChatState, runtime: Runtime[Context]) -> dict:
    """Search the visible documents (Path A: specific; Path C: deep) and build the context."""
    services = await get_services()
    settings = services.settings
    ctx = runtime.context or Context()
    deep = state["route"] == "deep_reasoning"
    spec = _model_spec(
        runtime, (settings.reasoning_model or settings.chat_model) if deep else settings.chat_model
    )
    options = SearchOptions(
        k=ctx.top_k or (settings.top_k_deep if deep else settings.top_k(spec)),
        threshold=settings.threshold_deep if deep else settings.threshold_specific,
        query_type="deep" if deep else "specific",
        expand=settings.query_expansion,
        rerank=settings.rerank_enabled,
    )
    model = await achat_model(spec, settings, 0.0)
    remembered = state.get("memory") or {}
    memory = ChatMemory(
        summary=remembered.get("summary"),
        recent=[(role, content) for role, content in remembered.get("recent", [])],
    )
    query = await standalone_question(model, state["question"], memory)
    found = await knowledge_search(
        services,
        _scope(state, runtime),
        query,
        options,
        max_chars=settings.context_budget(spec),
        model=model,
    )
    built = found.context
    return {
        "search_query": query,
        "retrieval": found.result.metrics.as_dict(),
        "context": built.text,
        "retrieved": [
            chunk_payload(c, settings.citation_preview_chars, built.bodies[c.citation_id])
            for c in built.chunks
        ],
    }


def relevance_gate(state: ChatState) -> Literal["generate", "not_covered"]:
    """Answer from the documents only when retrieval found something relevant: results from
    the layers below the relevance floor (nearest-anything, any chunk) do not count."""
    layer = (state.get("retrieval") or {}).get("layer")
    if state.get("retrieved") and layer not in ("any_embedded", "any_chunk", "none"):
        return "generate"
    return "not_covered"


async def not_covered(state: ChatState, runtime: Runtime[Context]) -> dict:
    """The documents do not cover the question: say so, then a brief general answer."""
    services = await get_services()
    settings = services.settings
    spec = _model_spec(runtime, settings.chat_model)
    model = await achat_model(spec, settings, settings.temperature_general)
    text, tokens = await _stream_text(
        model,
        [
            SystemMessage(prompts.NOT_COVERED_SYSTEM.format(name=settings.assistant_name)),
            HumanMessage(
                _guidance(state) + "\n\n" + state["question"]
                if _guidance(state)
                else state["question"]
            ),
        ],
    )
    return _answer_update(
        Answer(
            text=prompts.NOT_COVERED.format(general=text).strip(),
            route=state["route"],
            model_used="no_context_response",
            tokens_used=tokens,
        )
    )


async def generate(state: ChatState, runtime: Runtime[Context]) -> dict:
    """Answer from the context with inline ``#chk_`` citations, then guard them."""
    services = await get_services()
    settings = services.settings
    deep = state["route"] == "deep_reasoning"
    spec = _model_spec(
        runtime, (settings.reasoning_model or settings.chat_model) if deep else settings.chat_model
    )
    temperature = settings.temperature_reasoning if deep else settings.temperature_specific
    model = await achat_model(spec, settings, temperature)
    system = prompts.DEEP_SYSTEM if deep else prompts.GROUNDED_SYSTEM
    raw, tokens = await _stream_text(
        model,
        grounded_messages(
            settings.assistant_name, state["question"], state["context"], system, _guidance(state)
        ),
    )
    answer = finish_grounded(
        raw,
        state["retrieved"],
        route=state["route"],
        model_used=f"{'deep_reasoner' if deep else 'investigator'}_{model_label(spec)}",
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
    user_id, chat_id = uuid.UUID(state["user_id"]), uuid.UUID(state["chat_id"])
    await save_turn(services, user_id, chat_id, state["question"], answer)
    settings = services.settings
    model = await achat_model(_model_spec(runtime, settings.chat_model), settings, 0.0)
    summary = update_summary(services, user_id, chat_id, state["question"], answer.text, model)
    if is_extractive(model):
        await summary
    else:  # an LLM call: keep it off the answer's critical path
        task = asyncio.get_running_loop().create_task(summary)
        _background.add(task)
        task.add_done_callback(_background.discard)
    return {}


_background: set[asyncio.Task] = set()
"""Conversation-summary updates in flight (strong references until they finish)."""


def build_graph():
    """The uncompiled chat graph (compile with or without a checkpointer)."""
    builder = StateGraph(
        ChatState, input_schema=InputState, output_schema=OutputState, context_schema=Context
    )
    for node in (
        route,
        refuse,
        direct,
        general,
        overview,
        web_search,
        retrieve,
        generate,
        not_covered,
        save,
    ):
        builder.add_node(node.__name__, node)
    builder.add_edge(START, "route")
    builder.add_conditional_edges("route", pick_path)
    builder.add_conditional_edges("overview", after_overview)
    builder.add_conditional_edges("retrieve", relevance_gate)
    builder.add_conditional_edges("refuse", after_refusal)
    for node in ("direct", "general", "web_search", "generate", "not_covered"):
        builder.add_edge(node, "save")
    builder.add_edge("save", END)
    return builder


graph = build_graph().compile(name="chat")
