"""API routes: documents (ingest, list, show, delete), ingest jobs, chunk lookup.

Thin: each route reads the request, calls a service in ``agent`` and maps its
:class:`agent.refusals.Refused` to the contract's error (see :func:`api_error`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

from fastapi import APIRouter, Request, Response
from pydantic import Field

from agent.ingest import intake, jobs
from agent.library import chunk_view, sharing
from agent.refusals import Refused
from api.deps import RequestBody, ServicesDep, UserDep, text_problem
from api.errors import ApiError
from api.uploads import read_upload

router = APIRouter(tags=["documents"])

STATUS_FOR_CODE = {
    "not_found": 404,
    "unknown_user": 404,
    "too_large": 413,
    "unsupported_type": 415,
    "fetch_failed": 502,
}
"""HTTP status of each refusal code; every other code (``empty``, ``unreadable``,
``invalid_source``, ``unsafe_url``, ``self_share``) is a 400."""


def api_error(refusal: Refused) -> ApiError:
    """The contract's error for a service's refusal."""
    return ApiError(STATUS_FOR_CODE.get(refusal.code, 400), refusal.code, refusal.message)


@contextmanager
def refusals() -> Iterator[None]:
    """Turn a :class:`Refused` raised inside the block into its :class:`ApiError`."""
    try:
        yield
    except Refused as exc:
        raise api_error(exc) from None


Tags = list[str] | str | None


class UrlIn(RequestBody):
    """A page or file to fetch and ingest."""

    url: str
    title: str | None = None
    tags: Tags = None
    corpus: str = "default"


class TextIn(RequestBody):
    """Pasted text to ingest."""

    title: str = Field(min_length=1)
    text: str
    tags: Tags = None
    corpus: str = "default"


class TranscriptIn(RequestBody):
    """A transcript (seed 002): raw text, optionally refined text and tags."""

    text: str
    refined_text: str | None = None
    title: str | None = None
    tags: Tags = None
    echotag: str | None = None
    echodate: datetime | None = Field(
        default=None, description="Accepted; the transcript is dated when it is stored."
    )
    corpus: str = "default"


def _accepted(outcome: jobs.Accepted, response: Response) -> dict:
    if outcome.job is not None:
        response.status_code = 202
        response.headers["Location"] = f"/api/jobs/{outcome.job['id']}"
        return {"job": outcome.job}
    return {"document": outcome.document, "status": outcome.status}


_UPLOAD_FORM = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {
                        "file": {"type": "string", "format": "binary"},
                        "title": {"type": "string"},
                        "tags": {"type": "string", "description": "comma separated"},
                        "corpus": {"type": "string"},
                    },
                }
            }
        },
    }
}


@router.post("/documents", status_code=201, openapi_extra=_UPLOAD_FORM)
async def upload_document(
    request: Request, response: Response, services: ServicesDep, user: UserDep
) -> dict:
    """Upload a file (multipart ``file``, ``title``, ``tags``, ``corpus``): small ones are
    ingested now (201 ``{"document"}``), larger ones become a job (202 ``{"job"}``)."""
    settings = services.settings
    with refusals():
        upload = await read_upload(
            request.headers.get("content-type"),
            request.headers.get("content-length"),
            request.stream(),
            max_bytes=settings.api_max_upload_bytes,
        )
        problem = text_problem([upload.fields.get(f, "") for f in ("title", "tags", "corpus")])
        if problem:
            raise ApiError(422, "invalid_request", f"form fields: {problem}")
        outcome = await jobs.accept_upload(
            services,
            user.id,
            upload,
            title=(upload.fields.get("title") or "").strip() or None,
            tags=intake.parse_tags(upload.fields.get("tags")),
            corpus=(upload.fields.get("corpus") or "").strip() or "default",
        )
    return _accepted(outcome, response)


@router.post("/documents/url", status_code=202)
async def ingest_url(body: UrlIn, response: Response, services: ServicesDep, user: UserDep) -> dict:
    """Fetch and ingest a URL in the background (202 ``{"job"}``); refused targets: 400."""
    with refusals():
        outcome = await jobs.accept_url(
            services,
            user.id,
            body.url,
            title=body.title,
            tags=intake.parse_tags(body.tags),
            corpus=body.corpus,
        )
    return _accepted(outcome, response)


@router.post("/documents/text", status_code=201)
async def ingest_text(body: TextIn, services: ServicesDep, user: UserDep) -> dict:
    """Ingest pasted text under a title (201 ``{"document"}``)."""
    with refusals():
        result = await intake.ingest_pasted(
            services,
            user.id,
            body.title,
            body.text,
            tags=intake.parse_tags(body.tags),
            corpus=body.corpus,
        )
        document = await sharing.get_document(services, user.id, str(result.document_id))
    return {"document": document, "status": result.status}


@router.post("/transcripts", status_code=201)
async def ingest_transcript(body: TranscriptIn, services: ServicesDep, user: UserDep) -> dict:
    """Store a transcript (201 ``{"document"}``); without tags some are proposed."""
    with refusals():
        result = await intake.ingest_transcript_text(
            services,
            user.id,
            body.text,
            refined_text=body.refined_text,
            title=body.title,
            tags=intake.parse_tags(body.tags) or None,
            echotag=body.echotag,
            corpus=body.corpus,
        )
        document = await sharing.get_document(services, user.id, str(result.document_id))
    return {"document": document, "status": result.status}


@router.get("/jobs/{job_id}")
async def get_job(job_id: str, services: ServicesDep, user: UserDep) -> dict:
    """One of the user's ingest jobs (404 for anyone else's)."""
    with refusals():
        return {"job": await jobs.get_job(services, user.id, job_id)}


@router.get("/documents")
async def list_documents(services: ServicesDep, user: UserDep) -> dict:
    """The user's documents and those shared with them, newest first."""
    return {"documents": await sharing.list_documents(services, user.id)}


@router.get("/documents/{document_id}")
async def show_document(document_id: str, services: ServicesDep, user: UserDep) -> dict:
    """A document the user may read, with its summaries and table of contents."""
    with refusals():
        return await sharing.show_document(services, user.id, document_id)


@router.delete("/documents/{document_id}", status_code=204)
async def delete_document(document_id: str, services: ServicesDep, user: UserDep) -> Response:
    """Delete one of the user's own documents (a shared one is 404 to its grantee)."""
    with refusals():
        await sharing.delete_document(services, user.id, document_id)
    return Response(status_code=204)


@router.get("/chunks/{ref}")
async def get_chunk(ref: str, services: ServicesDep, user: UserDep) -> dict:
    """A chunk by uuid or citation id (``chk_xxxxxxxx``, ``%23chk_xxxxxxxx``) as the chunk
    viewer shows it, among the chunks the user may read."""
    with refusals():
        return {"chunk": await chunk_view.chunk_view(services, user.id, ref)}
