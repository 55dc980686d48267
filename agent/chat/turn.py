"""The start of a turn: who asks, in which chat, about which book, and which path answers
(seed 000's priority, :mod:`agent.chat.routing`), with the user's relevant corrections."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Protocol

from langchain_core.messages import BaseMessage, HumanMessage

from agent import prompts
from agent.chat.books import (
    Book,
    UnknownBook,
    book_named_in,
    only_book,
    resolve_book,
    titles_named_in,
)
from agent.chat.chapters import titles_for_routing
from agent.chat.intents import route_by_meaning
from agent.chat.routing import asks_for_summary, choose_route, has_route_keyword
from agent.chat.tool_selection import tools_by_default
from agent.chat.turn_log import (
    monthly_limit,
    open_chat,
    release_turn,
    reserve_turn,
    save_failed_question,
    turn_error,
)
from agent.db.chats import ChatOwnershipError
from agent.db.scope import SearchScope
from agent.library.accounts import resolve_user
from agent.memory.conversation import history_block, load_memory
from agent.memory.corrections import corrections_prompt, relevant_corrections
from agent.retrieval.time_window import InvalidTimeWindow, TimeWindow, parse_time_window
from agent.services import Services
from agent.web_search import web_search_available


class TurnRequest(Protocol):
    """What the caller asks of a turn (``graphs.context.Context`` is one)."""

    user: str
    chat_id: str | None
    book: str | None
    persona: str | None
    tool_selection: bool | None
    chat_model: str | None
    document_ids: list[str] | None
    corpus: str | None
    since: str | None
    until: str | None


def last_question(messages: list[BaseMessage]) -> str:
    """The text of the last human message (``""`` when there is none)."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            content = message.content
            return content if isinstance(content, str) else str(content)
    return ""


def turn_scope(
    user_id: str, book_id: str | None, request: TurnRequest, window: dict | None = None
) -> SearchScope:
    """The documents a turn searches: its book, else the requested documents, else all the
    user can see (in the requested corpus); created within ``window`` (the turn's
    ``time_window``: ISO ``since``/``until``) when one is set."""
    if book_id:
        documents: tuple[uuid.UUID, ...] | None = (uuid.UUID(book_id),)
    elif request.document_ids:
        documents = tuple(uuid.UUID(d) for d in request.document_ids)
    else:
        documents = None
    scope = SearchScope(user_id=uuid.UUID(user_id), document_ids=documents, corpus=request.corpus)
    return TimeWindow.from_dict(window).narrow(scope)


def _chat_id(request: TurnRequest, thread_id: str | None) -> uuid.UUID:
    """The requested chat, else the thread's, else a new one."""
    chosen = request.chat_id or thread_id
    return uuid.UUID(str(chosen)) if chosen else uuid.uuid4()


async def _book_in_scope(
    services: Services, user_id: uuid.UUID, request: TurnRequest, window: dict | None = None
) -> Book | None:
    """The requested book (:class:`UnknownBook` when none matches), else the user's only
    visible document in scope (and in the time ``window``), if there is exactly one."""
    if request.book:
        return await resolve_book(services, user_id, request.book)
    return await only_book(services, turn_scope(str(user_id), "", request, window))


def search_filter(request: TurnRequest) -> dict:
    """The documents and corpus ``request`` narrows the search to (a follow-up continues an
    exchange only under the same ones)."""
    narrowed = {"documents": sorted(request.document_ids or []), "corpus": request.corpus}
    return {k: v for k, v in narrowed.items() if v}


def turn_window(request: TurnRequest) -> TimeWindow:
    """The request's ``since``/``until`` window (raises :class:`InvalidTimeWindow`)."""
    return parse_time_window(getattr(request, "since", None), getattr(request, "until", None))


async def _corrections(
    services: Services, user_id: uuid.UUID, question: str, route: str, book_id: str
) -> str:
    """The user's corrections relevant to the question, for the prompt (none for a fixed
    reply or small talk)."""
    if route in ("direct", "general"):
        return ""
    corrections = await relevant_corrections(
        services, user_id, question, document_id=uuid.UUID(book_id) if book_id else None
    )
    return corrections_prompt(corrections)


