"""What a finished turn leaves behind: both messages saved (with the book in scope) and the
tokens counted, the turn embedded for later discussions, and the turn added to the chat's
running summary (a model rewrites it later); the slow parts run in the background, off the
answer's critical path. A turn that failed leaves its question with the error, and is not counted.

``state`` is the chat graph's state at the end of a turn.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from functools import partial
from typing import Any

from langchain_core.language_models import BaseChatModel

from agent.chat.answering import Answer
from agent.chat.route_record import routing_record
from agent.chat.turn_log import TurnError, save_failed_question, save_turn
from agent.memory.conversation import is_extractive, record_exchange, rewrite_summary
from agent.memory.previous_discussion import remember_turn
from agent.services import Services

log = logging.getLogger(__name__)

_background: set[asyncio.Task] = set()
"""Work after a turn (summary rewrite, turn embedding) in flight: strong references until
each finishes."""


async def _logged(work: Callable[[], Awaitable[Any]], what: str) -> None:
    """Run ``work()``; log (never raise) its failure. ``work`` is called inside the task, so
    a task cancelled before it starts leaves no coroutine that was never awaited."""
    try:
        await work()
    except Exception:
        log.warning(what, exc_info=True)


def _in_background(work: Coroutine[Any, Any, Any]) -> asyncio.Task:
    task = asyncio.get_running_loop().create_task(work)
    _background.add(task)
    task.add_done_callback(_background.discard)
    return task


_summary_rewrites: dict[uuid.UUID, asyncio.Task] = {}
"""Each chat's model rewrite of its summary in flight (at most one: a newer exchange's
rewrite takes the older one's line in, so the older is cancelled)."""


async def wait_for_background(timeout: float | None = None, *, summaries: bool = True) -> int:
    """Let the work started after earlier turns finish (a CLI process about to exit);
    returns how many tasks were still running. With ``summaries`` False the summary
    rewrites still running are cancelled instead of awaited: each turn is already in its
    chat's stored summary as a plain line, and the chat's next rewrite folds it in."""
    if not summaries:
        for task in list(_summary_rewrites.values()):
            task.cancel()
    pending = [t for t in _background if not t.done()]
    if pending:
        await asyncio.wait(pending, timeout=timeout)
    return len(pending)


def _metrics_with_tools(state: Mapping[str, Any]) -> dict:
    """The retrieval's metrics, the tool calls, and the route record under ``routing``."""
    metrics = dict(state.get("retrieval") or {})
    if state.get("tool_log"):
        metrics["tools"] = state["tool_log"]
    metrics["routing"] = routing_record(state)
    return metrics


def turn_answer(state: Mapping[str, Any]) -> Answer:
    """The turn's answer as it is saved (with the retrieval metrics, the tool calls and the
    route record)."""
    return Answer(
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


def keeps_memory(answer: Answer) -> bool:
    """Whether the turn is worth finding again as a previous discussion: fixed replies and
    small talk are not (the chat's running summary takes every turn, those included)."""
    return answer.route not in ("direct", "general")


async def save_answered_turn(
    services: Services, state: Mapping[str, Any], answer: Answer
) -> uuid.UUID:
    """Persist both messages of the turn with its book, add its tokens to the usage (the
    turn was counted when it started), and (in the background) embed the turn for later
    discussions; returns the saved answer's message id."""
    user_id, chat_id = uuid.UUID(state["user_id"]), uuid.UUID(state["chat_id"])
    message_ids = await save_turn(
        services, user_id, chat_id, state["question"], answer, state.get("book_id")
    )
    if services.settings.previous_discussion_k and keeps_memory(answer):
        _in_background(
            remember_turn(
                services, user_id, chat_id, state["question"], answer.text, message_ids[-1]
            )
        )
    return message_ids[-1]


async def update_chat_summary(
    services: Services, state: Mapping[str, Any], answer: Answer, model: BaseChatModel
) -> None:
    """Add the turn (any turn, small talk and fixed replies included) to the chat's running
    summary at once, as its plain line; then, in the background, have ``model`` rewrite the
    summary with it (not for a chat's first turn nor with the extractive model). A failure
    is logged, never raised: the turn is already saved."""
    user_id, chat_id = uuid.UUID(state["user_id"]), uuid.UUID(state["chat_id"])
    failed = f"could not update the summary of chat {chat_id}"
    try:
        recorded = await record_exchange(services, user_id, chat_id, state["question"], answer.text)
    except Exception:
        log.warning(failed, exc_info=True)
        return
    if not recorded.needs_rewrite or is_extractive(model):
        return
    earlier = _summary_rewrites.pop(chat_id, None)
    if earlier is not None:
        earlier.cancel()  # its line is in the summary this rewrite starts from
    task = _in_background(
        _logged(partial(rewrite_summary, services, user_id, chat_id, recorded, model), failed)
    )
    _summary_rewrites[chat_id] = task

    def forget(done: asyncio.Task) -> None:
        if _summary_rewrites.get(chat_id) is done:
            del _summary_rewrites[chat_id]

    task.add_done_callback(forget)


async def save_failed_turn(
    services: Services, state: Mapping[str, Any], error: TurnError
) -> uuid.UUID | None:
    """A turn failed after it started: save its question with ``error`` (and its book) and
    give back the turn counted against the monthly limit; ``None`` when the turn never got
    as far as a chat (nothing to save) or the saving failed too (logged)."""
    if not state.get("chat_id") or not state.get("user_id"):
        return None
    try:
        return await save_failed_question(
            services,
            uuid.UUID(state["user_id"]),
            uuid.UUID(state["chat_id"]),
            state["question"],
            error,
            book_id=state.get("book_id"),
            usage_month=state.get("usage_month"),
        )
    except Exception:  # the caller reports the turn's own failure, not this one
        log.warning(
            "could not save the failed question of chat %s", state["chat_id"], exc_info=True
        )
        return None
