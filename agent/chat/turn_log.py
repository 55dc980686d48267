"""Saving a finished turn (both messages with their fields, and the usage counters), or
the question alone when its answer was lost."""

from __future__ import annotations

import uuid

from agent.chat.answering import Answer
from agent.db import chats
from agent.db.chats import NewMessage
from agent.services import Services


async def save_turn(
    services: Services, user_id: uuid.UUID, chat_id: uuid.UUID, question: str, answer: Answer
) -> list[uuid.UUID]:
    """Store the user's message and the answer in one transaction; count the usage."""
    async with services.engine.begin() as conn:
        await chats.ensure_chat(conn, user_id, chat_id, title=question[:80])
        ids = await chats.add_messages(
            conn,
            user_id,
            chat_id,
            [
                NewMessage(role="user", content=question),
                NewMessage(
                    role="assistant",
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
        await chats.record_usage(conn, user_id, chat_messages=1, tokens=answer.tokens_used)
    return ids


async def save_question(
    services: Services, user_id: uuid.UUID, chat_id: uuid.UUID, question: str
) -> uuid.UUID:
    """Store a question whose answer could not be produced (the model was lost), so the chat
    keeps it; nothing is counted against the monthly limit."""
    async with services.engine.begin() as conn:
        await chats.ensure_chat(conn, user_id, chat_id, title=question[:80])
        ids = await chats.add_messages(
            conn, user_id, chat_id, [NewMessage(role="user", content=question)]
        )
    return ids[0]


async def over_monthly_limit(services: Services, user_id: uuid.UUID) -> bool:
    """Has the user used up this month's chat turns (``monthly_message_limit``)?"""
    limit = services.settings.monthly_message_limit
    if limit is None:
        return False
    async with services.engine.connect() as conn:
        return await chats.messages_this_month(conn, user_id) >= limit


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
