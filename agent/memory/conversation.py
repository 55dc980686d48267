"""Conversation memory: a running summary per chat, recent turns, standalone follow-ups.

After each turn the exchange is added to the chat's summary at once, as a plain
``Q: …; A: …`` line; then the model rewrites the summary (goals, constraints, decisions,
key facts) with that line folded in, when the process lives long enough. Prompts use the
summary when there is one and the last ``history_messages`` messages otherwise. A
follow-up question ("what did she do next?") is rewritten into a standalone search query
before retrieval.

The LLM-free ``extractive`` model gets deterministic fallbacks for both.
"""

from __future__ import annotations

import logging
import re
import uuid
from dataclasses import dataclass, field

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from agent.db import chats
from agent.db.chats import ChatOwnershipError
from agent.prompts import (
    HISTORY_SUMMARY_BLOCK,
    HISTORY_TURNS_BLOCK,
    MEMORY_UPDATE_SYSTEM,
    MEMORY_UPDATE_USER,
    STANDALONE_QUESTION_SYSTEM,
    STANDALONE_QUESTION_USER,
)
from agent.services import Services
from agent.text import content_words

logger = logging.getLogger(__name__)

EXTRACTIVE_LLM_TYPE = "quire-extractive"
TURN_CHARS = 600
"""Longest message text shown per turn in a history block."""
ANSWER_INPUT_CHARS = 2000
"""Longest answer text given to the summary writer."""
STANDALONE_MAX_CHARS = 400
"""A rewrite longer than this is not a question: the original is kept."""
SHORT_QUESTION_WORDS = 3
"""Questions of at most this many words count as follow-ups."""

_CHUNK_ID = re.compile(r"\s*#chk_[0-9a-f]{8}\b")
_WORD = re.compile(r"[a-z']+")
_FOLLOW_UP_WORDS = frozenset(
    [
        "it",
        "its",
        "it's",
        "he",
        "him",
        "his",
        "she",
        "her",
        "hers",
        "they",
        "them",
        "their",
        "theirs",
        "that",
        "this",
        "those",
        "these",
    ]
)
_FOLLOW_UP_STARTS = ("and ", "what about", "how about", "why", "but ", "so ", "then ")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


@dataclass(frozen=True)
class ChatMemory:
    """What a chat remembers: its running summary and its last messages (oldest first)."""

    summary: str | None = None
    recent: list[tuple[str, str]] = field(default_factory=list)

    @property
    def has_history(self) -> bool:
        """Whether there is anything to remember."""
        return bool(self.summary) or bool(self.recent)


def is_extractive(model: object) -> bool:
    """Whether ``model`` is the LLM-free extractive answerer."""
    return getattr(model, "_llm_type", "") == EXTRACTIVE_LLM_TYPE


def _clean(value: str) -> str:
    """Text without citation ids (they belong to an old context) and with single spaces."""
    return " ".join(_CHUNK_ID.sub("", value).split())


def _clip(value: str, limit: int) -> str:
    return value if len(value) <= limit else value[: limit - 1].rstrip() + "…"


async def load_memory(
    services: Services, user_id: uuid.UUID, chat_id: uuid.UUID, *, limit: int | None = None
) -> ChatMemory:
    """The chat's summary and last ``limit`` messages (default ``history_messages``).

    Only the owner's chat is read: another user's (or an unknown) chat gives empty memory.
    """
    limit = services.settings.history_messages if limit is None else limit
    async with services.engine.connect() as conn:
        owned, summary = await chats.find_conversation_summary(conn, user_id, chat_id)
        if not owned:
            return ChatMemory()
        recent = await chats.recent_messages(conn, user_id, chat_id, limit) if limit > 0 else []
    return ChatMemory(summary=summary or None, recent=recent)


def history_block(memory: ChatMemory) -> str:
    """The conversation for a prompt: the summary if any, else the recent turns ('' if none)."""
    if memory.summary:
        return HISTORY_SUMMARY_BLOCK.format(summary=memory.summary.strip())
    turns = [
        f"{'User' if role == 'user' else 'Assistant'}: {_clip(_clean(content), TURN_CHARS)}"
        for role, content in memory.recent
        if content.strip()
    ]
    return HISTORY_TURNS_BLOCK.format(turns="\n".join(turns)) if turns else ""


