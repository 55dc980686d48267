"""What a finished turn leaves behind: both messages saved and the usage counted, the turn
embedded for later discussions, and the chat's running summary updated; the slow parts run
in the background, off the answer's critical path.

``state`` is the chat graph's state at the end of a turn.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Coroutine, Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel

from agent.chat.answering import Answer
from agent.chat.turn_log import save_turn
from agent.memory.conversation import is_extractive, update_summary
from agent.memory.previous_discussion import remember_turn
from agent.services import Services

_background: set[asyncio.Task] = set()
"""Work after a turn (summary update, turn embedding) in flight: strong references until
each finishes."""


def _in_background(work: Coroutine[Any, Any, Any]) -> None:
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


def _metrics_with_tools(state: Mapping[str, Any]) -> dict | None:
    metrics = state.get("retrieval") or None
    if state.get("tool_log"):
        return {**(metrics or {}), "tools": state["tool_log"]}
    return metrics


def turn_answer(state: Mapping[str, Any]) -> Answer:
    """The turn's answer as it is saved (with the retrieval metrics and the tool calls)."""
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
    """Fixed replies and small talk leave nothing for later turns to remember."""
    return answer.route not in ("direct", "general")


async def save_answered_turn(
    services: Services, state: Mapping[str, Any], answer: Answer
) -> uuid.UUID:
    """Persist both messages of the turn, count the usage, and (in the background) embed the
    turn for later discussions; returns the saved answer's message id."""
    user_id, chat_id = uuid.UUID(state["user_id"]), uuid.UUID(state["chat_id"])
    message_ids = await save_turn(services, user_id, chat_id, state["question"], answer)
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
    """Fold the turn into the chat's running summary: at once when ``model`` is extractive,
    otherwise (an LLM call) in the background."""
    user_id, chat_id = uuid.UUID(state["user_id"]), uuid.UUID(state["chat_id"])
    summary = update_summary(services, user_id, chat_id, state["question"], answer.text, model)
    if is_extractive(model):
        await summary
    else:  # an LLM call: keep it off the answer's critical path
        _in_background(summary)
