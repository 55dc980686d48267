"""The ``chat`` graph: route each message to the cheapest path that answers it well.

    START -> route -> direct      -> save -> END   (name question: fixed reply)
                   -> general     -> save          (small talk: short reply, no retrieval)
                   -> overview    -> save          (Path B: stored summary / ToC of one book)
                                  -> retrieve      (... nothing pre-computed: Path A)
                   -> web_search  -> save          (current events)
                   -> retrieve -> generate    -> save   (Path A investigator / Path C deep)
                               -> not_covered -> save   (relevance gate: nothing relevant)
                               -> decide <-> call_tool  (Path A with tool selection, seed 003:
                                  -> generate / not_covered   answer, or search again / the
                                                              web, at most max_tool_calls)
                   -> refuse      -> save          (an unknown --book; over the monthly
                                  -> END            limit nothing is saved or counted)

Nodes are thin: each calls into ``agent`` and returns a partial state update.
"""

from __future__ import annotations

import asyncio
import functools
import re
import uuid
from typing import Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from agent import prompts
from agent.chat.answering import (
    Answer,
    finish_grounded,
    finish_mixed,
    finish_web,
    general_messages,
    grounded_messages,
    mixed_messages,
    web_messages,
    with_persona,
)
from agent.chat.books import UnknownBook, only_book, resolve_book
from agent.chat.overview import overview_prompt
from agent.chat.question_lookup import (
    citable_questions,
    find_numbered_questions,
    question_context,
    question_numbers,
)
from agent.chat.routing import classify_route
from agent.chat.tool_selection import KNOWLEDGE, WEB, decide_tool
from agent.chat.turn_log import open_chat, over_monthly_limit, save_question, save_turn
from agent.db.scope import SearchScope
from agent.library.accounts import resolve_user
from agent.memory.conversation import (
    ChatMemory,
    history_block,
    is_extractive,
    load_memory,
    standalone_question,
    update_summary,
)
from agent.memory.corrections import corrections_prompt, relevant_corrections
from agent.memory.previous_discussion import (
    previous_discussion,
    previous_discussion_block,
    remember_turn,
)
from agent.model_server.endpoint import ModelUnavailable
from agent.models import achat_model, model_label
from agent.retrieval.citations import CitableChunk, guard_citations, unknown_citations
from agent.retrieval.knowledge import knowledge_search
from agent.retrieval.search import SearchOptions, embed_question
from agent.retrieval.types import chunk_payload
from agent.services import get_services
from agent.web_search import (
    WebSearchError,
    format_web_results,
    search_web,
    web_citations,
    web_search_available,
)
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
    # every path, not just the grounded ones: a reply without a context (small talk, a
    # stored summary, the web) must not cite chunk ids either, e.g. ids a prompt injection
    # or the conversation history put in the model's mouth; they are removed and counted
    stray = unknown_citations(answer.text, answer.chunk_map)
    if stray:
        answer.text = guard_citations(
            answer.text, [CitableChunk(cid, "") for cid in answer.chunk_map], min_support=10**6
        )
        answer.citations_removed += stray
    return {
        "answer": answer.text,
        "route": answer.route,
        "citations": answer.citations,
        "sources": answer.sources,
        "chunk_map": answer.chunk_map,
        "model_used": answer.model_used,
        "tokens_used": answer.tokens_used,
        "citations_removed": answer.citations_removed,
        "messages": [AIMessage(answer.text, id=str(uuid.uuid4()))],
    }


