"""Embedded chat turns ("turn memory"): store one per answer, search a user's own turns by
meaning (cosine over the embeddings) and by keywords (BM25 over the turn's full text).

Every statement is scoped to one user: a turn is only stored under a chat the user owns and
only that user's turns are ever read back.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from agent.db.documents import vector_literal


@dataclass(frozen=True)
class TurnMatch:
    """A stored turn with its cosine similarity to a query vector."""

    id: uuid.UUID
    chat_id: uuid.UUID
    message_id: uuid.UUID | None
    question: str
    answer: str
    created_at: datetime
    similarity: float
    keyword_score: float = 0.0
    """The turn's BM25 score for the query's words (0 when found by meaning only)."""


async def insert_turn(
    conn: AsyncConnection,
    user_id: uuid.UUID,
    chat_id: uuid.UUID,
    question: str,
    answer: str,
    embedding_model: str,
    embedding: Sequence[float],
    *,
    message_id: uuid.UUID | None = None,
) -> uuid.UUID | None:
    """Store a turn's embedding and return its id; ``None`` if the chat is not the user's.

    ``message_id`` (the assistant message) is kept only when it is a message of that chat
    and user; otherwise the turn is stored without it.
    """
    turn_id = uuid.uuid4()
    result = await conn.execute(
        text(
            "INSERT INTO chat_turn_embeddings (id, user_id, chat_id, message_id, question, "
            "answer, embedding_model, embedding) "
            "SELECT :id, c.user_id, c.id, "
            "(SELECT m.id FROM chat_messages m "
            " WHERE m.id = :m AND m.chat_id = c.id AND m.user_id = c.user_id), "
            ":q, :a, :model, CAST(:e AS vector) "
            "FROM chats c WHERE c.id = :c AND c.user_id = :u"
        ),
        {
            "id": turn_id,
            "u": user_id,
            "c": chat_id,
            "m": message_id,
            "q": question,
            "a": answer,
            "model": embedding_model,
            "e": vector_literal(embedding),
        },
    )
    return turn_id if result.rowcount else None


async def search_turns(
    conn: AsyncConnection,
    user_id: uuid.UUID,
    query_vector: Sequence[float],
    embedding_model: str,
    *,
    min_similarity: float | None = None,
    limit: int = 200,
) -> list[TurnMatch]:
    """The user's turns most similar to ``query_vector`` (cosine), most similar first.

    Only turns embedded by ``embedding_model`` with the query's dimension are compared;
    with ``min_similarity``, only those at least that similar are returned.
    """
    # OFFSET 0 keeps the inner query from being flattened, so the distance is only ever
    # computed for rows already filtered to this user, model and dimension
    rows = await conn.execute(
        text(
            "SELECT * FROM ("
            " SELECT t.id, t.chat_id, t.message_id, t.question, t.answer, t.created_at,"
            " 1 - (t.embedding <=> CAST(:q AS vector)) AS similarity"
            " FROM chat_turn_embeddings t"
            " WHERE t.user_id = :u AND t.embedding_model = :model"
            " AND vector_dims(t.embedding) = :dim"
            " OFFSET 0"
            ") s WHERE s.similarity >= :min "
            "ORDER BY s.similarity DESC, s.created_at DESC, s.id LIMIT :n"
        ),
        {
            "u": user_id,
            "q": vector_literal(query_vector),
            "model": embedding_model,
            "dim": len(query_vector),
            "min": -2.0 if min_similarity is None else float(min_similarity),
            "n": limit,
        },
    )
    return [TurnMatch(**{**r._mapping, "similarity": float(r.similarity)}) for r in rows]


_KEYWORD_SEARCH = """
WITH terms AS (SELECT DISTINCT u.lexeme AS term
               FROM unnest(to_tsvector('english', quire_keyword_text(:query))) u),
query AS (SELECT CAST(string_agg(quote_literal(term), ' | ') AS tsquery) AS q FROM terms),
own AS (
    SELECT t.id, t.tsv FROM chat_turn_embeddings t
    WHERE t.user_id = :u AND t.embedding_model = :model AND vector_dims(t.embedding) = :dim
),
stats AS (
    SELECT count(*)::float8 AS n,
           greatest(avg(quire_tsvector_length(tsv)), 1)::float8 AS avgdl
    FROM own
),
hits AS (
    SELECT o.id, w.lexeme AS term, coalesce(array_length(w.positions, 1), 1)::float8 AS tf,
           quire_tsvector_length(o.tsv)::float8 AS dl
    FROM own o, query, unnest(o.tsv) w
    WHERE o.tsv @@ query.q AND w.lexeme IN (SELECT term FROM terms)
),
df AS (SELECT term, count(*)::float8 AS df FROM hits GROUP BY term),
scored AS (
    SELECT h.id, sum(
        ln(1 + (s.n - d.df + 0.5) / (d.df + 0.5))
        * h.tf * (CAST(:k1 AS float8) + 1)
        / (h.tf + CAST(:k1 AS float8)
           * (1 - CAST(:b AS float8) + CAST(:b AS float8) * h.dl / s.avgdl))
    ) AS bm25
    FROM hits h JOIN df d USING (term), stats s GROUP BY h.id
)
SELECT t.id, t.chat_id, t.message_id, t.question, t.answer, t.created_at,
       coalesce(1 - (t.embedding <=> CAST(:qv AS vector)), 0) AS similarity,
       sc.bm25 AS keyword_score
FROM scored sc JOIN chat_turn_embeddings t ON t.id = sc.id
ORDER BY sc.bm25 DESC, t.created_at DESC, t.id
LIMIT :n
"""


async def keyword_turns(
    conn: AsyncConnection,
    user_id: uuid.UUID,
    query: str,
    embedding_model: str,
    dimension: int,
    *,
    query_vector: Sequence[float] | None = None,
    k1: float = 1.2,
    b: float = 0.75,
    limit: int = 200,
) -> list[TurnMatch]:
    """The user's turns that share words with ``query``, best BM25 score first.

    Postgres full text (English stemming, stop words dropped) over each turn's question and
    answer; term statistics are the user's own turns'. Like :func:`search_turns`, only turns
    embedded by ``embedding_model`` at ``dimension`` count; each comes with its cosine
    similarity to ``query_vector`` (0 without one).
    """
    rows = await conn.execute(
        text(_KEYWORD_SEARCH),
        {
            "u": user_id,
            "query": query,
            "model": embedding_model,
            "dim": dimension,
            "qv": vector_literal(query_vector) if query_vector is not None else None,
            "k1": k1,
            "b": b,
            "n": limit,
        },
    )
    return [
        TurnMatch(
            **{
                **r._mapping,
                "similarity": float(r.similarity),
                "keyword_score": float(r.keyword_score),
            }
        )
        for r in rows
    ]


async def count_turns(conn: AsyncConnection, user_id: uuid.UUID) -> int:
    """How many turns the user has stored (all models)."""
    found = await conn.execute(
        text("SELECT count(*) FROM chat_turn_embeddings WHERE user_id = :u"), {"u": user_id}
    )
    return int(found.scalar() or 0)


async def forget_turns(conn: AsyncConnection, user_id: uuid.UUID) -> int:
    """Delete every remembered turn of ``user_id`` (their chats and messages stay); how
    many went. Later questions then get no "previous discussion" from them."""
    result = await conn.execute(
        text("DELETE FROM chat_turn_embeddings WHERE user_id = :user"), {"user": user_id}
    )
    return result.rowcount or 0
