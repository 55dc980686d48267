"""One chat turn run for the HTTP API: the chat graph with the Postgres checkpointer.

:func:`answer_events` yields ``("token", {"text"})`` while an answering node streams, then
``citations``, ``route``, ``usage`` and ``done``; it raises :class:`~api.errors.ApiError`
when the turn cannot be answered. The graph counts the turn against the monthly limit when
it starts and saves it in one transaction at its very end (``save``). A turn that fails
keeps its question with the error (the graph saves it; here for a turn that timed out) and
is not counted; a refused one (over the limit) leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

from agent.chat.books import UnknownBook, resolve_book
from agent.chat.records import discard_empty_chat, get_chat, title_untitled_chat
from agent.chat.turn_log import (
    ANSWER_FAILED,
    TurnError,
    monthly_limit,
    over_monthly_limit,
    save_failed_question,
    turn_timed_out,
)
from agent.db.chats import ChatOwnershipError
from agent.db.users import User
from agent.model_server.endpoint import ModelUnavailable
from agent.services import Services
from api.deps import time_window
from api.errors import ApiError
from graphs.checkpoint import open_checkpointer
from graphs.context import Context
from graphs.streaming import answered, stream_turn

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Turn:
    """Who asks what, in which chat (``new_chat``: the graph creates it)."""

    user: User
    chat_id: uuid.UUID
    question: str
    book: str | None = None
    new_chat: bool = False
    since: str | None = None
    until: str | None = None
    """The ``since``/``until`` window (:mod:`agent.retrieval.time_window`), as sent."""


def monthly_limit_error(limit: int | None) -> ApiError:
    """429 ``monthly_limit``: this month's chat turns are used up."""
    return ApiError(
        429,
        "monthly_limit",
        f"You have reached this month's limit of {limit} messages; it resets at the start "
        "of next month. Nothing was saved.",
    )


async def check_turn(services: Services, turn: Turn) -> None:
    """Refuse before any work: an unreadable time window (422), an unknown book (404) or a
    used-up monthly limit (429)."""
    time_window(turn.since, turn.until)
    if turn.book is not None:
        try:
            await resolve_book(services, turn.user.id, turn.book)
        except UnknownBook:
            raise ApiError(404, "not_found", "No such document in your library.") from None
    if await over_monthly_limit(services, turn.user.id):
        raise monthly_limit_error(await monthly_limit(services, turn.user.id))


class _TokenText:
    """The streamed answer, trimmed like the saved one: no leading whitespace, and
    trailing whitespace held back until more text follows it."""

    def __init__(self) -> None:
        self.sent = ""
        self._held = ""

    def push(self, text: str) -> str:
        text = self._held + text
        if not self.sent:
            text = text.lstrip()
        body = text.rstrip()
        self._held = text[len(body) :]
        self.sent += body
        return body


def answer_body(state: dict) -> dict:
    """The JSON answer of ``POST /api/chats/{id}/ask`` from the graph's final state."""
    return {
        "answer": state.get("answer", ""),
        "route": state.get("route"),
        "route_reason": state.get("route_reason"),
        "routing": state.get("routing") or None,
        "model_used": state.get("model_used"),
        "citations": state.get("citations") or [],
        "sources": state.get("sources") or [],
        "chunk_map": state.get("chunk_map") or {},
        "conflicts": state.get("conflicts") or [],
        "time_window": state.get("time_window") or None,
        "usage": {"tokens": int(state.get("tokens_used") or 0)},
        "chat_id": state.get("chat_id"),
        "message_id": state.get("message_id"),
    }


class TurnTimedOut(Exception):
    """The turn did not reach its answer within ``settings.chat_timeout_seconds``."""


async def _graph_run(services: Services, turn: Turn) -> AsyncIterator[tuple[str, object]]:
    """The graph's answer tokens as they stream, ``("started", update)`` when ``route`` has
    opened the turn, ``("saved", update)`` when ``save`` has stored it, then
    ``("final", state)``.

    Raises :class:`TurnTimedOut` when the turn has no answer within
    ``settings.chat_timeout_seconds``. Only waiting on the graph counts (never the caller's
    time between tokens), and the limit is lifted once an answering node is done, so a
    turn is never cut off while ``save`` writes it.
    """
    graph = (await open_checkpointer(services)).chat_graph
    context = Context(
        user=turn.user.name,
        chat_id=str(turn.chat_id),
        book=turn.book,
        since=turn.since,
        until=turn.until,
    )
    config = {"configurable": {"thread_id": str(turn.chat_id)}}
    deadline: float | None = (
        asyncio.get_running_loop().time() + services.settings.chat_timeout_seconds
    )
    events = stream_turn(graph, turn.question, context=context, config=config)
    async with contextlib.aclosing(events) as stream:
        while True:
            limit = asyncio.timeout_at(deadline)
            try:
                async with limit:
                    event = await anext(stream)
            except StopAsyncIteration:
                break
            except TimeoutError:
                if limit.expired():
                    raise TurnTimedOut from None
                raise
            if event.kind == "node" and event.node in ("route", "save"):
                yield "started" if event.node == "route" else "saved", event.state
            elif event.kind == "node" and answered(event.node, event.state):
                deadline = None
            elif event.kind == "token":
                yield "token", event.text
            elif event.kind == "final":
                yield "final", event.state


async def _discard(services: Services, turn: Turn) -> None:
    """After a failed or refused first turn, remove the chat the graph opened and its state,
    unless it keeps a message (the failed question)."""
    if not turn.new_chat:
        return
    try:
        removed = await discard_empty_chat(services, turn.user.id, turn.chat_id)
        if removed or await get_chat(services, turn.user.id, turn.chat_id) is None:
            saver = (await open_checkpointer(services)).saver
            await saver.adelete_thread(str(turn.chat_id))
    except Exception:
        log.exception("could not discard the empty chat %s", turn.chat_id)


