"""API routes: chats, asking (JSON and Server-Sent Events), corrections and usage.

Every route acts for the authenticated user only: the chat graph runs with that user's
name as ``Context.user`` (never a name from the request), and another user's chat,
message or correction answers 404.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Response
from pydantic import StringConstraints, model_validator

from agent.chat.records import create_chat, get_chat, list_chats
from agent.db import chats as chat_db
from agent.db.users import User
from agent.library.usage import month_usage
from agent.memory.corrections import (
    CorrectionRow,
    DocumentNotVisible,
    NotYourMessage,
    delete_correction,
    list_corrections,
    submit_correction,
)
from agent.services import Services
from api.answers import Turn, answer_events, answer_json, check_turn
from api.deps import RequestBody, ServicesDep, UserDep
from api.errors import ApiError
from api.sse import event_stream

router = APIRouter(tags=["chats"])

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class NewChat(RequestBody):
    """``POST /api/chats`` body."""

    title: Annotated[str, StringConstraints(strip_whitespace=True, max_length=200)] | None = None
    persona: Annotated[str, StringConstraints(max_length=2000)] | None = None


class Ask(RequestBody):
    """``POST .../ask`` body: the question, optionally one book (document id) in scope and a
    ``since``/``until`` window on the documents' creation time."""

    question: Text
    book_id: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)] | None = None
    since: Annotated[str, StringConstraints(strip_whitespace=True, max_length=64)] | None = None
    until: Annotated[str, StringConstraints(strip_whitespace=True, max_length=64)] | None = None


class NewCorrection(RequestBody):
    """``POST /api/corrections`` body: the answer it corrects, or the question it is about."""

    correction: Text
    message_id: uuid.UUID | None = None
    question: Text | None = None
    document_id: uuid.UUID | None = None

    @model_validator(mode="after")
    def _about_something(self) -> NewCorrection:
        if self.message_id is None and self.question is None:
            raise ValueError("send message_id (the answer corrected) or question")
        return self


def _uuid(raw: str, what: str) -> uuid.UUID:
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise ApiError(404, "not_found", f"No such {what}.") from None


async def _own_chat(services: Services, user: User, chat_id: str):
    chat = await get_chat(services, user.id, _uuid(chat_id, "chat"))
    if chat is None:
        raise ApiError(404, "not_found", "No such chat.")
    return chat


async def _turn(services: Services, user: User, body: Ask, chat_id: uuid.UUID | None) -> Turn:
    limit = services.settings.api_max_question_chars
    if len(body.question) > limit:
        raise ApiError(
            422,
            "invalid_request",
            f"question: at most {limit} characters (got {len(body.question)})",
        )
    turn = Turn(
        user=user,
        chat_id=chat_id or uuid.uuid4(),
        question=body.question,
        book=body.book_id,
        new_chat=chat_id is None,
        since=body.since,
        until=body.until,
    )
    await check_turn(services, turn)
    return turn


# --- chats ---------------------------------------------------------------------------------


@router.post("/chats", status_code=201)
async def new_chat(services: ServicesDep, user: UserDep, body: NewChat | None = None) -> dict:
    """Create an empty chat (title and persona optional)."""
    body = body or NewChat()
    chat = await create_chat(services, user.id, body.title, body.persona)
    return {"chat": chat.as_dict()}


@router.get("/chats")
async def chats(services: ServicesDep, user: UserDep) -> dict:
    """The user's chats, most recently active first."""
    return {"chats": [c.as_dict() for c in await list_chats(services, user.id)]}


@router.get("/chats/{chat_id}")
async def chat(chat_id: str, services: ServicesDep, user: UserDep) -> dict:
    """One of the user's chats."""
    return {"chat": (await _own_chat(services, user, chat_id)).as_dict()}


