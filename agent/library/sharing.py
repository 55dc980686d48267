"""A user's library as the HTTP API shows it: their own documents plus those shared with
them (read-only), and the owner's sharing of a document with other users by name.

Anything the user may not see is reported as ``not_found``, never as forbidden: a grantee
deleting or sharing a document shared with them gets the same answer as a stranger.
"""

from __future__ import annotations

import uuid

from agent.db import sharing as store
from agent.db.sharing import Grant, VisibleDocument
from agent.db.users import User, get_user_by_name
from agent.library.documents import delete_user_document, document_summaries
from agent.refusals import Refused
from agent.services import Services


def parse_uuid(value: str, what: str = "document") -> uuid.UUID:
    """``value`` as a UUID; a malformed id names nothing, so it is ``not_found``."""
    try:
        return uuid.UUID(value.strip())
    except (ValueError, AttributeError):
        raise not_found(what) from None


def not_found(what: str = "document") -> Refused:
    """The refusal for an object that does not exist or is not the user's to see."""
    return Refused("not_found", f"No such {what}.")


def document_json(doc: VisibleDocument) -> dict:
    """The contract's ``Document`` object."""
    return {
        "id": str(doc.id),
        "title": doc.title,
        "author": doc.author,
        "file_type": doc.file_type,
        "doc_type": doc.doc_type,
        "status": doc.status,
        "summary_status": doc.summary_status,
        "summary_done": doc.summary_done,
        "summary_total": doc.summary_total,
        "chunk_count": doc.chunk_count,
        "page_count": doc.page_count,
        "encoding": doc.encoding,
        "tags": list(doc.tags),
        "created_at": doc.created_at.isoformat(),
        "shared": doc.shared,
        "owner": doc.owner,
    }


def share_json(grant: Grant) -> dict:
    """The contract's share object."""
    return {
        "document_id": str(grant.document_id),
        "user": grant.user,
        "is_visible": grant.is_visible,
        "granted_at": grant.granted_at.isoformat(),
    }


async def list_documents(services: Services, user_id: uuid.UUID) -> list[dict]:
    """The user's own documents and those shared with them, newest first."""
    async with services.engine.connect() as conn:
        docs = await store.list_visible_documents(conn, user_id)
    return [document_json(d) for d in docs]


async def get_document(services: Services, user_id: uuid.UUID, document_id: str) -> dict:
    """One document the user may read, as ``Document``; ``not_found`` otherwise."""
    doc_id = parse_uuid(document_id)
    async with services.engine.connect() as conn:
        doc = await store.get_visible_document(conn, user_id, doc_id)
    if doc is None:
        raise not_found()
    return document_json(doc)


async def show_document(services: Services, user_id: uuid.UUID, document_id: str) -> dict:
    """``{"document": Document, "summaries": ...}`` for a document the user may read
    (summaries in :func:`agent.library.documents.document_summaries`' shape)."""
    doc_id = parse_uuid(document_id)
    async with services.engine.connect() as conn:
        doc = await store.get_visible_document(conn, user_id, doc_id)
    if doc is None:
        raise not_found()
    # read as the owner: the grantee's right to read was checked just above
    summaries = await document_summaries(services, doc.owner_id, doc.id)
    if summaries is None:  # deleted in between
        raise not_found()
    return {"document": document_json(doc), "summaries": summaries}


async def delete_document(services: Services, user_id: uuid.UUID, document_id: str) -> None:
    """Delete one of the user's own documents with everything it owns (grants included)."""
    if not await delete_user_document(services, user_id, parse_uuid(document_id)):
        raise not_found()


async def _owned(services: Services, owner_id: uuid.UUID, document_id: str) -> uuid.UUID:
    doc_id = parse_uuid(document_id)
    async with services.engine.connect() as conn:
        if not await store.is_owner(conn, owner_id, doc_id):
            raise not_found()
    return doc_id


async def _user_named(services: Services, name: str) -> User:
    async with services.engine.connect() as conn:
        user = await get_user_by_name(conn, (name or "").strip())
    if user is None:
        raise Refused("unknown_user", f"No user is called {name!r}.")
    return user


async def share_document(services: Services, owner: User, document_id: str, user_name: str) -> dict:
    """Share one of the owner's documents with the user called ``user_name`` (read-only)."""
    doc_id = await _owned(services, owner.id, document_id)
    grantee = await _user_named(services, user_name)
    if grantee.id == owner.id:
        raise Refused("self_share", "You cannot share a document with yourself.")
    async with services.engine.begin() as conn:
        return share_json(await store.grant(conn, doc_id, grantee.id))


async def list_shares(services: Services, owner_id: uuid.UUID, document_id: str) -> list[dict]:
    """Who one of the owner's documents is shared with."""
    doc_id = await _owned(services, owner_id, document_id)
    async with services.engine.connect() as conn:
        return [share_json(g) for g in await store.list_grants(conn, doc_id)]


async def revoke_share(
    services: Services, owner_id: uuid.UUID, document_id: str, user_name: str
) -> None:
    """Stop sharing one of the owner's documents with a user (effective on their next
    request: searches and chunk lookups go through the grant's ``is_visible``)."""
    doc_id = await _owned(services, owner_id, document_id)
    grantee = await _user_named(services, user_name)
    async with services.engine.begin() as conn:
        if not await store.revoke(conn, doc_id, grantee.id):
            raise Refused("not_found", f"The document is not shared with {user_name!r}.")