STOPPED = TurnError("stopped", "The answer was stopped before it was finished.")


async def _keep_question(
    services: Services, turn: Turn, started: dict | None, error: TurnError
) -> None:
    """Save the question of a turn the API cut off (timed out, or its caller left) with its
    error, and give back the turn ``route`` counted (``started``: its update; none when it
    had not finished, and then nothing is given back)."""
    started = started or {}
    try:
        await save_failed_question(
            services,
            turn.user.id,
            turn.chat_id,
            turn.question,
            error,
            book_id=started.get("book_id"),
            usage_month=started.get("usage_month"),
        )
    except Exception:
        log.exception("could not keep the question of chat %s", turn.chat_id)


async def _streamed(
    services: Services, turn: Turn, tokens: _TokenText, progress: dict[str, dict]
) -> AsyncIterator[str]:
    """The answer's text as it streams (trimmed by ``tokens``); what else :func:`_graph_run`
    reports goes into ``progress`` by kind."""
    async for kind, payload in _graph_run(services, turn):
        if kind == "token":
            if text := tokens.push(str(payload)):
                yield text
        else:
            progress[kind] = payload  # type: ignore[assignment]


async def _caller_left(services: Services, turn: Turn, progress: dict[str, dict]) -> None:
    """The caller went away mid-turn: keep the question as stopped (and give the turn back)
    unless the turn was saved already or refused over the limit."""
    started = progress.get("started") or {}
    if "saved" not in progress and started.get("route") != "over_limit":
        await _keep_question(services, turn, started, STOPPED)


async def _answer(services: Services, turn: Turn) -> AsyncIterator[tuple[str, object]]:
    """``("token", text)`` as the answer streams, then ``("answer", body)``; raises
    :class:`ApiError` (404, 429, 502, 503, 504) when the turn cannot be answered."""
    tokens = _TokenText()
    progress: dict[str, dict] = {}  # "started", "saved", "final": route's, save's, the end
    try:
        async for text in _streamed(services, turn, tokens, progress):
            yield "token", text
    except (asyncio.CancelledError, GeneratorExit):  # the caller left (Stop, a closed page)
        await asyncio.shield(_caller_left(services, turn, progress))
        raise
    except ChatOwnershipError:
        raise ApiError(404, "not_found", "No such chat.") from None
    except ModelUnavailable as exc:  # the graph saved the question before it stopped
        log.warning("chat turn lost its model (user %s, chat %s)", turn.user.id, turn.chat_id)
        raise ApiError(503, "model_unavailable", str(exc)) from None
    except TurnTimedOut:
        seconds = services.settings.chat_timeout_seconds
        log.warning("chat turn timed out after %s s (user %s)", seconds, turn.user.id)
        error = turn_timed_out(seconds)
        await _keep_question(services, turn, progress.get("started"), error)
        raise ApiError(504, error.code, error.message) from None
    except Exception:  # the graph saved the question with its error (a node failed)
        log.exception("chat turn failed (user %s, chat %s)", turn.user.id, turn.chat_id)
        await _discard(services, turn)
        raise ApiError(502, ANSWER_FAILED.code, ANSWER_FAILED.message) from None
    state = progress.get("final") or {}
    if state.get("model_used") == "monthly_limit":  # reached between the check and the run
        await _discard(services, turn)
        raise monthly_limit_error(await monthly_limit(services, turn.user.id))
    if state.get("message_id") and not turn.new_chat:
        await title_untitled_chat(services, turn.user.id, turn.chat_id, turn.question)
    answer = state.get("answer", "")
    if answer != tokens.sent and answer.startswith(tokens.sent):
        yield "token", answer[len(tokens.sent) :]  # text no node streamed (fixed replies)
    yield "answer", answer_body(state)


async def answer_events(services: Services, turn: Turn) -> AsyncIterator[tuple[str, dict]]:
    """Run one turn: ``token`` events, then ``citations``, ``route``, ``usage``, ``done``.

    Raises :class:`ApiError`: 404 for a chat that is not the user's, 429 when the monthly
    limit is reached, 503 ``model_unavailable`` when the local model process dies or cannot
    be reached (the process is restarted), 502 ``answer_failed`` when the model (or anything
    else) fails before the turn is saved (the graph saves it in one transaction in its last
    node), 504 ``model_timeout`` when it has no answer within
    ``settings.chat_timeout_seconds``. After a 502, 503 or 504 the chat keeps the question
    with its error (``error`` on the message) and the turn is not counted.
    """
    async for kind, payload in _answer(services, turn):
        if kind == "token":
            yield "token", {"text": payload}
            continue
        body: dict = payload  # type: ignore[assignment]
        yield (
            "citations",
            {
                "citations": body["citations"],
                "sources": body["sources"],
                "chunk_map": body["chunk_map"],
                "conflicts": body["conflicts"],
            },
        )
        yield (
            "route",
            {
                "route": body["route"],
                "model_used": body["model_used"],
                "reason": body["route_reason"],
                "routing": body["routing"],
            },
        )
        yield "usage", body["usage"]
        yield (
            "done",
            {
                "chat_id": body["chat_id"],
                "message_id": body["message_id"],
                "answer": body["answer"],
                "routing": body["routing"],
            },
        )


async def answer_json(services: Services, turn: Turn) -> dict:
    """Run one turn to the end and return the JSON answer (raises like :func:`answer_events`)."""
    body: dict = {}
    async for kind, payload in _answer(services, turn):
        if kind == "answer":
            body = payload  # type: ignore[assignment]
    return body
