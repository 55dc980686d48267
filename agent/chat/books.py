"""Which book a question is about: resolve ``--book``/``book_id`` and the one-book case."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import text

from agent.db.scope import SearchScope
from agent.services import Services
from agent.text import plain_words

# the same normalisation as plain_words(), in SQL: no title list leaves the database
_PLAIN_SQL = "trim(regexp_replace(lower({}), '[^a-z0-9]+', ' ', 'g'))"
# a normalised title of two words or more that the question's plain words (:asked) hold
_NAMED_SQL = "({0} LIKE '% %' AND position(' ' || {0} || ' ' IN :asked) > 0)"


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


async def book_named_in(services: Services, scope: SearchScope, question: str) -> Book | None:
    """The one visible document of ``scope`` whose title the question names, word for word
    (its main title, before any colon, of at least two words), or ``None``: no title named,
    or several ("compare Pride and Prejudice with Sense and Sensibility" names no single
    book; of titles inside one another, the longest named wins)."""
    asked = plain_words(question)
    if not asked:
        return None
    listed, params = scope.listed_documents_sql("d.id, d.title, d.author")
    words = _PLAIN_SQL.format("split_part(l.title, ':', 1)")
    sql = (
        f"SELECT id, title, author, words FROM (SELECT l.*, {words} AS words FROM ({listed}) l) t "
        f"WHERE {_NAMED_SQL.format('words')} ORDER BY length(words) DESC LIMIT 3"
    )
    async with services.engine.connect() as conn:
        rows = (await conn.execute(text(sql), {**params, "asked": f" {asked} "})).all()
    # one title, or the longest, holding the others ("Emma Woodhouse" in "Emma Woodhouse Revisited")
    if not rows or any(r.words not in rows[0].words for r in rows[1:]):
        return None
    return Book(rows[0].id, rows[0].title, rows[0].author)


async def titles_named_in(services: Services, scope: SearchScope, question: str) -> list[str]:
    """Titles of the visible documents of ``scope`` that ``question`` names word for word,
    whole or their main title (before any colon), of at least two words: words of a title
    ("Why Nations Fail", "…Document Image Analysis") are not the reader's instructions."""
    asked = plain_words(question)
    if not asked:
        return []
    listed, params = scope.listed_documents_sql("d.title")
    whole, main = _PLAIN_SQL.format("l.title"), _PLAIN_SQL.format("split_part(l.title, ':', 1)")
    sql = (
        f"SELECT DISTINCT title FROM (SELECT l.title, {whole} AS whole, {main} AS main "
        f"FROM ({listed}) l) t WHERE {_NAMED_SQL.format('whole')} OR {_NAMED_SQL.format('main')} "
        "LIMIT 20"
    )
    async with services.engine.connect() as conn:
        rows = (await conn.execute(text(sql), {**params, "asked": f" {asked} "})).all()
    return [r.title for r in rows]
