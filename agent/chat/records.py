"""A user's chats as records: create one, find one, list them (only ever the user's own)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text

from agent.db import chats
from agent.services import Services


@dataclass(frozen=True)
class ChatRecord:
    """A chat without its messages."""

    id: uuid.UUID
    title: str | None
    persona: str | None
    created_at: datetime
    updated_at: datetime
    book_id: uuid.UUID | None = None
    """The book in scope of the chat's latest turn (``None``: no single book)."""

    def as_dict(self) -> dict:
        """The API's ``Chat`` object."""
        return {
            "id": str(self.id),
            "title": self.title,
            "persona": self.persona,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "book_id": str(self.book_id) if self.book_id else None,
        }


_COLUMNS = "id, title, persona, created_at, updated_at, document_id AS book_id"


async def create_chat(
    services: Services, user_id: uuid.UUID, title: str | None = None, persona: str | None = None
) -> ChatRecord:
    """A new, empty chat of the user's (title and persona optional)."""
    chat_id = uuid.uuid4()
    async with services.engine.begin() as conn:
        await chats.ensure_chat(conn, user_id, chat_id, title=(title or "").strip() or None)
        if persona is not None:
            await chats.chat_persona(conn, user_id, chat_id, persona)
    record = await get_chat(services, user_id, chat_id)
    assert record is not None
    return record


async def get_chat(services: Services, user_id: uuid.UUID, chat_id: uuid.UUID) -> ChatRecord | None:
    """The user's chat, or ``None`` when there is none of theirs with that id."""
    async with services.engine.connect() as conn:
        row = (
            await conn.execute(
                text(f"SELECT {_COLUMNS} FROM chats WHERE id = :c AND user_id = :u"),
                {"c": chat_id, "u": user_id},
            )
        ).first()
    return ChatRecord(**row._mapping) if row else None


async def list_chats(services: Services, user_id: uuid.UUID, limit: int = 200) -> list[ChatRecord]:
    """The user's chats, most recently active first."""
    async with services.engine.connect() as conn:
        rows = await conn.execute(
            text(
                f"SELECT {_COLUMNS} FROM chats WHERE user_id = :u "
                "ORDER BY updated_at DESC, id LIMIT :n"
            ),
            {"u": user_id, "n": limit},
        )
        return [ChatRecord(**r._mapping) for r in rows]


async def discard_empty_chat(services: Services, user_id: uuid.UUID, chat_id: uuid.UUID) -> bool:
    """Delete the user's chat if it has no messages (a first turn that failed)."""
    async with services.engine.begin() as conn:
        result = await conn.execute(
            text(
                "DELETE FROM chats c WHERE c.id = :c AND c.user_id = :u AND NOT EXISTS "
                "(SELECT 1 FROM chat_messages m WHERE m.chat_id = c.id)"
            ),
            {"c": chat_id, "u": user_id},
        )
    return result.rowcount > 0


async def title_untitled_chat(
    services: Services, user_id: uuid.UUID, chat_id: uuid.UUID, question: str
) -> None:
    """Name a chat created without a title after its first question."""
    async with services.engine.begin() as conn:
        await conn.execute(
            text("UPDATE chats SET title = :t WHERE id = :c AND user_id = :u AND title IS NULL"),
            {"t": " ".join(question.split())[:80], "c": chat_id, "u": user_id},
        )