# --- the running summary -------------------------------------------------------------------


def _first_sentence(value: str) -> str:
    value = _clean(value)
    return _SENTENCE_END.split(value, maxsplit=1)[0] if value else ""


def _cap_summary(summary: str, limit: int) -> str:
    """``summary`` within ``limit`` characters, dropping its oldest lines first."""
    lines = [line for line in summary.strip().splitlines() if line.strip()]
    while len(lines) > 1 and len("\n".join(lines)) > limit:
        lines.pop(0)
    return _clip("\n".join(lines), limit)


def fallback_summary(previous: str | None, question: str, answer: str, limit: int) -> str:
    """The extractive summary: the previous one plus ``Q: ...; A: <first sentence>``."""
    line = f"Q: {_clean(question)}; A: {_first_sentence(answer)}".rstrip()
    merged = f"{previous.strip()}\n{line}" if previous and previous.strip() else line
    return _cap_summary(merged, limit)


def _trim_written_summary(summary: str, limit: int) -> str:
    """A model-written summary within ``limit``: cut at the last whole line that fits."""
    summary = summary.strip()
    if len(summary) <= limit:
        return summary
    cut = summary.rfind("\n", 0, limit)
    return summary[:cut].rstrip() if cut > limit // 2 else _clip(summary, limit)


def summary_update_messages(
    previous: str | None, question: str, answer: str, limit: int
) -> list[BaseMessage]:
    """The model's messages for folding one exchange into a summary of ``limit`` characters
    (the system prompt is one of the openings a model process warms)."""
    return [
        SystemMessage(MEMORY_UPDATE_SYSTEM.format(max_chars=limit)),
        HumanMessage(
            MEMORY_UPDATE_USER.format(
                summary=(previous or "").strip() or "(none yet)",
                question=_clean(question),
                answer=_clip(_clean(answer), ANSWER_INPUT_CHARS),
            )
        ),
    ]


@dataclass(frozen=True)
class RecordedExchange:
    """One exchange stored in a chat's summary as its plain ``Q: …; A: …`` line."""

    previous: str | None
    """The summary before the exchange."""
    stored: str
    """The summary stored now: ``previous`` with the exchange's line."""
    question: str
    answer: str

    @property
    def needs_rewrite(self) -> bool:
        """Whether a model should fold the line into the summary: not for a chat's first
        exchange, which is its own summary (a model would only restate it)."""
        return bool(self.previous and self.previous.strip())


async def record_exchange(
    services: Services, user_id: uuid.UUID, chat_id: uuid.UUID, question: str, answer: str
) -> RecordedExchange:
    """Store the exchange in the chat's summary at once, as its plain line (no model call).

    Nothing waits on a model for the turn to be remembered: a process that exits before a
    model rewrites the summary (``quire ask``) loses nothing, and the chat's next rewrite
    folds the line in. Raises :class:`ChatOwnershipError` when the chat is not the user's.
    """
    limit = services.settings.conversation_summary_chars
    async with services.engine.begin() as conn:
        owned, previous = await chats.find_conversation_summary(
            conn, user_id, chat_id, for_update=True
        )
        if not owned:
            raise ChatOwnershipError(f"chat {chat_id} is not this user's")
        stored = fallback_summary(previous, question, answer, limit)
        await chats.set_conversation_summary(conn, user_id, chat_id, stored)
    return RecordedExchange(previous, stored, question, answer)


async def rewrite_summary(
    services: Services,
    user_id: uuid.UUID,
    chat_id: uuid.UUID,
    recorded: RecordedExchange,
    model: BaseChatModel,
) -> str | None:
    """Have ``model`` fold the recorded exchange into the summary before it, and store the
    result if the chat's summary is still the one recorded (a later exchange recorded
    meanwhile wins: its own rewrite takes this one's line in). Returns the stored summary;
    ``None`` when a later exchange won or the model failed (the plain line stays)."""
    limit = services.settings.conversation_summary_chars
    messages = summary_update_messages(recorded.previous, recorded.question, recorded.answer, limit)
    try:
        reply = await model.ainvoke(messages)
    except Exception:  # the summary is a convenience: never fail the turn for it
        logger.warning("conversation summary failed; the plain one stays", exc_info=True)
        return None
    summary = _trim_written_summary(str(reply.content), limit)
    if not summary:
        return None
    async with services.engine.begin() as conn:
        stored = await chats.set_conversation_summary(
            conn, user_id, chat_id, summary, replacing=recorded.stored
        )
    return summary if stored else None


