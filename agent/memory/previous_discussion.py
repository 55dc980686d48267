"""Turn memory: earlier answers of the user's own chats as "previous discussion" context.

After each answer the turn (question + answer) is embedded and stored under the user and
the chat (:func:`remember_turn`, meant to run in the background). For a new question the
user's earlier turns are searched two ways (:func:`previous_discussion`): by meaning (a
turn counts when its cosine similarity to the question reaches ``min_similarity``) and by
keywords (BM25 over the turn's text, so a rare name finds the turn that mentioned it even
when the embeddings miss it). The two rankings are fused by reciprocal rank fusion
(:func:`agent.retrieval.fusion.weighted_rrf`), and the fused score is raised by a bonus when
the turn comes from the chat being asked in and another when it is recent.
:func:`previous_discussion_block` renders them for the prompt.

Turns are only ever read back for the user who had them, and only those embedded by the
configured embedding model count. When the question cannot be embedded, the keyword half
alone answers.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from agent.db import turns as db
from agent.retrieval.citations import CITATION_RE
from agent.retrieval.fusion import weighted_rrf
from agent.services import Services

__all__ = [
    "PREVIOUS_DISCUSSION_HEADER",
    "PastTurn",
    "previous_discussion",
    "previous_discussion_block",
    "remember_turn",
    "turn_text",
]

log = logging.getLogger(__name__)

PREVIOUS_DISCUSSION_HEADER = (
    "Previous discussion (from the user's earlier chats; background only, "
    "not a document: do not cite it):"
)
"""First line of :func:`previous_discussion_block`."""

EMBED_QUESTION_CHARS = 600
"""Most characters of the question that go into a turn's embedding."""
EMBED_ANSWER_CHARS = 1400
"""Most characters of the answer that go into a turn's embedding."""
STORED_QUESTION_CHARS = 2000
"""Most characters of the question kept with a stored turn."""
STORED_ANSWER_CHARS = 6000
"""Most characters of the answer kept with a stored turn."""
CANDIDATES = 200
"""Most turns each half of the search (meaning, keywords) gives to the fusion."""

_ITEM_MIN_CHARS = 120
_ITEM_QUESTION_CHARS = 200


@dataclass(frozen=True)
class PastTurn:
    """An earlier turn of the user's, ranked for a question.

    ``similarity`` is the cosine similarity to the question (0 when it was not embedded);
    ``keyword_score`` its BM25 score for the question's words (0: no word in common);
    ``score`` the fused rank score (RRF of the two rankings) times ``1 +`` the same-chat and
    recency bonuses; ``same_chat`` says whether it comes from the chat being asked in.
    """

    question: str
    answer: str
    chat_id: uuid.UUID
    created_at: datetime
    similarity: float
    score: float
    same_chat: bool
    keyword_score: float = 0.0


def _squash(value: str) -> str:
    return " ".join(value.split())


def _clip(value: str, limit: int) -> str:
    if len(value) <= limit:
        return value
    if limit <= 1:
        return "…"[:limit]
    cut = value[: limit - 1]
    space = cut.rfind(" ")
    if space > limit * 0.6:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-") + "…"


def _plain(value: str) -> str:
    """One line without citation ids (they only mean something in their own context)."""
    return _squash(CITATION_RE.sub("", value or ""))


def turn_text(question: str, answer: str) -> str:
    """The text embedded for a turn: ``Q: …`` then ``A: …``, each trimmed to a budget."""
    return (
        f"Q: {_clip(_plain(question), EMBED_QUESTION_CHARS)}\n"
        f"A: {_clip(_plain(answer), EMBED_ANSWER_CHARS)}"
    )


async def remember_turn(
    services: Services,
    user_id: uuid.UUID,
    chat_id: uuid.UUID,
    question: str,
    answer: str,
    message_id: uuid.UUID | None = None,
) -> None:
    """Embed a finished turn and store it under the user's chat; best effort.

    Meant to run in the background after the answer is saved: the chat must already exist
    and belong to ``user_id`` (otherwise nothing is stored). ``message_id`` is the stored
    assistant message, kept when it belongs to that chat. A turn with an empty question or
    answer is skipped. Failures (the chat deleted meanwhile, the embedder down) are logged,
    never raised.
    """
    if not (question or "").strip() or not (answer or "").strip():
        return
    try:
        embedder = services.embeddings.embedder
        content = turn_text(question, answer)
        vectors = await asyncio.to_thread(embedder.embed_documents, [content])
        async with services.engine.begin() as conn:
            stored = await db.insert_turn(
                conn,
                user_id,
                chat_id,
                _clip(question.strip(), STORED_QUESTION_CHARS),
                _clip(answer.strip(), STORED_ANSWER_CHARS),
                services.embeddings.name,
                vectors[0],
                message_id=message_id,
            )
        if stored is None:
            log.debug("turn not remembered: chat %s is not user %s's", chat_id, user_id)
    except Exception:
        log.warning("could not remember a turn of chat %s", chat_id, exc_info=True)


