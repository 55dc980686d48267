"""User corrections: submit one, find the few that matter for a question, prompt them.

A correction belongs to one user (and optionally one book) and is never shown to anyone
else. For each question the user's applicable corrections are ranked by the embedder's
cosine between the question and the correction (with the question it corrected), with a
small bonus for the book in scope; the best few go into the system prompt.
"""

from __future__ import annotations

import asyncio
import math
import threading
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace

from agent.db import corrections as db
from agent.db.corrections import CorrectionRow, DocumentNotVisible, NotYourMessage
from agent.prompts import CORRECTIONS_BLOCK
from agent.services import Services

__all__ = [
    "CorrectionRow",
    "DocumentNotVisible",
    "NotYourMessage",
    "corrections_prompt",
    "delete_correction",
    "list_corrections",
    "relevant_corrections",
    "submit_correction",
]

MAX_CORRECTION_CHARS = 2000
"""Longest correction text accepted."""
SAME_BOOK_BONUS = 0.05
"""Added to the similarity of a correction made about the book in scope."""
CANDIDATES = 200
"""Most recent applicable corrections considered per question."""
_PROMPT_ITEM_CHARS = 400

_CACHE_SIZE = 4096
_vectors: OrderedDict[tuple[str, uuid.UUID], list[float]] = OrderedDict()
_vectors_lock = threading.Lock()


async def submit_correction(
    services: Services,
    user_id: uuid.UUID,
    correction: str,
    *,
    question: str | None = None,
    wrong_answer: str | None = None,
    document_id: uuid.UUID | None = None,
    chat_message_id: uuid.UUID | None = None,
) -> CorrectionRow:
    """Store the user's correction and return it.

    Raises ``ValueError`` for an empty or overlong text, :class:`NotYourMessage` for a
    message that is not the user's and :class:`DocumentNotVisible` for a foreign book.
    """
    correction = " ".join((correction or "").split())
    if not correction:
        raise ValueError("a correction needs some text")
    if len(correction) > MAX_CORRECTION_CHARS:
        raise ValueError(f"a correction is at most {MAX_CORRECTION_CHARS} characters")
    async with services.engine.begin() as conn:
        correction_id = await db.add_correction(
            conn,
            user_id,
            correction,
            question=question,
            wrong_answer=wrong_answer,
            document_id=document_id,
            chat_message_id=chat_message_id,
        )
        row = await db.get_correction(conn, user_id, correction_id)
    assert row is not None
    return row


async def list_corrections(
    services: Services, user_id: uuid.UUID, limit: int = 100
) -> list[CorrectionRow]:
    """The user's corrections, newest first."""
    async with services.engine.connect() as conn:
        return await db.list_corrections(conn, user_id, limit)


async def delete_correction(
    services: Services, user_id: uuid.UUID, correction_id: uuid.UUID
) -> bool:
    """Delete one of the user's corrections; ``False`` if there is none of theirs."""
    async with services.engine.begin() as conn:
        deleted = await db.delete_correction(conn, user_id, correction_id)
    if deleted:
        with _vectors_lock:
            for key in [k for k in _vectors if k[1] == correction_id]:
                del _vectors[key]
    return deleted


def _correction_text(row: CorrectionRow) -> str:
    return f"{row.question}\n{row.correction}" if row.question else row.correction


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def _embed(services: Services, question: str, rows: list[CorrectionRow]):
    """The question's vector and each correction's (cached by embedder and correction id)."""
    embedder = services.embeddings.embedder
    name = services.embeddings.name
    with _vectors_lock:
        cached = {r.id: _vectors.get((name, r.id)) for r in rows}
    missing = [r for r in rows if cached[r.id] is None]
    if missing:
        fresh = embedder.embed_documents([_correction_text(r) for r in missing])
        with _vectors_lock:
            for row, vector in zip(missing, fresh, strict=True):
                cached[row.id] = vector
                _vectors[(name, row.id)] = vector
                _vectors.move_to_end((name, row.id))
            while len(_vectors) > _CACHE_SIZE:
                _vectors.popitem(last=False)
    return embedder.embed_query(question), [cached[r.id] for r in rows]


async def relevant_corrections(
    services: Services,
    user_id: uuid.UUID,
    question: str,
    *,
    document_id: uuid.UUID | None = None,
    limit: int | None = None,
) -> list[CorrectionRow]:
    """The user's corrections that bear on ``question``, best first, with their ``score``.

    Only the user's own corrections count: those without a book apply everywhere, a book's
    only when that book is in scope (``document_id``) or no book is. A correction counts
    when its cosine similarity reaches ``correction_min_similarity``; a correction about
    the book in scope gets a small bonus. ``limit`` defaults to ``max_corrections``.
    """
    settings = services.settings
    limit = settings.max_corrections if limit is None else limit
    if limit <= 0 or not question.strip():
        return []
    async with services.engine.connect() as conn:
        rows = await db.list_corrections(
            conn, user_id, CANDIDATES, document_id=document_id, applicable_only=True
        )
    if not rows:
        return []
    query_vector, vectors = await asyncio.to_thread(_embed, services, question, rows)
    scored: list[CorrectionRow] = []
    for row, vector in zip(rows, vectors, strict=True):
        similarity = _cosine(query_vector, vector)
        if similarity < settings.correction_min_similarity:
            continue
        bonus = SAME_BOOK_BONUS if document_id and row.document_id == document_id else 0.0
        scored.append(replace(row, score=round(similarity + bonus, 6)))
    # rows come newest first and the sort is stable: equal scores keep the newer first
    scored.sort(key=lambda r: r.score or 0.0, reverse=True)
    return scored[:limit]


def _one_line(value: str, limit: int) -> str:
    value = " ".join(value.split())
    return value if len(value) <= limit else value[: limit - 1].rstrip() + "…"


def corrections_prompt(rows: Sequence[CorrectionRow]) -> str:
    """The system-prompt block listing ``rows`` (empty string when there are none)."""
    if not rows:
        return ""
    items = []
    for row in rows:
        item = f"- {_one_line(row.correction, _PROMPT_ITEM_CHARS)}"
        if row.question:
            item += f' (about the question "{_one_line(row.question, 160)}")'
        items.append(item)
    return CORRECTIONS_BLOCK.format(corrections="\n".join(items))