async def update_summary(
    services: Services,
    user_id: uuid.UUID,
    chat_id: uuid.UUID,
    question: str,
    answer: str,
    model: BaseChatModel,
) -> str:
    """Merge the new turn into the chat's summary in one call (for a caller that waits for
    the model), store it and return it: the exchange's plain line at once (:func:`record_exchange`), then, from a chat's second exchange on,
    ``model``'s rewrite (:func:`rewrite_summary`; not with the extractive model). Raises
    :class:`ChatOwnershipError` (before any model call) when the chat is not the user's.
    """
    recorded = await record_exchange(services, user_id, chat_id, question, answer)
    if not recorded.needs_rewrite or is_extractive(model):
        return recorded.stored
    return await rewrite_summary(services, user_id, chat_id, recorded, model) or recorded.stored


# --- standalone questions ------------------------------------------------------------------


def looks_like_follow_up(question: str) -> bool:
    """Whether ``question`` leans on earlier turns: a pronoun, very short, or "and ..."."""
    lowered = " ".join(question.lower().split())
    words = _WORD.findall(lowered)
    if not words:
        return False
    if len(words) <= SHORT_QUESTION_WORDS:
        return True
    if lowered.startswith(_FOLLOW_UP_STARTS):
        return True
    return any(w in _FOLLOW_UP_WORDS for w in words)


def _last_user_question(memory: ChatMemory, question: str) -> str | None:
    current = " ".join(question.split())
    for role, content in reversed(memory.recent):
        if role == "user" and " ".join(content.split()) != current:
            return content
    return None


def fallback_standalone(question: str, memory: ChatMemory) -> str:
    """The extractive rewrite: the question plus the key terms of the last user question."""
    previous = _last_user_question(memory, question)
    if not previous:
        return question
    have = set(content_words(question))
    extra = [w for w in dict.fromkeys(content_words(previous)) if w not in have]
    return f"{question} {' '.join(extra)}" if extra else question


def _clean_rewrite(reply: str) -> str:
    line = next((ln.strip() for ln in reply.splitlines() if ln.strip()), "")
    line = re.sub(r"^(standalone|rewritten)?\s*(question|query)\s*:\s*", "", line, flags=re.I)
    return line.strip().strip("\"“”'").strip()


async def standalone_question(
    model: BaseChatModel, question: str, memory: ChatMemory, *, rewrite: bool = True
) -> str:
    """``question`` made standalone from the conversation, for retrieval.

    Unchanged (and without a model call) when there is no history or the question does
    not look like a follow-up; unchanged on any model error or unusable reply. Without
    ``rewrite`` (or with the extractive model) the last question's key terms are added
    instead of a model call (the CPU model's rewrite costs seconds before the first token).
    """
    if not memory.has_history or not looks_like_follow_up(question):
        return question
    if not rewrite or is_extractive(model):
        return fallback_standalone(question, memory)
    history = history_block(memory)
    if memory.summary and memory.recent:
        # the summary has the facts; the last exchange has what "it" and "she" point at
        last = ChatMemory(recent=memory.recent[-2:])
        history = f"{history}\n\n{history_block(last)}"
    try:
        reply = await model.ainvoke(
            [
                SystemMessage(STANDALONE_QUESTION_SYSTEM),
                HumanMessage(STANDALONE_QUESTION_USER.format(history=history, question=question)),
            ]
        )
        rewritten = _clean_rewrite(str(reply.content))
    except Exception:
        logger.warning("standalone question rewrite failed; using the question", exc_info=True)
        return question
    if not rewritten or len(rewritten) > STANDALONE_MAX_CHARS:
        return question
    return rewritten
