"""Chats, their messages and monthly usage counters."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import date, datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection


class ChatOwnershipError(PermissionError):
    """The chat exists but belongs to another user."""


@dataclass
class NewMessage:
    """A chat message to store."""

    role: str
    content: str
    route: str | None = None
    retrieved_chunk_ids: list[uuid.UUID] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    chunk_map: dict[str, str] = field(default_factory=dict)
    citations: list[dict] = field(default_factory=list)
    tokens_used: int | None = None
    model_used: str | None = None
    retrieval_metrics: dict | None = None
    citations_removed: int = 0
    """``#chk_`` ids the citation guard removed from the answer (unknown to the turn)."""
    book_id: uuid.UUID | None = None
    """The book the turn was limited to (``None``: no single book)."""
    error: dict | None = None
    """``{"code", "message"}`` on a question whose turn failed (no answer follows it)."""


@dataclass(frozen=True)
class MessageRow:
    """A stored chat message."""

    id: uuid.UUID
    chat_id: uuid.UUID
    role: str
    content: str
    route: str | None
    retrieved_chunk_ids: list[uuid.UUID] | None
    sources: list[str] | None
    chunk_map: dict | None
    citations: list | None
    tokens_used: int | None
    model_used: str | None
    created_at: datetime
    routing: dict | None = None
    """The answer's route record (``retrieval_metrics["routing"]``: route, reason, mode,
    confidence); ``None`` for questions and answers saved before it existed."""
    book_id: uuid.UUID | None = None
    """The book the turn was limited to (``None``: no single book)."""
    error: dict | None = None
    """``{"code", "message"}`` on a question whose turn failed or timed out."""


async def ensure_chat(
    conn: AsyncConnection, user_id: uuid.UUID, chat_id: uuid.UUID, title: str | None = None
) -> None:
    """Create the chat for ``user_id`` if new; refuse a chat owned by someone else."""
    await conn.execute(
        text(
            "INSERT INTO chats (id, user_id, title) VALUES (:c, :u, :t) ON CONFLICT (id) DO NOTHING"
        ),
        {"c": chat_id, "u": user_id, "t": title},
    )
    owner = (
        await conn.execute(text("SELECT user_id FROM chats WHERE id = :c"), {"c": chat_id})
    ).scalar()
    if owner != user_id:
        raise ChatOwnershipError(f"chat {chat_id} does not belong to this user")


async def chat_persona(
    conn: AsyncConnection, user_id: uuid.UUID, chat_id: uuid.UUID, persona: str | None = None
) -> str | None:
    """The chat's persona: set it when ``persona`` is given (empty clears it), else read it."""
    if persona is not None:
        await conn.execute(
            text("UPDATE chats SET persona = :p WHERE id = :c AND user_id = :u"),
            {"p": persona.strip() or None, "c": chat_id, "u": user_id},
        )
    row = await conn.execute(
        text("SELECT persona FROM chats WHERE id = :c AND user_id = :u"),
        {"c": chat_id, "u": user_id},
    )
    return row.scalar()