async def start_turn(
    services: Services, request: TurnRequest, question: str, thread_id: str | None
) -> dict:
    """The turn's opening state: the user, the chat (its persona and memory), the book in
    scope, the route and the relevant corrections; a refusal's route and answer when the user
    is over the monthly limit (checked before any work) or the book is unknown.

    The turn is counted against the user's monthly limit first, in one atomic statement
    (``usage_month`` in the state says which month, for giving it back if the turn fails).
    If opening the turn fails, the turn is given back and the question is saved with its
    error (not for a chat of another user's: nothing is saved there)."""
    user = await resolve_user(services, request.user)
    chat_id = _chat_id(request, thread_id)
    usage_month = await reserve_turn(services, user.id)
    if usage_month is None:
        limit = await monthly_limit(services, user.id)
        return {
            "question": question,
            "user_id": str(user.id),
            "usage_month": "",
            "route": "over_limit",
            "route_reason": "over the monthly message limit",
            "answer": prompts.MONTHLY_LIMIT.format(limit=limit),
        }
    try:
        update = await _open_turn(services, request, question, user.id, chat_id)
    except ChatOwnershipError:
        await release_turn(services, user.id, usage_month)
        raise
    except Exception as exc:
        await save_failed_question(
            services, user.id, chat_id, question, turn_error(exc), usage_month=usage_month
        )
        raise
    return {**update, "usage_month": usage_month}


async def _open_turn(
    services: Services,
    request: TurnRequest,
    question: str,
    user_id: uuid.UUID,
    chat_id: uuid.UUID,
) -> dict:
    """:func:`start_turn` once the turn is counted: the chat, its memory, the book, the
    route and the corrections."""
    settings = services.settings
    persona = await open_chat(services, user_id, chat_id, question, request.persona)
    memory = await load_memory(services, user_id, chat_id)
    update = {
        "persona": persona or "",
        "tools_enabled": tools_by_default(settings, request.chat_model or settings.chat_model)
        if request.tool_selection is None
        else request.tool_selection,
        "relevant": False,
        "shown_passages": [],
        "wider_search": "",  # a thread's next turn may search further again
        "decision": {},
        "tool_log": [],
        "web_results": [],
        "web_context": "",
        "summary_context": "",
        "citations_removed": 0,
        "history": history_block(memory),
        "memory": {"summary": memory.summary, "recent": [list(t) for t in memory.recent]},
        "question": question,
        "user_id": str(user_id),
        "chat_id": str(chat_id),
        "book_id": "",
        "search_filter": search_filter(request),
        "retrieved": [],
        "context": "",
        "retrieval": {},
        "conflicts": [],
        "missing_subjects": [],  # an earlier comparison's: never this turn's answer's lead
        "time_window": {},
        "routing": {},
        "search_mode": "",
        "web_plan": "",
    }
    try:
        update["time_window"] = turn_window(request).as_dict()
    except InvalidTimeWindow as exc:
        return {
            **update,
            "route": "invalid_window",
            "route_reason": "the time window cannot be read",
            "answer": f"I can't answer that: {exc}.",
        }
    try:
        book = await _book_in_scope(services, user_id, request, update["time_window"])
    except UnknownBook as exc:
        return {
            **update,
            "route": "unknown_book",
            "route_reason": "the requested book is not in the library",
            "answer": f"I can't answer that: {exc}.",
        }
    if book is not None and request.book:
        update["book_id"] = str(book.id)
    scope = turn_scope(str(user_id), update["book_id"], request, update["time_window"])
    named = None
    if book is None and asks_for_summary(question, settings.global_summary_keywords):
        book = named = await book_named_in(services, scope, question)  # "summarize <title>"
    keywords = settings.global_summary_keywords, settings.reasoning_keywords
    book_names = (book.title, book.author or "") if book is not None else ()
    choice = choose_route(
        question,
        single_book=book is not None,
        web_available=web_search_available(settings),
        summary_keywords=keywords[0],
        reasoning_keywords=keywords[1],
        chapter_titles=await titles_for_routing(services, scope, question),
        document_titles=(  # a keyword may be a title's word: "who wrote Why Nations Fail"
            await titles_named_in(services, scope, question)
            if has_route_keyword(question, *keywords)
            else ()
        ),
        book_names=book_names,
    )
    choice = await route_by_meaning(
        services, choice, question, single_book=book is not None, book_names=book_names
    )
    if named is not None and choice.route == "global_summary":
        choice = replace(
            choice, reason=f"summary request for the book the message names: {named.title}"
        )
    update.update(
        route=choice.route,
        route_reason=choice.reason,
        search_mode=choice.mode or "",
        web_plan=choice.web,
    )
    if update["route"] == "global_summary" and book is not None:
        update["book_id"] = str(book.id)
    update["corrections"] = await _corrections(
        services, user_id, question, update["route"], update["book_id"]
    )
    return update
