"""Documents a user can see (their own plus those shared with them) and the grants
(table ``document_access``, seed 000's ``user_book_access``) that share them.

A grant is visible while ``is_visible``; revoking clears the flag, so every read that
goes through :class:`agent.db.scope.SearchScope` stops seeing the document at once.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection


@dataclass(frozen=True)
class VisibleDocument:
    """A document as listed to a user who may read it, with its owner."""

    id: uuid.UUID
    owner_id: uuid.UUID
    owner: str
    title: str
    author: str | None
    file_type: str
    doc_type: str
    status: str
    summary_status: str
    summary_done: int
    summary_total: int
    chunk_count: int
    page_count: int | None
    tags: list[str]
    created_at: datetime
    shared: bool
    """True when someone else owns it and shared it with the user."""
    encoding: str | None = None
    """The text encoding the upload was read with; None for PDF, DOCX and PPTX."""


@dataclass(frozen=True)
class Grant:
    """One user's access to a shared document."""

    document_id: uuid.UUID
    user_id: uuid.UUID
    user: str
    is_visible: bool
    granted_at: datetime


_VISIBLE_SELECT = (
    "SELECT d.id, d.user_id AS owner_id, u.name AS owner, d.title, d.author, d.file_type, "
    "d.doc_type, d.status, d.summary_status, d.summary_done, d.summary_total, "
    "d.keyword_chunks AS chunk_count, d.page_count, coalesce(d.tags, '{}') AS tags, "
    "d.created_at, d.user_id <> :me AS shared, d.encoding "
    "FROM documents d JOIN users u ON u.id = d.user_id "
    "WHERE (d.user_id = :me OR (d.status = 'ready' AND EXISTS (SELECT 1 FROM document_access a "
    "WHERE a.document_id = d.id AND a.user_id = :me AND a.is_visible)))"
)


async def list_visible_documents(
    conn: AsyncConnection, user_id: uuid.UUID
) -> list[VisibleDocument]:
    """The user's own documents and those shared with them, newest first."""
    rows = await conn.execute(
        text(f"{_VISIBLE_SELECT} ORDER BY d.created_at DESC, d.id"), {"me": user_id}
    )
    return [VisibleDocument(**r._mapping) for r in rows]


async def get_visible_document(
    conn: AsyncConnection, user_id: uuid.UUID, document_id: uuid.UUID
) -> VisibleDocument | None:
    """One document the user may read, or ``None``."""
    row = (
        await conn.execute(
            text(f"{_VISIBLE_SELECT} AND d.id = :d"), {"me": user_id, "d": document_id}
        )
    ).first()
    return VisibleDocument(**row._mapping) if row else None


async def is_owner(conn: AsyncConnection, user_id: uuid.UUID, document_id: uuid.UUID) -> bool:
    """Whether the user owns the document."""
    row = await conn.execute(
        text("SELECT 1 FROM documents WHERE id = :d AND user_id = :u"),
        {"d": document_id, "u": user_id},
    )
    return row.first() is not None


async def grant(conn: AsyncConnection, document_id: uuid.UUID, user_id: uuid.UUID) -> Grant:
    """Share the document with the user (again, if a grant was revoked)."""
    await conn.execute(
        text(
            "INSERT INTO document_access (document_id, user_id, is_visible) VALUES (:d, :u, true) "
            "ON CONFLICT (document_id, user_id) DO UPDATE SET is_visible = true, "
            "granted_at = CASE WHEN document_access.is_visible THEN document_access.granted_at "
            "ELSE now() END"
        ),
        {"d": document_id, "u": user_id},
    )
    grants = await list_grants(conn, document_id, user_id=user_id)
    return grants[0]


async def revoke(conn: AsyncConnection, document_id: uuid.UUID, user_id: uuid.UUID) -> bool:
    """Hide the document from the user; ``False`` if it was not shared with them."""
    result = await conn.execute(
        text(
            "UPDATE document_access SET is_visible = false "
            "WHERE document_id = :d AND user_id = :u AND is_visible"
        ),
        {"d": document_id, "u": user_id},
    )
    return result.rowcount > 0


async def list_grants(
    conn: AsyncConnection, document_id: uuid.UUID, *, user_id: uuid.UUID | None = None
) -> list[Grant]:
    """The document's visible grants (or the one of ``user_id``, visible or not), by name."""
    rows = await conn.execute(
        text(
            "SELECT a.document_id, a.user_id, u.name AS user, a.is_visible, a.granted_at "
            "FROM document_access a JOIN users u ON u.id = a.user_id WHERE a.document_id = :d "
            "AND (CAST(:u AS uuid) IS NULL AND a.is_visible OR a.user_id = CAST(:u AS uuid)) "
            "ORDER BY u.name"
        ),
        {"d": document_id, "u": user_id},
    )
    return [Grant(**r._mapping) for r in rows]
