"""Saving a turn: a finished one (both messages with their fields, and its tokens), or the
question alone, with its error, when the turn failed; and the monthly turn limit.

The limit is per user (their own ``users.monthly_message_limit``, else
``settings.monthly_message_limit``; neither: unlimited). A turn is counted when it starts
(:func:`reserve_turn`: the check and the increment are one statement, so concurrent turns
cannot pass the limit) and given back when it fails (:func:`save_failed_question`), so only
turns that were answered or refused with a saved reply count. Saving the answer adds its
tokens, never a second turn.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date

from agent.chat.answering import Answer
from agent.db import chats
from agent.db.chats import NewMessage
from agent.model_server.endpoint import ModelUnavailable
from agent.services import Services


@dataclass(frozen=True)
class TurnError:
    """Why a turn has no answer: a stable ``code`` and a message for the user."""

    code: str
    message: str

    def as_dict(self) -> dict:
        """The stored (and API) shape: ``{"code", "message"}``."""
        return {"code": self.code, "message": self.message}


ANSWER_FAILED = TurnError("answer_failed", "The answer could not be produced. Try again.")


def turn_timed_out(seconds: float) -> TurnError:
    """The turn had no answer within ``seconds`` (``settings.chat_timeout_seconds``)."""
    return TurnError(
        "model_timeout", f"The model did not answer within {seconds:g} seconds. Try again."
    )


def turn_error(exc: BaseException) -> TurnError:
    """What to tell the user about a turn that raised ``exc`` (never its internals)."""
    if isinstance(exc, ModelUnavailable):
        return TurnError("model_unavailable", str(exc))
    return ANSWER_FAILED


def _book(book_id: str | None) -> uuid.UUID | None:
    return uuid.UUID(book_id) if book_id else None


async def save_turn(
    services: Services,
    user_id: uuid.UUID,
    chat_id: uuid.UUID,
    question: str,
    answer: Answer,
    book_id: str | None = None,
) -> list[uuid.UUID]:
    """Store the user's message and the answer (with the turn's book, if any) in one
    transaction and add the answer's tokens to the month; the turn itself was counted when
    it started (:func:`reserve_turn`)."""
    book = _book(book_id)
    async with services.engine.begin() as conn:
        await chats.ensure_chat(conn, user_id, chat_id, title=question[:80])
        ids = await chats.add_messages(
            conn,
            user_id,
            chat_id,
            [
                NewMessage(role="user", content=question, book_id=book),
                NewMessage(
                    role="assistant",
                    book_id=book,
                    content=answer.text,
                    route=answer.route,
                    retrieved_chunk_ids=[uuid.UUID(c) for c in answer.retrieved_chunk_ids],
                    sources=answer.sources,
                    chunk_map=answer.chunk_map,
                    citations=answer.citations,
                    tokens_used=answer.tokens_used,
                    model_used=answer.model_used,
                    retrieval_metrics=answer.retrieval_metrics,
                    citations_removed=answer.citations_removed,
                ),
            ],
        )
        await chats.record_usage(conn, user_id, tokens=answer.tokens_used)
    return ids


async def save_failed_question(
    services: Services,
    user_id: uuid.UUID,
    chat_id: uuid.UUID,
    question: str,
    error: TurnError,
    *,
    book_id: str | None = None,
    usage_month: str | None = None,
) -> uuid.UUID:
    """Store the question of a turn that failed or timed out, with its error, so the chat
    keeps it (and the page can offer to ask again), and give back the turn counted in
    ``usage_month`` (ISO date, from :func:`reserve_turn`; none: nothing to give back): a
    failed turn does not count against the monthly limit. One transaction."""
    async with services.engine.begin() as conn:
        await chats.ensure_chat(conn, user_id, chat_id, title=question[:80])
        ids = await chats.add_messages(
            conn,
            user_id,
            chat_id,
            [
                NewMessage(
                    role="user", content=question, book_id=_book(book_id), error=error.as_dict()
                )
            ],
        )
        if usage_month:
            await chats.release_turn(conn, user_id, date.fromisoformat(usage_month))
    return ids[0]


async def monthly_limit(services: Services, user_id: uuid.UUID) -> int | None:
    """The user's monthly turn limit: their own, else the default (``None``: unlimited)."""
    async with services.engine.connect() as conn:
        return await chats.monthly_limit(conn, user_id, services.settings.monthly_message_limit)


async def over_monthly_limit(services: Services, user_id: uuid.UUID) -> bool:
    """Has the user used up this month's chat turns? A quick early refusal only: the turn
    is counted, atomically against the limit, by :func:`reserve_turn`."""
    limit = await monthly_limit(services, user_id)
    if limit is None:
        return False
    async with services.engine.connect() as conn:
        return await chats.messages_this_month(conn, user_id) >= limit


async def reserve_turn(services: Services, user_id: uuid.UUID) -> str | None:
    """Count a starting turn against the user's monthly limit, atomically: the month it was
    counted in (ISO date, for :func:`release_turn`), or ``None`` when the limit is used up
    (nothing counted)."""
    month = date.today().replace(day=1)
    async with services.engine.begin() as conn:
        counted = await chats.reserve_turn(
            conn, user_id, services.settings.monthly_message_limit, month
        )
    return month.isoformat() if counted is not None else None


async def release_turn(services: Services, user_id: uuid.UUID, usage_month: str) -> None:
    """Give back a turn :func:`reserve_turn` counted (the turn failed before it was saved)."""
    async with services.engine.begin() as conn:
        await chats.release_turn(conn, user_id, date.fromisoformat(usage_month))


async def open_chat(
    services: Services,
    user_id: uuid.UUID,
    chat_id: uuid.UUID,
    first_question: str,
    persona: str | None = None,
) -> str | None:
    """Create the chat on its first turn (refusing a chat that belongs to another user) and
    return its persona, after setting it when ``persona`` is given."""
    async with services.engine.begin() as conn:
        await chats.ensure_chat(conn, user_id, chat_id, title=first_question[:80])
        return await chats.chat_persona(conn, user_id, chat_id, persona)