async def add_messages(
    conn: AsyncConnection, user_id: uuid.UUID, chat_id: uuid.UUID, messages: list[NewMessage]
) -> list[uuid.UUID]:
    """Append messages to a chat (in order) and return their ids."""
    ids = [uuid.uuid4() for _ in messages]
    for message_id, m in zip(ids, messages, strict=True):
        await conn.execute(
            text(
                "INSERT INTO chat_messages (id, chat_id, user_id, role, content, route, "
                "retrieved_chunk_ids, sources, chunk_map, citations, tokens_used, model_used, "
                "retrieval_metrics, citations_removed, document_id, error) VALUES (:id, :chat, :u, "
                ":role, :content, :route, :chunks, :sources, CAST(:chunk_map AS jsonb), "
                "CAST(:citations AS jsonb), :tokens, :model, CAST(:metrics AS jsonb), :removed, "
                "(SELECT d.id FROM documents d WHERE d.id = :book), CAST(:error AS jsonb))"
            ),
            {
                "id": message_id,
                "chat": chat_id,
                "u": user_id,
                "role": m.role,
                "content": m.content,
                "route": m.route,
                "chunks": m.retrieved_chunk_ids or None,
                "sources": m.sources or None,
                "chunk_map": json.dumps(m.chunk_map) if m.role == "assistant" else None,
                "citations": json.dumps(m.citations) if m.role == "assistant" else None,
                "tokens": m.tokens_used,
                "model": m.model_used,
                "metrics": json.dumps(m.retrieval_metrics) if m.retrieval_metrics else None,
                "removed": m.citations_removed,
                "book": m.book_id,
                "error": json.dumps(m.error) if m.error else None,
            },
        )
    # the chat keeps the book of its latest turn (gone documents read as none)
    book = messages[-1].book_id if messages else None
    await conn.execute(
        text(
            "UPDATE chats SET updated_at = now(), "
            "document_id = (SELECT d.id FROM documents d WHERE d.id = :b) "
            "WHERE id = :c AND user_id = :u"
        ),
        {"c": chat_id, "b": book, "u": user_id},
    )
    return ids


async def list_messages(
    conn: AsyncConnection, user_id: uuid.UUID, chat_id: uuid.UUID
) -> list[MessageRow]:
    """A chat's messages in order, only if the chat is the user's."""
    rows = await conn.execute(
        text(
            "SELECT m.id, m.chat_id, m.role, m.content, m.route, m.retrieved_chunk_ids, m.sources, "
            "m.chunk_map, m.citations, m.tokens_used, m.model_used, m.created_at, "
            "m.retrieval_metrics -> 'routing' AS routing, m.document_id AS book_id, m.error "
            "FROM chat_messages m JOIN chats c ON c.id = m.chat_id "
            "WHERE m.chat_id = :c AND c.user_id = :u ORDER BY m.created_at, m.id"
        ),
        {"c": chat_id, "u": user_id},
    )
    return [MessageRow(**r._mapping) for r in rows]


async def record_usage(
    conn: AsyncConnection,
    user_id: uuid.UUID,
    *,
    chat_messages: int = 0,
    tokens: int = 0,
    documents: int = 0,
    month: date | None = None,
) -> None:
    """Add to the user's counters for the month (default: this month)."""
    month = (month or date.today()).replace(day=1)
    await conn.execute(
        text(
            "INSERT INTO usage_monthly (user_id, month, chat_messages, tokens_used, documents_ingested) "
            "VALUES (:u, :m, :c, :t, :d) ON CONFLICT (user_id, month) DO UPDATE SET "
            "chat_messages = usage_monthly.chat_messages + EXCLUDED.chat_messages, "
            "tokens_used = usage_monthly.tokens_used + EXCLUDED.tokens_used, "
            "documents_ingested = usage_monthly.documents_ingested + EXCLUDED.documents_ingested"
        ),
        {"u": user_id, "m": month, "c": chat_messages, "t": tokens, "d": documents},
    )


_USER_LIMIT = "(SELECT coalesce(u.monthly_message_limit, :default) FROM users u WHERE u.id = :u)"
"""The user's monthly turn limit: their own, else the default (``NULL``: unlimited)."""


async def monthly_limit(
    conn: AsyncConnection, user_id: uuid.UUID, default: int | None
) -> int | None:
    """The user's monthly turn limit: their own when set, else ``default`` (``None``:
    unlimited)."""
    found = await conn.execute(text(f"SELECT {_USER_LIMIT}"), {"u": user_id, "default": default})
    return found.scalar()


