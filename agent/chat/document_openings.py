"""A document's opening, for questions about who wrote it.

A paper names its authors in the byline under its title, and a book's author is on record
from its metadata. Neither shares a word with "Who is the first author of the LayoutParser
paper?", so search ranks the byline low and the model never sees it. For a question about
authorship, :func:`authorship_openings` adds the opening chunk of the document the question
is about (the one it names by title, the only one in scope, or else those of the best
passages found), with the author on record, as a citable passage.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence

from sqlalchemy import text

from agent.chat.books import book_named_in, only_book
from agent.db.chunks import fetch_chunks
from agent.db.scope import SearchScope
from agent.ingest.document import usable_author
from agent.retrieval.citations import citation_id
from agent.retrieval.context import truncate_words
from agent.retrieval.types import RetrievedChunk
from agent.services import Services

_AUTHORSHIP = re.compile(
    r"\bwho\b(?:\W+\w+){0,5}?\W+(?:wrote|write|written|authored|authors?|writers?)\b"
    r"|\b(?:first|last|lead|main|co|corresponding|senior)[- ]?authors?\b"
    r"|\b(?:written|authored) by\b"
    r"|\b(?:which|what) (?:\w+ ){0,3}?(?:wrote|authored)\b"
    r"|\bauthors?(?:'s|’s)? names?\b|\bnames? of (?:the |its |their )?authors?\b",
    re.IGNORECASE,
)

LAYER = "document_opening"
OPENING_CHARS = 500
"""How much of an opening chunk is shown: a title and its byline come first."""
MOST_DOCUMENTS = 2


def asks_about_authorship(question: str) -> bool:
    """Whether ``question`` asks who wrote a document ("Who wrote it?", "the first author
    of the paper", "written by"), not what an author says in it."""
    return bool(_AUTHORSHIP.search(question))


async def _documents_asked_about(
    services: Services, scope: SearchScope, question: str, found: Sequence[RetrievedChunk]
) -> list[uuid.UUID]:
    """The document the question names, the only one in scope, or those of the passages
    found, best first (at most :data:`MOST_DOCUMENTS`)."""
    book = await book_named_in(services, scope, question) or await only_book(services, scope)
    if book is not None:
        return [book.id]
    ids = dict.fromkeys(c.record.document_id for c in found)
    return list(ids)[:MOST_DOCUMENTS]


async def opening_chunks(
    services: Services, scope: SearchScope, document_ids: Sequence[uuid.UUID]
) -> list[RetrievedChunk]:
    """The first chunk of each of ``document_ids`` that ``scope`` shows, in that order, as
    citable retrieved chunks (layer ``document_opening``); :func:`fetch_chunks` keeps only
    the visible ones."""
    if not document_ids:
        return []
    async with services.engine.connect() as conn:
        rows = (
            await conn.execute(
                text(
                    "SELECT id, document_id FROM child_chunks "
                    "WHERE document_id = ANY(:docs) AND chunk_index = 0"
                ),
                {"docs": list(document_ids)},
            )
        ).all()
        first = {row.document_id: row.id for row in rows}
        records = await fetch_chunks(conn, scope, list(first.values()))
    return [
        RetrievedChunk(
            record=records[first[d]],
            citation_id=citation_id(first[d]),
            score=1.0,
            similarity=None,
            keyword_score=None,
            layer=LAYER,
        )
        for d in document_ids
        if d in first and first[d] in records
    ]


async def authorship_openings(
    services: Services, scope: SearchScope, question: str, found: Sequence[RetrievedChunk]
) -> list[RetrievedChunk]:
    """For a question about who wrote a document, that document's opening chunk(s) that
    ``found`` (the passages already retrieved) lacks; otherwise none."""
    if not asks_about_authorship(question):
        return []
    documents = await _documents_asked_about(services, scope, question, found)
    shown = {c.citation_id for c in found}
    return [
        c for c in await opening_chunks(services, scope, documents) if c.citation_id not in shown
    ]


def opening_body(chunk: RetrievedChunk) -> str:
    """What the model reads under an opening chunk's id: the author on record, if any, then
    the chunk's first :data:`OPENING_CHARS` characters."""
    record = chunk.record
    author = usable_author(record.author)  # documents stored before authors were checked
    by = f"Author: {author}\n" if author else ""
    return by + truncate_words(" ".join(record.text.split()), OPENING_CHARS)


def opening_context(chunks: Sequence[RetrievedChunk]) -> str:
    """Context blocks for opening chunks, labelled with their citation ids."""
    return "\n\n".join(
        f"{c.citation_id} [{c.record.document_title} · opening]\n{opening_body(c)}" for c in chunks
    )