def _personalised(messages: list[BaseMessage], persona: str | None) -> list[BaseMessage]:
    """``messages`` with the chat's persona added to the system message."""
    if not persona or not messages or not isinstance(messages[0], SystemMessage):
        return messages
    return [SystemMessage(with_persona(str(messages[0].content), persona)), *messages[1:]]


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
    persona = await open_chat(services, user.id, chat_id, question, ctx.persona)
    memory = await load_memory(services, user.id, chat_id)
    update = {
        "persona": persona or "",
        "tools_enabled": settings.tool_selection
        if ctx.tool_selection is None
        else ctx.tool_selection,
        "relevant": False,
        "decision": {},
        "tool_log": [],
        "web_results": [],
        "web_context": "",
        "citations_removed": 0,
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
    """The user's relevant corrections, the conversation so far, then earlier discussions."""
    parts = (state.get("corrections"), state.get("history"), state.get("discussion"))
    return "\n\n".join(p for p in parts if p)


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
        general_messages(
            settings.assistant_name,
            state["question"],
            state.get("history", ""),
            persona=state.get("persona"),
        ),
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
    text, tokens = await _stream_text(model, _personalised(prompt.messages, state.get("persona")))
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
        web_messages(
            settings.assistant_name,
            state["question"],
            format_web_results(results),
            persona=state.get("persona"),
        ),
    )
    return _answer_update(
        finish_web(
            raw,
            web_citations(results),
            model_used=f"web_search_{model_label(spec)}",
            tokens_used=tokens,
        )
    )


async def _nothing() -> list:
    return []


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
    user_id, chat_id = uuid.UUID(state["user_id"]), uuid.UUID(state["chat_id"])
    scope = _scope(state, runtime)
    numbers = question_numbers(state["question"])
    # embedded once for the documents and the earlier discussions
    vector = await embed_question(services, query)
    # the three context sources run side by side (seed 001)
    found, past, questions = await asyncio.gather(
        knowledge_search(
            services,
            scope,
            query,
            options,
            max_chars=settings.context_budget(spec),
            model=model,
            query_vector=vector,
        ),
        previous_discussion(
            services,
            user_id,
            chat_id,
            query,
            k=settings.previous_discussion_k,
            query_vector=vector,
        )
        if settings.previous_discussion_k
        else _nothing(),
        find_numbered_questions(services, scope, numbers) if numbers else _nothing(),
    )
    shown = {content for _, content in memory.recent}  # already in the history block
    past = [t for t in past if t.question not in shown and t.answer not in shown]
    asked = await citable_questions(services, scope, questions) if questions else []
    built = found.context
    payloads = [chunk_payload(c, settings.citation_preview_chars, q.text) for q, c in asked]
    ids = {p["id"] for p in payloads}
    payloads += [
        chunk_payload(c, settings.citation_preview_chars, built.bodies[c.citation_id])
        for c in built.chunks
        if c.citation_id not in ids
    ]
    relevant = bool(built.chunks) and found.result.layer not in _BELOW_RELEVANCE
    metrics = found.result.metrics.as_dict()
    if numbers:
        metrics["question_numbers"] = {"asked": numbers, "found": [q.number for q, _ in asked]}
    return {
        "search_query": query,
        "discussion": previous_discussion_block(past),
        "relevant": relevant or bool(asked),
        "retrieval": metrics,
        "context": "\n\n".join(p for p in (question_context(asked), built.text) if p),
        "retrieved": payloads,
    }


_BELOW_RELEVANCE = ("any_embedded", "any_chunk", "none")
"""Fallback layers whose results are not evidence (nearest-anything, any chunk, nothing)."""


def relevance_gate(state: ChatState) -> Literal["decide", "generate", "not_covered"]:
    """Path A with tool selection goes on to the tool decision; otherwise answer from the
    documents only when retrieval found something above the relevance floor."""
    if state["route"] == "hybrid" and state.get("tools_enabled"):
        return "decide"
    return "generate" if state.get("relevant") else "not_covered"


async def decide(state: ChatState, runtime: Runtime[Context]) -> dict:
    """ReAct step (seed 003): with the relevant passages in view, answer now or call a tool."""
    services = await get_services()
    settings = services.settings
    log = state.get("tool_log") or []
    tools = [KNOWLEDGE] + ([WEB] if web_search_available(settings) else [])
    if len(log) >= settings.max_tool_calls:
        return {"decision": {"tool": "none", "query": ""}}
    spec = _model_spec(runtime, settings.chat_model)
    model = await achat_model(spec, settings, 0.0)
    decision = await decide_tool(
        model,
        state["question"],
        tools,
        context=state["context"] if state.get("relevant") else None,
        observations=[f"{e['tool']}({e['query']!r}): {e['outcome']}" for e in log],
        constrained_json=spec == "local",
    )
    query = decision.query or state.get("search_query") or state["question"]
    if any(e["tool"] == decision.tool and e["query"] == query for e in log):
        return {"decision": {"tool": "none", "query": ""}}  # the same call again: answer now
    return {"decision": {"tool": decision.tool, "query": query}}