@router.get("/chats/{chat_id}/messages")
async def messages(chat_id: str, services: ServicesDep, user: UserDep) -> dict:
    """The chat's messages in order, with each answer's citations and chunk map."""
    chat = await _own_chat(services, user, chat_id)
    async with services.engine.connect() as conn:
        rows = await chat_db.list_messages(conn, user.id, chat.id)
    return {
        "messages": [
            {
                "id": str(m.id),
                "role": m.role,
                "content": m.content,
                "route": m.route,
                "routing": m.routing,
                "model_used": m.model_used,
                "citations": m.citations or [],
                "sources": m.sources or [],
                "chunk_map": m.chunk_map or {},
                "tokens_used": m.tokens_used,
                "book_id": str(m.book_id) if m.book_id else None,
                "error": m.error,
                "created_at": m.created_at.isoformat(),
            }
            for m in rows
        ]
    }


# --- asking --------------------------------------------------------------------------------


@router.post("/chats/{chat_id}/ask")
async def ask_in_chat(chat_id: str, body: Ask, services: ServicesDep, user: UserDep) -> dict:
    """Answer a question in one of the user's chats (the turn is saved with the chat)."""
    chat = await _own_chat(services, user, chat_id)
    return await answer_json(services, await _turn(services, user, body, chat.id))


@router.post("/chats/{chat_id}/ask/stream")
async def ask_in_chat_stream(chat_id: str, body: Ask, services: ServicesDep, user: UserDep):
    """Like ``/ask``, as Server-Sent Events: ``token``s, then ``citations``, ``route``,
    ``usage`` and ``done`` (or ``error``)."""
    chat = await _own_chat(services, user, chat_id)
    return _stream(services, await _turn(services, user, body, chat.id))


@router.post("/ask")
async def ask(body: Ask, services: ServicesDep, user: UserDep) -> dict:
    """Answer a question in a new chat (its id is in the answer)."""
    return await answer_json(services, await _turn(services, user, body, None))


@router.post("/ask/stream")
async def ask_stream(body: Ask, services: ServicesDep, user: UserDep):
    """Like ``/ask/stream`` of a chat, in a new chat (its id is in the ``done`` event)."""
    return _stream(services, await _turn(services, user, body, None))


def _stream(services: Services, turn: Turn):
    async def events():
        try:
            async for event in answer_events(services, turn):
                yield event
        except ApiError as exc:  # the stream has started: report the failure as an event
            yield "error", {"code": exc.code, "message": exc.detail}

    return event_stream(events())


# --- corrections ---------------------------------------------------------------------------


def _correction(row: CorrectionRow) -> dict:
    return {
        "id": str(row.id),
        "correction": row.correction,
        "question": row.question,
        "wrong_answer": row.wrong_answer,
        "message_id": str(row.chat_message_id) if row.chat_message_id else None,
        "document_id": str(row.document_id) if row.document_id else None,
        "created_at": row.created_at.isoformat(),
    }


@router.post("/corrections", status_code=201)
async def new_correction(body: NewCorrection, services: ServicesDep, user: UserDep) -> dict:
    """Record a correction; it shapes the user's later answers (and nobody else's)."""
    try:
        row = await submit_correction(
            services,
            user.id,
            body.correction,
            question=body.question,
            document_id=body.document_id,
            chat_message_id=body.message_id,
        )
    except NotYourMessage:
        raise ApiError(404, "not_found", "No such message.") from None
    except DocumentNotVisible:
        raise ApiError(404, "not_found", "No such document in your library.") from None
    except ValueError as exc:
        raise ApiError(400, "invalid_correction", str(exc)) from None
    return {"correction": _correction(row)}


@router.get("/corrections")
async def corrections(services: ServicesDep, user: UserDep) -> dict:
    """The user's corrections, newest first."""
    return {"corrections": [_correction(r) for r in await list_corrections(services, user.id)]}


@router.delete("/corrections/{correction_id}", status_code=204)
async def remove_correction(correction_id: str, services: ServicesDep, user: UserDep) -> Response:
    """Delete one of the user's corrections."""
    if not await delete_correction(services, user.id, _uuid(correction_id, "correction")):
        raise ApiError(404, "not_found", "No such correction.")
    return Response(status_code=204)


# --- usage ---------------------------------------------------------------------------------


@router.get("/usage")
async def usage(services: ServicesDep, user: UserDep) -> dict:
    """This month's chat turns and tokens, and the monthly limit (null: unlimited)."""
    return {"usage": (await month_usage(services, user.id)).as_dict()}