async def _question_vector(services: Services, question: str) -> Sequence[float] | None:
    """The question embedded for the dense half; ``None`` when it cannot be (logged)."""
    embedder = services.embeddings.embedder
    try:
        return await asyncio.to_thread(
            embedder.embed_query, _clip(_squash(question), EMBED_QUESTION_CHARS)
        )
    except Exception as exc:  # background context only: the keyword half still answers
        log.warning(
            "previous discussion by keywords only, the question could not be embedded: %s", exc
        )
        return None


async def _candidates(
    services: Services,
    user_id: uuid.UUID,
    question: str,
    query_vector: Sequence[float] | None,
    min_similarity: float,
) -> tuple[list[db.TurnMatch], list[db.TurnMatch]]:
    """The user's turns by meaning (above ``min_similarity``) and by keywords, each best
    first."""
    embeddings = services.embeddings
    dense: list[db.TurnMatch] = []
    keyword: list[db.TurnMatch] = []
    async with services.engine.connect() as conn:
        if query_vector is not None:
            dense = await db.search_turns(
                conn,
                user_id,
                query_vector,
                embeddings.name,
                min_similarity=min_similarity,
                limit=CANDIDATES,
            )
        if question.strip():
            keyword = await db.keyword_turns(
                conn,
                user_id,
                _clip(_squash(question), EMBED_QUESTION_CHARS),
                embeddings.name,
                len(query_vector) if query_vector is not None else embeddings.dimension,
                query_vector=query_vector,
                k1=services.settings.bm25_k1,
                b=services.settings.bm25_b,
                limit=CANDIDATES,
            )
    return dense, keyword


async def previous_discussion(
    services: Services,
    user_id: uuid.UUID,
    chat_id: uuid.UUID | None,
    question: str,
    *,
    k: int = 3,
    min_similarity: float = 0.35,
    same_chat_boost: float = 0.2,
    recency_boost: float = 0.1,
    recent_days: float = 7,
    query_vector: Sequence[float] | None = None,
) -> list[PastTurn]:
    """The user's ``k`` earlier turns that best bear on ``question``, best first.

    Hybrid: the user's own turns (embedded by the current model) whose cosine similarity
    to the question is at least ``min_similarity``, and those sharing words with it (BM25),
    fused by reciprocal rank fusion. The fused score is multiplied by ``1 + bonus``, the
    bonus being ``same_chat_boost`` for a turn of ``chat_id`` plus ``recency_boost`` for
    one stored within ``recent_days``; equal scores keep the newer first.
    Pass ``query_vector`` (the question embedded by the same model) to skip embedding the
    question again; without ``question`` text only the dense half runs.
    """
    if k <= 0:
        return []
    question = question or ""
    if query_vector is None and question.strip():
        query_vector = await _question_vector(services, question)
    if query_vector is None and not question.strip():
        return []
    dense, keyword = await _candidates(services, user_id, question, query_vector, min_similarity)
    matches = {t.id: t for t in dense}
    for t in keyword:  # the keyword row has both figures
        matches[t.id] = t
    fused = weighted_rrf(
        [[t.id for t in dense], [t.id for t in keyword]], [1.0, 1.0], services.settings.rrf_k
    )
    recent_since = datetime.now(UTC) - timedelta(days=recent_days)
    ranked: list[PastTurn] = []
    for turn_id, rrf in fused:
        row = matches[turn_id]
        same_chat = chat_id is not None and row.chat_id == chat_id
        bonus = (same_chat_boost if same_chat else 0.0) + (
            recency_boost if row.created_at >= recent_since else 0.0
        )
        ranked.append(
            PastTurn(
                question=row.question,
                answer=row.answer,
                chat_id=row.chat_id,
                created_at=row.created_at,
                similarity=round(row.similarity, 6),
                score=round(rrf * (1 + bonus), 9),
                same_chat=same_chat,
                keyword_score=round(row.keyword_score, 6),
            )
        )
    ranked.sort(key=lambda t: (t.score, t.created_at), reverse=True)
    return ranked[:k]


def previous_discussion_block(turns: Sequence[PastTurn], max_chars: int = 1200) -> str:
    """The prompt block listing ``turns`` in at most ``max_chars`` (empty when none fit).

    When the room is short the first (best) turns are kept and the rest left out. Each
    turn is one item: where it comes from (this chat, or another chat and its date),
    the question and the answer, trimmed so that every turn gets a fair share of the room.
    Citation ids of the old answers are removed: they do not refer to the current sources.
    """
    if not turns:
        return ""
    used = len(PREVIOUS_DISCUSSION_HEADER)
    fitting = min(len(turns), (max_chars - used) // (_ITEM_MIN_CHARS + 1))  # best ones first
    if fitting <= 0:
        return ""
    lines = [PREVIOUS_DISCUSSION_HEADER]
    for i, turn in enumerate(turns[:fitting]):
        share = (max_chars - used) // (fitting - i) - 1  # -1: the newline before it
        where = "this chat" if turn.same_chat else f"another chat, {turn.created_at:%Y-%m-%d}"
        head = f"- ({where}) Q: "
        question = _clip(_plain(turn.question), min(_ITEM_QUESTION_CHARS, share // 3))
        middle = "\n  A: "
        answer = _clip(_plain(turn.answer), share - len(head) - len(question) - len(middle))
        item = f"{head}{question}{middle}{answer}"
        lines.append(item)
        used += 1 + len(item)
    return "\n".join(lines)