_WEB_ID = re.compile(r"#web_\d+\b")


def _shift_web_id(web_id: str, offset: int) -> str:
    return f"#web_{int(web_id.removeprefix('#web_')) + offset}"


def after_decide(state: ChatState) -> Literal["call_tool", "generate", "not_covered"]:
    """Call the chosen tool, or answer from what the turn has (passages, web results)."""
    if state["decision"].get("tool", "none") != "none":
        return "call_tool"
    return "generate" if state.get("relevant") or state.get("web_context") else "not_covered"


async def call_tool(state: ChatState, runtime: Runtime[Context]) -> dict:
    """Run the chosen tool and add what it found to the turn's context."""
    services = await get_services()
    settings = services.settings
    tool, query = state["decision"]["tool"], state["decision"]["query"]
    log = list(state.get("tool_log") or [])
    if tool == WEB:
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
    spec = _model_spec(runtime, settings.chat_model)
    budget = max(settings.context_budget(spec) - len(state.get("context", "")), 400)
    found = await knowledge_search(
        services,
        _scope(state, runtime),
        query,
        SearchOptions(k=settings.top_k(spec), threshold=settings.threshold_specific),
        max_chars=budget,
    )
    seen = {c["id"] for c in state.get("retrieved", [])}
    fresh = [c for c in found.context.chunks if c.citation_id not in seen]
    relevant = bool(fresh) and found.result.layer not in _BELOW_RELEVANCE
    log.append(
        {
            "tool": tool,
            "query": query,
            "outcome": f"{len(fresh)} new passages" if relevant else "nothing relevant",
        }
    )
    if not relevant:
        return {"tool_log": log}
    payloads = [
        chunk_payload(c, settings.citation_preview_chars, found.context.bodies[c.citation_id])
        for c in fresh
    ]
    context = state.get("context", "") if state.get("relevant") else ""
    return {
        "tool_log": log,
        "relevant": True,
        "retrieved": (state.get("retrieved", []) if state.get("relevant") else []) + payloads,
        "context": "\n\n".join(p for p in (context, found.context.text) if p),
    }


