"""A user's own documents as the entry points (CLI, API) list, show and delete them."""

from __future__ import annotations

import uuid

from agent.db import documents
from agent.db.documents import DocumentRow
from agent.services import Services


async def list_user_documents(services: Services, user_id: uuid.UUID) -> list[DocumentRow]:
    """The user's own documents, newest first."""
    async with services.engine.connect() as conn:
        return await documents.list_documents(conn, user_id)


async def get_user_document(
    services: Services, user_id: uuid.UUID, document_id: uuid.UUID
) -> DocumentRow | None:
    """One of the user's own documents, or ``None`` (another user's counts as missing)."""
    async with services.engine.connect() as conn:
        return await documents.get_document(conn, user_id, document_id)


async def delete_user_document(
    services: Services, user_id: uuid.UUID, document_id: uuid.UUID
) -> bool:
    """Delete one of the user's documents with all it owns; ``False`` if there was none."""
    async with services.engine.begin() as conn:
        return await documents.delete_document(conn, user_id, document_id)
