"""What the chunk viewer shows for one citation: the book, where the paragraph sits, the
parent's topic labels and concise summary (once written), the parent text and the exact
paragraph (seed 000's ChunkViewerPanel).

A chunk is found by its uuid or its citation id (``#chk_xxxxxxxx``, ``chk_xxxxxxxx``),
only among the documents the user may read right now (own, or shared and not revoked).
"""

from __future__ import annotations

import re
import uuid

from sqlalchemy import text

from agent.db.scope import SearchScope
from agent.refusals import Refused
from agent.retrieval.citations import citation_id
from agent.services import Services

_CITATION = re.compile(r"^#?chk_([0-9a-f]{8})$")

_SELECT = (
    "SELECT c.id, c.document_id, c.chunk_index, c.text, c.chapter_title, c.section_title, "
    "coalesce(c.page, p.page_start) AS page, d.title AS document_title, d.author, "
    "p.text AS parent_text, p.concise_summary, coalesce(p.topic_labels, '{}') AS topic_labels "
    "FROM child_chunks c JOIN documents d ON d.id = c.document_id "
    "LEFT JOIN parent_chunks p ON p.id = c.parent_id "
    "WHERE {match} AND c.document_id IN (SELECT id FROM visible) "
    # a citation id could collide (32 bits): prefer the user's own, then the newest document
    "ORDER BY (d.user_id = :scope_user) DESC, d.created_at DESC LIMIT 1"
)


def _match(ref: str) -> tuple[str, dict] | None:
    ref = (ref or "").strip().lower()
    found = _CITATION.match(ref)
    if found:
        return "substr(md5(c.id::text), 1, 8) = :hash", {"hash": found.group(1)}
    try:
        return "c.id = :id", {"id": uuid.UUID(ref)}
    except ValueError:
        return None


async def chunk_view(
    services: Services, user_id: uuid.UUID, ref: str, preview_chars: int | None = None
) -> dict:
    """The contract's ``ChunkView`` for ``ref``; ``not_found`` unless the user may read it."""
    match = _match(ref)
    if match is None:
        raise Refused("not_found", "No such chunk.")
    condition, params = match
    visible, scope_params = SearchScope(user_id).visible_documents_sql()
    async with services.engine.connect() as conn:
        row = (
            await conn.execute(
                text(f"WITH visible AS ({visible}) " + _SELECT.replace("{match}", condition)),
                {**scope_params, **params},
            )
        ).first()
    if row is None:
        raise Refused("not_found", "No such chunk.")
    preview = preview_chars or services.settings.citation_preview_chars
    return {
        "id": str(row.id),
        "citation_id": citation_id(row.id),
        "document_id": str(row.document_id),
        "document_title": row.document_title,
        "author": row.author,
        "chapter": row.chapter_title,
        "section": row.section_title,
        "page": row.page,
        "chunk_index": row.chunk_index,
        "topic_labels": list(row.topic_labels),
        "summary": row.concise_summary,
        "parent_text": row.parent_text,
        "text": row.text,
        "preview": row.text[:preview],
    }