async def reserve_turn(
    conn: AsyncConnection, user_id: uuid.UUID, default_limit: int | None, month: date
) -> int | None:
    """Count one chat turn for the user's ``month`` if it stays within their limit, in one
    statement: the turn's number this month, or ``None`` (nothing counted) when the limit is
    used up.

    The check and the increment are a single ``INSERT … ON CONFLICT DO UPDATE … WHERE``:
    concurrent reservations queue on the month's row and each sees the count the previous
    one left, so no more turns than the limit are ever counted.
    """
    found = await conn.execute(
        text(
            f"WITH lim AS (SELECT {_USER_LIMIT} AS n) "
            "INSERT INTO usage_monthly AS um (user_id, month, chat_messages) "
            "SELECT :u, :m, 1 FROM lim WHERE lim.n IS NULL OR lim.n > 0 "
            "ON CONFLICT (user_id, month) DO UPDATE SET chat_messages = um.chat_messages + 1 "
            "WHERE (SELECT n FROM lim) IS NULL OR um.chat_messages < (SELECT n FROM lim) "
            "RETURNING um.chat_messages"
        ),
        {"u": user_id, "m": month.replace(day=1), "default": default_limit},
    )
    return found.scalar()


async def release_turn(conn: AsyncConnection, user_id: uuid.UUID, month: date) -> None:
    """Give back a turn :func:`reserve_turn` counted for ``month`` (the turn failed)."""
    await conn.execute(
        text(
            "UPDATE usage_monthly SET chat_messages = chat_messages - 1 "
            "WHERE user_id = :u AND month = :m AND chat_messages > 0"
        ),
        {"u": user_id, "m": month.replace(day=1)},
    )


async def messages_this_month(conn: AsyncConnection, user_id: uuid.UUID) -> int:
    """How many chat turns the user has had this month."""
    month = date.today().replace(day=1)
    count = (
        await conn.execute(
            text("SELECT chat_messages FROM usage_monthly WHERE user_id = :u AND month = :m"),
            {"u": user_id, "m": month},
        )
    ).scalar()
    return int(count or 0)


async def find_conversation_summary(
    conn: AsyncConnection, user_id: uuid.UUID, chat_id: uuid.UUID, *, for_update: bool = False
) -> tuple[bool, str | None]:
    """Whether the chat is the user's, and its running summary if it has one; with
    ``for_update`` the chat's row stays locked until the transaction ends (a summary read to
    be extended: another turn's extension waits, then reads this one's)."""
    lock = " FOR UPDATE" if for_update else ""
    row = (
        await conn.execute(
            text(f"SELECT conversation_summary FROM chats WHERE id = :c AND user_id = :u{lock}"),
            {"c": chat_id, "u": user_id},
        )
    ).first()
    return (row is not None, row.conversation_summary if row else None)


async def recent_messages(
    conn: AsyncConnection, user_id: uuid.UUID, chat_id: uuid.UUID, limit: int
) -> list[tuple[str, str]]:
    """The last ``limit`` ``(role, content)`` pairs of the user's chat, oldest first.

    Questions of failed turns are left out: they have no answer, and a retry asks them
    again, so a prompt would see the question twice with nothing between."""
    rows = await conn.execute(
        text(
            "SELECT role, content FROM chat_messages WHERE chat_id = :c AND user_id = :u "
            "AND error IS NULL ORDER BY created_at DESC, id DESC LIMIT :n"
        ),
        {"c": chat_id, "u": user_id, "n": limit},
    )
    return [(r.role, r.content) for r in rows][::-1]


async def set_conversation_summary(
    conn: AsyncConnection,
    user_id: uuid.UUID,
    chat_id: uuid.UUID,
    summary: str,
    *,
    replacing: str | None = None,
) -> bool:
    """Store the chat's running summary; ``False`` if the chat is not the user's or, with
    ``replacing``, if its summary is no longer that text (another turn stored one since)."""
    params = {"s": summary, "c": chat_id, "u": user_id}
    guard = ""
    if replacing is not None:
        guard, params["old"] = " AND conversation_summary = :old", replacing
    result = await conn.execute(
        text(
            "UPDATE chats SET conversation_summary = :s, updated_at = now() "
            f"WHERE id = :c AND user_id = :u{guard}"
        ),
        params,
    )
    return result.rowcount > 0
