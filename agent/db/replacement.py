"""Replacing a stored document by a new one in the same transaction: a changed file from the
same source, or the same bytes read to other text by a reader fixed since
(:func:`agent.ingest.pipeline.ingest_parsed`)."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection


async def parsed_differently(
    conn: AsyncConnection, document_id: uuid.UUID, text_hash: str, chars: int
) -> bool:
    """Whether a stored document was parsed to other text than ``text_hash`` (``chars``
    long). A document stored before the hash was kept is compared by its length: a reader
    fix changes it (a hyphen kept, a line joined), and an unchanged file is not re-read."""
    stored, stored_chars = (
        await conn.execute(
            text("SELECT metadata->>'text_hash', char_count FROM documents WHERE id = :d"),
            {"d": document_id},
        )
    ).one()
    return stored != text_hash if stored else stored_chars != chars


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
