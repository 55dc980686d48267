"""Retrieval on a chat turn (Path A: specific; Path C: deep): the question made standalone,
then the documents, the user's earlier discussions and numbered exam questions searched side
by side (seed 001), and the context and citation payloads built from what they found; also
the ReAct ``search_knowledge`` tool call, which adds fresh passages to that context.

``state`` is the chat graph's state so far; each function returns a partial update of it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from langchain_core.language_models import BaseChatModel

from agent.chat.conflicts import detect
from agent.chat.document_openings import authorship_openings, opening_body, opening_context
from agent.chat.follow_up import has_exchange
from agent.chat.question_lookup import (
    citable_questions,
    find_numbered_questions,
    question_context,
    question_numbers,
)
from agent.config import Settings
from agent.db.scope import SearchScope
from agent.memory.conversation import ChatMemory, looks_like_follow_up, standalone_question
from agent.memory.previous_discussion import previous_discussion, previous_discussion_block
from agent.retrieval.knowledge import KnowledgeSearch, knowledge_search
from agent.retrieval.pinned_figures import passage_texts, unheld_pins
from agent.retrieval.ranking import passage_of
from agent.retrieval.search import SearchOptions, embed_question
from agent.retrieval.time_window import scope_window
from agent.retrieval.types import BELOW_RELEVANCE, RetrievedChunk, chunk_payload
from agent.services import Services


async def _nothing() -> list:
    return []


def search_mode(state: Mapping[str, Any]) -> str:
    """The turn's retrieval settings: ``deep`` (Path C), ``general`` (broad questions) or
    ``specific``."""
    if state["route"] == "deep_reasoning":
        return "deep"
    return "general" if state.get("search_mode") == "general" else "specific"


def search_options(
    settings: Settings, spec: str, mode: str, top_k: int | None, *, continuing: bool = False
) -> SearchOptions:
    """Path C searches deeper, broad questions wider (more passages, a lower threshold,
    across all the books in scope), specific ones narrow (``settings.top_k(spec)``: fewer
    for the CPU model); each with its own threshold, which a hosted model's search fills
    past down to ``threshold_admitted_floor``. ``top_k`` overrides the count.

    The local model fills down to ``threshold_admitted_floor_local`` except on a follow-up
    ``continuing`` its chat's last exchange (:func:`follows_on`): that reads every passage
    the exchange did not show, and filled it got new ones (1.1 -> 3.7 s to the first
    token). On Path C it fills only up to its ``k`` passages: in a book, several clear the
    threshold (filled fully: ~110 more tokens), but in a short article or across two books
    one alone could ("Compare the Queen of Hearts and Lady Catherine" read one passage)."""
    if spec != "local":
        floor = settings.threshold_admitted_floor
    elif continuing:
        floor = None
    else:
        floor = settings.threshold_admitted_floor_local
    k, threshold = {
        "deep": (settings.top_k(spec, "deep"), settings.threshold_deep),
        "general": (settings.top_k_general, settings.threshold_general),
    }.get(mode, (settings.top_k(spec), settings.threshold_specific))
    return SearchOptions(
        k=top_k or k,
        threshold=threshold,
        query_type=mode,
        expand=settings.query_expansion,
        rerank=settings.rerank_enabled,
        admitted_floor=floor,
        fill_to=(top_k or k) if spec == "local" and mode == "deep" else None,
    )


def follows_on(state: Mapping[str, Any]) -> bool:
    """Whether the turn's question reads as a follow-up ("What does she say about it?") in
    a chat whose last exchange this process holds: its answer continues that exchange, on
    passages the model has read. A new question in the same chat searches as a fresh one."""
    return looks_like_follow_up(state["question"]) and has_exchange(state)


def _chat_memory(state: Mapping[str, Any]) -> ChatMemory:
    """The chat's memory as the turn loaded it."""
    remembered = state.get("memory") or {}
    return ChatMemory(
        summary=remembered.get("summary"),
        recent=[(role, content) for role, content in remembered.get("recent", [])],
    )


def _payloads(
    settings: Settings, asked: list, openings: list[RetrievedChunk], found: KnowledgeSearch
) -> list[dict]:
    """Citation payloads: the numbered questions asked for, the documents' openings (for a
    question about who wrote them), then the passages found."""
    built = found.context
    preview = settings.citation_preview_chars
    payloads = [chunk_payload(c, preview, q.text) for q, c in asked]
    payloads += [chunk_payload(c, preview, opening_body(c)) for c in openings]
    ids = {p["id"] for p in payloads}
    return payloads + [
        chunk_payload(c, preview, built.bodies[c.citation_id])
        for c in built.chunks
        if c.citation_id not in ids
    ]


