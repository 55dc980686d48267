"""Which book a question is about: resolve ``--book``/``book_id`` and the one-book case."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import text

from agent.db.scope import SearchScope
from agent.services import Services


class UnknownBook(LookupError):
    """No visible document matches the requested book."""


@dataclass(frozen=True)
class Book:
    """A document in scope."""

    id: uuid.UUID
    title: str
    author: str | None


async def resolve_book(services: Services, user_id: uuid.UUID, book: str) -> Book:
    """A visible document by id, or by title (exact, then prefix, case-insensitive)."""
    listed, params = SearchScope(user_id=user_id).listed_documents_sql(
        "d.id, d.title, d.author, d.created_at"
    )
    try:
        by_id: uuid.UUID | None = uuid.UUID(book)
    except ValueError:
        by_id = None
    query = f"SELECT d.id, d.title, d.author FROM ({listed}) d WHERE "
    async with services.engine.connect() as conn:
        if by_id is not None:
            row = (await conn.execute(text(query + "d.id = :b"), {**params, "b": by_id})).first()
        else:
            row = (
                await conn.execute(
                    text(
                        query + "(lower(d.title) = lower(:b) OR d.title ILIKE :prefix) "
                        "ORDER BY (lower(d.title) = lower(:b)) DESC, d.created_at DESC LIMIT 1"
                    ),
                    {**params, "b": book, "prefix": book.replace("%", r"\%") + "%"},
                )
            ).first()
    if row is None:
        raise UnknownBook(f"no document matching {book!r} in your library")
    return Book(row.id, row.title, row.author)


async def only_book(services: Services, scope: SearchScope) -> Book | None:
    """The single visible document of ``scope``, or ``None`` when there are 0 or several."""
    listed, params = scope.listed_documents_sql("d.id, d.title, d.author")
    async with services.engine.connect() as conn:
        rows = (await conn.execute(text(f"{listed} LIMIT 2"), params)).all()
    return Book(rows[0].id, rows[0].title, rows[0].author) if len(rows) == 1 else None