async def not_covered(state: ChatState, runtime: Runtime[Context]) -> dict:
    """The documents do not cover the question: say so, then a brief general answer."""
    services = await get_services()
    settings = services.settings
    spec = _model_spec(runtime, settings.chat_model)
    model = await achat_model(spec, settings, settings.temperature_general)
    text, tokens = await _stream_text(
        model,
        [
            SystemMessage(
                with_persona(
                    prompts.NOT_COVERED_SYSTEM.format(name=settings.assistant_name),
                    state.get("persona"),
                )
            ),
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
    """Answer from the context with inline ``#chk_`` citations (and ``#web_N`` when a web
    search ran), then guard them."""
    services = await get_services()
    settings = services.settings
    deep = state["route"] == "deep_reasoning"
    spec = _model_spec(
        runtime, (settings.reasoning_model or settings.chat_model) if deep else settings.chat_model
    )
    temperature = settings.temperature_reasoning if deep else settings.temperature_specific
    model = await achat_model(spec, settings, temperature)
    label = model_label(spec)
    context = state["context"] if state.get("relevant") else ""
    retrieved = state["retrieved"] if state.get("relevant") else []
    if state.get("web_context"):
        raw, tokens = await _stream_text(
            model,
            mixed_messages(
                settings.assistant_name,
                state["question"],
                context,
                state["web_context"],
                _guidance(state),
                persona=state.get("persona"),
            ),
        )
        answer = finish_mixed(
            raw,
            retrieved,
            state.get("web_results", []),
            route=state["route"],
            model_used=f"web_search_{label}",
            tokens_used=tokens,
        )
        return _answer_update(answer)
    system = prompts.DEEP_SYSTEM if deep else prompts.GROUNDED_SYSTEM
    raw, tokens = await _stream_text(
        model,
        grounded_messages(
            settings.assistant_name,
            state["question"],
            context,
            system,
            _guidance(state),
            persona=state.get("persona"),
        ),
    )
    answer = finish_grounded(
        raw,
        retrieved,
        route=state["route"],
        model_used=f"{'deep_reasoner' if deep else 'investigator'}_{label}",
        tokens_used=tokens,
    )
    return _answer_update(answer)


def _metrics_with_tools(state: ChatState) -> dict | None:
    metrics = state.get("retrieval") or None
    if state.get("tool_log"):
        return {**(metrics or {}), "tools": state["tool_log"]}
    return metrics


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
        retrieval_metrics=_metrics_with_tools(state),
        citations_removed=state.get("citations_removed", 0),
    )
    user_id, chat_id = uuid.UUID(state["user_id"]), uuid.UUID(state["chat_id"])
    message_ids = await save_turn(services, user_id, chat_id, state["question"], answer)
    settings = services.settings
    if settings.previous_discussion_k and answer.route not in ("direct", "general"):
        _in_background(
            remember_turn(
                services, user_id, chat_id, state["question"], answer.text, message_ids[-1]
            )
        )
    if answer.route in ("direct", "general"):  # fixed replies and small talk: nothing to keep
        return {"message_id": str(message_ids[-1])}
    model = await achat_model(_model_spec(runtime, settings.chat_model), settings, 0.0)
    summary = update_summary(services, user_id, chat_id, state["question"], answer.text, model)
    if is_extractive(model):
        await summary
    else:  # an LLM call: keep it off the answer's critical path
        _in_background(summary)
    return {"message_id": str(message_ids[-1])}


_background: set[asyncio.Task] = set()
"""Work after a turn (summary update, turn embedding) in flight: strong references until
each finishes."""


def _in_background(work) -> None:
    task = asyncio.get_running_loop().create_task(work)
    _background.add(task)
    task.add_done_callback(_background.discard)


async def wait_for_background(timeout: float | None = None) -> int:
    """Let the work started after earlier turns finish (a CLI process about to exit);
    returns how many tasks were still running."""
    pending = [t for t in _background if not t.done()]
    if pending:
        await asyncio.wait(pending, timeout=timeout)
    return len(pending)


def _keeps_question(node):
    """``node``, saving the turn's question before a lost model ends the turn (the chat keeps
    what the user asked; the caller reports ``model_unavailable``)."""

    @functools.wraps(node)
    async def run(state: ChatState, runtime: Runtime[Context]) -> dict:
        try:
            return await node(state, runtime)
        except ModelUnavailable:
            services = await get_services()
            await save_question(
                services,
                uuid.UUID(state["user_id"]),
                uuid.UUID(state["chat_id"]),
                state["question"],
            )
            raise

    return run


MODEL_NODES = frozenset(
    {
        "general",
        "overview",
        "web_search",
        "retrieve",
        "decide",
        "call_tool",
        "generate",
        "not_covered",
    }
)
"""Nodes that call the chat model (after ``route`` has named the user and the chat)."""


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
        decide,
        call_tool,
        generate,
        not_covered,
        save,
    ):
        name = node.__name__
        builder.add_node(name, _keeps_question(node) if name in MODEL_NODES else node)
    builder.add_edge(START, "route")
    builder.add_conditional_edges("route", pick_path)
    builder.add_conditional_edges("overview", after_overview)
    builder.add_conditional_edges("retrieve", relevance_gate)
    builder.add_conditional_edges("decide", after_decide)
    builder.add_edge("call_tool", "decide")
    builder.add_conditional_edges("refuse", after_refusal)
    for node in ("direct", "general", "web_search", "generate", "not_covered"):
        builder.add_edge(node, "save")
    builder.add_edge("save", END)
    return builder


graph = build_graph().compile(name="chat")
