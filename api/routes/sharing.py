"""API routes: sharing a document with other users by name (owner only).

A grantee may search, cite and read the document; it is 404 to them for delete and share.
"""

from __future__ import annotations

from fastapi import APIRouter, Response
from pydantic import Field

from agent.library import sharing
from api.deps import RequestBody, ServicesDep, UserDep
from api.routes.documents import refusals

router = APIRouter(tags=["sharing"])


class ShareIn(RequestBody):
    """Whom to share with."""

    user: str = Field(min_length=1, description="The other user's name.")


@router.post("/documents/{document_id}/shares", status_code=201)
async def share_document(
    document_id: str, body: ShareIn, services: ServicesDep, user: UserDep
) -> dict:
    """Share one of your documents with a user (404 ``unknown_user``, 400 ``self_share``)."""
    with refusals():
        return {"share": await sharing.share_document(services, user, document_id, body.user)}


@router.get("/documents/{document_id}/shares")
async def list_shares(document_id: str, services: ServicesDep, user: UserDep) -> dict:
    """Who one of your documents is shared with."""
    with refusals():
        return {"shares": await sharing.list_shares(services, user.id, document_id)}


@router.delete("/documents/{document_id}/shares/{user_name}", status_code=204)
async def revoke_share(
    document_id: str, user_name: str, services: ServicesDep, user: UserDep
) -> Response:
    """Stop sharing a document with a user; effective on their next request."""
    with refusals():
        await sharing.revoke_share(services, user.id, document_id, user_name)
    return Response(status_code=204)
