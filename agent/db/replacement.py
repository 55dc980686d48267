"""Replacing a stored document by a new one in the same transaction: a changed file from the
same source, or the same bytes read to other text by a reader fixed since
(:func:`agent.ingest.pipeline.ingest_parsed`)."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection


async def parsed_text_hash(conn: AsyncConnection, document_id: uuid.UUID) -> str | None:
    """The hash of the text a stored document was parsed to (``None``: stored before it was
    recorded)."""
    return (
        await conn.execute(
            text("SELECT metadata->>'text_hash' FROM documents WHERE id = :d"), {"d": document_id}
        )
    ).scalar()


async def release_content_hash(
    conn: AsyncConnection, user_id: uuid.UUID, document_id: uuid.UUID
) -> None:
    """Free the document's content hash (unique per user), so a new parse of the same bytes
    can be stored beside it in the transaction that replaces it."""
    await conn.execute(
        text(
            "UPDATE documents SET content_hash = content_hash || ':replaced:' || id "
            "WHERE id = :d AND user_id = :u"
        ),
        {"d": document_id, "u": user_id},
    )


# what refers to a document and outlives it only by moving: its shares, the chats and
# messages about it, and its owner's corrections (deleted with it otherwise)
_MOVED_REFERENCES = ("document_access", "chats", "chat_messages", "corrections")


async def move_references(
    conn: AsyncConnection, user_id: uuid.UUID, old_id: uuid.UUID, new_id: uuid.UUID
) -> None:
    """Hand a replaced document's shares, chats, chat messages and corrections to the
    document replacing it (both ``user_id``'s)."""
    owned = await conn.execute(
        text("SELECT count(*) FROM documents WHERE id IN (:o, :n) AND user_id = :u"),
        {"o": old_id, "n": new_id, "u": user_id},
    )
    if owned.scalar() != 2:
        raise ValueError("both documents must be the user's own")
    for table in _MOVED_REFERENCES:
        await conn.execute(
            text(f"UPDATE {table} SET document_id = :n WHERE document_id = :o"),
            {"o": old_id, "n": new_id},
        )