async def retrieve_context(
    services: Services,
    state: Mapping[str, Any],
    *,
    model: BaseChatModel,
    spec: str,
    scope: SearchScope,
    top_k: int | None = None,
    skip_passages: frozenset[uuid.UUID] = frozenset(),
) -> dict:
    """Search the three context sources for the turn's question and build its context.

    ``model`` (named by ``spec``) makes a follow-up standalone and expands the query;
    ``top_k`` overrides the number of passages; ``skip_passages``: passages shown before
    (``shown_passages`` of an earlier search), left out. On Path A a fresh question about a
    year or a version that none of the passages names has those pins in ``unheld_pins``: it
    is answered "not found" without a model call (a continued follow-up keeps its earlier
    passages too, so its answer is checked after generation instead). On Path C the
    subjects of a compared question that no passage is on are in ``missing_subjects``."""
    settings = services.settings
    mode = search_mode(state)
    memory = _chat_memory(state)
    rewrite = spec != "local" or settings.local_rewrite_follow_ups
    query = await standalone_question(model, state["question"], memory, rewrite=rewrite)
    chat_id = uuid.UUID(state["chat_id"])
    numbers = question_numbers(state["question"])
    continuing = follows_on(state)
    # embedded once for the documents and the earlier discussions
    vector = await embed_question(services, query)
    found, past, questions = await asyncio.gather(
        knowledge_search(
            services,
            scope,
            query,
            replace(
                search_options(settings, spec, mode, top_k, continuing=continuing),
                skip_passages=skip_passages,
            ),
            max_chars=settings.context_budget(spec, mode),
            model=model,
            query_vector=vector,
            cite_holders=True,
            passage_chars=settings.focus_passage_chars(spec),
            lone_word_first=spec == "local" and mode == "specific" and settings.local_lone_word,
        ),
        previous_discussion(
            services,
            scope.user_id,
            chat_id,
            query,
            k=settings.previous_discussion_k,
            query_vector=vector,
        )
        if settings.previous_discussion_k and settings.discussion_budget(spec)
        else _nothing(),
        find_numbered_questions(services, scope, numbers) if numbers else _nothing(),
    )
    shown = {content for _, content in memory.recent}  # already in the history block
    past = [t for t in past if t.question not in shown and t.answer not in shown]
    asked = await citable_questions(services, scope, questions) if questions else []
    openings = await authorship_openings(services, scope, query, found.context.chunks)
    relevant = bool(found.context.chunks) and found.result.layer not in BELOW_RELEVANCE
    metrics = found.result.metrics.as_dict()
    if openings:
        metrics["document_openings"] = [c.citation_id for c in openings]
    if numbers:
        metrics["question_numbers"] = {"asked": numbers, "found": [q.number for q, _ in asked]}
    conflicts = [c.as_dict() for c in found.conflicts]
    metrics["conflicts"] = conflicts
    payloads = _payloads(settings, asked, openings, found)
    pins = (
        unheld_pins(state["question"], passage_texts(payloads))
        if state["route"] == "hybrid" and relevant and not continuing
        else []
    )
    if pins:
        metrics["unheld_pins"] = pins
    if found.missing_subjects:
        metrics["missing_subjects"] = list(found.missing_subjects)
    if scope.created_after is not None or scope.created_before is not None:
        metrics["time_window"] = scope_window(scope)
    return {
        "conflicts": conflicts,
        "search_query": query,
        "discussion": previous_discussion_block(past, settings.discussion_budget(spec)),
        "relevant": relevant or bool(asked) or bool(openings),
        "retrieval": metrics,
        "search_mode": mode,
        "context": "\n\n".join(
            p for p in (question_context(asked), opening_context(openings), found.context.text) if p
        ),
        "retrieved": payloads,
        "unheld_pins": pins,
        "missing_subjects": list(found.missing_subjects),
        "shown_passages": list(
            dict.fromkeys(str(passage_of(c.record)) for c in found.context.chunks)
        ),
    }


async def call_knowledge_tool(
    services: Services, state: Mapping[str, Any], *, spec: str, scope: SearchScope
) -> dict:
    """Search the documents again (the ``search_knowledge`` tool, with the decision's query)
    and add the passages not yet in the context, within what is left of the context budget
    of the model named by ``spec``."""
    settings = services.settings
    tool, query = state["decision"]["tool"], state["decision"]["query"]
    log = list(state.get("tool_log") or [])
    budget = max(settings.context_budget(spec) - len(state.get("context", "")), 400)
    found = await knowledge_search(
        services,
        scope,
        query,
        SearchOptions(k=settings.top_k(spec), threshold=settings.threshold_specific),
        max_chars=budget,
        cite_holders=True,
        passage_chars=settings.focus_passage_chars(spec),
    )
    # passages below the relevance floor were never evidence: found again, they are new
    seen = {c["id"] for c in state.get("retrieved", [])} if state.get("relevant") else set()
    fresh = [c for c in found.context.chunks if c.citation_id not in seen]
    relevant = bool(fresh) and found.result.layer not in BELOW_RELEVANCE
    outcome = f"{len(fresh)} new passages" if relevant else "nothing relevant"
    log.append({"tool": tool, "query": query, "outcome": outcome})
    if not relevant:
        return {"tool_log": log}
    payloads = [
        chunk_payload(c, settings.citation_preview_chars, found.context.bodies[c.citation_id])
        for c in fresh
    ]
    context = state.get("context", "") if state.get("relevant") else ""
    retrieved = (state.get("retrieved", []) if state.get("relevant") else []) + payloads
    conflicts = detect(retrieved)  # the new passages may disagree with the earlier ones
    return {
        "tool_log": log,
        "relevant": True,
        "retrieved": retrieved,
        "context": "\n\n".join(p for p in (context, found.context.text) if p),
        "conflicts": conflicts,
        "retrieval": {**(state.get("retrieval") or {}), "conflicts": conflicts},
    }
