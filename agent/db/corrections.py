"""User corrections to earlier answers: stored per user, never shared."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from agent.db.scope import SearchScope


class NotYourMessage(PermissionError):
    """The chat message does not exist or belongs to another user."""


class DocumentNotVisible(PermissionError):
    """The document does not exist or the user may not read it."""


@dataclass(frozen=True)
class CorrectionRow:
    """A stored correction (``score``: relevance to a question, when ranked)."""

    id: uuid.UUID
    user_id: uuid.UUID
    document_id: uuid.UUID | None
    chat_message_id: uuid.UUID | None
    question: str | None
    wrong_answer: str | None
    correction: str
    created_at: datetime
    score: float | None = None


_COLUMNS = (
    "k.id, k.user_id, k.document_id, k.chat_message_id, k.question, k.wrong_answer, "
    "k.correction, k.created_at"
)


async def add_correction(
    conn: AsyncConnection,
    user_id: uuid.UUID,
    correction: str,
    *,
    question: str | None = None,
    wrong_answer: str | None = None,
    document_id: uuid.UUID | None = None,
    chat_message_id: uuid.UUID | None = None,
) -> uuid.UUID:
    """Store a correction for ``user_id`` and return its id.

    ``chat_message_id`` must be one of the user's messages (else :class:`NotYourMessage`);
    when it is an assistant answer, a missing ``wrong_answer`` is taken from it and a
    missing ``question`` from the user message before it. ``document_id`` must be a
    document the user can read (else :class:`DocumentNotVisible`).
    """
    if chat_message_id is not None:
        message = (
            await conn.execute(
                text(
                    "SELECT m.chat_id, m.role, m.content, m.created_at FROM chat_messages m "
                    "JOIN chats c ON c.id = m.chat_id "
                    "WHERE m.id = :m AND m.user_id = :u AND c.user_id = :u"
                ),
                {"m": chat_message_id, "u": user_id},
            )
        ).first()
        if message is None:
            raise NotYourMessage(f"chat message {chat_message_id} is not this user's")
        if message.role == "assistant":
            if wrong_answer is None:
                wrong_answer = message.content
            if question is None:
                question = (
                    await conn.execute(
                        text(
                            "SELECT content FROM chat_messages WHERE chat_id = :c "
                            "AND role = 'user' AND created_at <= :t AND id <> :m "
                            "ORDER BY created_at DESC, id DESC LIMIT 1"
                        ),
                        {"c": message.chat_id, "t": message.created_at, "m": chat_message_id},
                    )
                ).scalar()
        elif question is None:
            question = message.content
    if document_id is not None:
        # the user's own documents and those shared with them: read access is enough
        readable, scope_params = SearchScope(user_id=user_id).visible_documents_sql()
        visible = (
            await conn.execute(
                text(f"SELECT 1 WHERE :d IN ({readable})"), {**scope_params, "d": document_id}
            )
        ).first()
        if visible is None:
            raise DocumentNotVisible(f"document {document_id} is not visible to this user")
    correction_id = uuid.uuid4()
    await conn.execute(
        text(
            "INSERT INTO corrections (id, user_id, document_id, chat_message_id, question, "
            "wrong_answer, correction) VALUES (:id, :u, :d, :m, :q, :w, :c)"
        ),
        {
            "id": correction_id,
            "u": user_id,
            "d": document_id,
            "m": chat_message_id,
            "q": question,
            "w": wrong_answer,
            "c": correction,
        },
    )
    return correction_id


async def get_correction(
    conn: AsyncConnection, user_id: uuid.UUID, correction_id: uuid.UUID
) -> CorrectionRow | None:
    """One of the user's corrections."""
    row = (
        await conn.execute(
            text(f"SELECT {_COLUMNS} FROM corrections k WHERE k.id = :k AND k.user_id = :u"),
            {"k": correction_id, "u": user_id},
        )
    ).first()
    return CorrectionRow(**row._mapping) if row else None


async def list_corrections(
    conn: AsyncConnection,
    user_id: uuid.UUID,
    limit: int = 100,
    *,
    document_id: uuid.UUID | None = None,
    applicable_only: bool = False,
) -> list[CorrectionRow]:
    """The user's corrections, newest first.

    With ``applicable_only``, only those that may apply to a question about ``document_id``
    (``None``: any visible book): corrections without a document, plus those of that book
    (or, without a book, of any book the user can still read).
    """
    where = ["k.user_id = :u"]
    params: dict = {"u": user_id, "n": limit}
    if applicable_only:
        if document_id is not None:
            where.append("(k.document_id IS NULL OR k.document_id = :d)")
            params["d"] = document_id
        else:
            readable, scope_params = SearchScope(user_id=user_id).visible_documents_sql()
            where.append(f"(k.document_id IS NULL OR k.document_id IN ({readable}))")
            params.update(scope_params)
    elif document_id is not None:
        where.append("k.document_id = :d")
        params["d"] = document_id
    rows = await conn.execute(
        text(
            f"SELECT {_COLUMNS} FROM corrections k WHERE {' AND '.join(where)} "
            "ORDER BY k.created_at DESC, k.id LIMIT :n"
        ),
        params,
    )
    return [CorrectionRow(**r._mapping) for r in rows]


async def delete_correction(
    conn: AsyncConnection, user_id: uuid.UUID, correction_id: uuid.UUID
) -> bool:
    """Delete one of the user's corrections; ``False`` if there is none of theirs."""
    result = await conn.execute(
        text("DELETE FROM corrections WHERE id = :k AND user_id = :u"),
        {"k": correction_id, "u": user_id},
    )
    return result.rowcount > 0
