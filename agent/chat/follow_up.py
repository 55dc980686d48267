"""Follow-ups that continue the chat's last grounded exchange, so the model's prompt cache
holds all of the prompt but the new question.

A grounded answer's prompt is the system prompt, the passages and the question; the model's
KV cache keeps it with the reply (llama.cpp's prompt cache in the model process). A
follow-up asked as a fresh prompt (history, new passages, question) shares only the system
prompt with it, and the CPU model reads everything else again: seconds. Continued instead,
the follow-up is one more user message after the earlier exchange, holding only the
passages not shown yet and the question; the model reads those few tokens and nothing else.

:class:`ExchangeLog` keeps each chat's last exchange in this process (the model's cache is
per process too): the messages sent, the model's own reply (the cache holds its tokens, not
the guarded answer's) and the passages shown, which stay citable. It is bounded: a
continuation longer than ``max_chars`` starts afresh, and the least recently used chats go
first. A turn served by another worker finds no exchange and builds a fresh prompt.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from agent import prompts
from agent.ingest.sentences import split_sentences
from agent.retrieval.context import passage_block
from agent.retrieval.focus import GAP


@dataclass(frozen=True)
class Exchange:
    """One answered grounded turn: the messages the model got, its reply, the passages."""

    messages: tuple[BaseMessage, ...]
    reply: str
    shown: tuple[dict, ...]
    """Citation payloads of every passage in ``messages`` (all citable in a follow-up)."""
    scope: str
    """The user, book and time window the passages were searched in (:func:`scope_key`)."""

    @property
    def chars(self) -> int:
        """The exchange's length in characters (prompt and reply)."""
        return sum(len(str(m.content)) for m in self.messages) + len(self.reply)


class ExchangeLog:
    """The last grounded exchange of each chat, least recently used dropped past ``size``."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._items: OrderedDict[str, Exchange] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, chat_id: str, exchange: Exchange) -> None:
        """Keep ``exchange`` as ``chat_id``'s last."""
        with self._lock:
            self._items[chat_id] = exchange
            self._items.move_to_end(chat_id)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def last(self, chat_id: str) -> Exchange | None:
        """``chat_id``'s last exchange, if this process answered it."""
        with self._lock:
            exchange = self._items.get(chat_id)
            if exchange is not None:
                self._items.move_to_end(chat_id)
            return exchange

    def forget(self, chat_id: str) -> None:
        """Drop ``chat_id``'s exchange (the chat went elsewhere: small talk, a summary...)."""
        with self._lock:
            self._items.pop(chat_id, None)


EXCHANGES = ExchangeLog()
"""This process's exchanges (the model process's cache is shared by all its chats)."""


def scope_key(state: Mapping[str, Any]) -> str:
    """What a follow-up must share with the exchange it continues: user, book, documents
    and corpus searched, window."""
    return repr(
        (
            state.get("user_id"),
            state.get("book_id"),
            state.get("search_filter") or {},
            state.get("time_window"),
        )
    )


def _shown(payload: dict) -> str:
    """What the model read of a passage."""
    return payload.get("context_text") or payload["text"]


def has_exchange(state: Mapping[str, Any], exchanges: ExchangeLog = EXCHANGES) -> bool:
    """Whether this turn's chat has a last exchange in this process, in the same scope: a
    follow-up may continue it, and every passage it showed is in the model's cache."""
    previous = exchanges.last(state["chat_id"])
    return previous is not None and previous.scope == scope_key(state)


def can_continue(state: Mapping[str, Any]) -> bool:
    """Whether this turn's answer may continue the chat's last exchange: a plain grounded
    answer (no web results, no conflict to point out, no tool results)."""
    return bool(
        state.get("relevant")
        and state.get("retrieved")
        and not state.get("web_context")
        and not state.get("conflicts")
        and not state.get("summary_context")
    )


@dataclass(frozen=True)
class Continuation:
    """A follow-up's messages and the passages it may cite (earlier ones included)."""

    messages: list[BaseMessage]
    citable: list[dict]


def _core(sentence: str) -> str:
    """A sentence without the gap marks around it and its inner spacing."""
    return " ".join(sentence.strip(GAP + " ").split())


def unread_sentences(text: str, read: str) -> str:
    """The sentences of ``text`` that ``read`` does not hold, in order, with a gap (``…``)
    wherever sentences were left out; ``""`` when there are none."""
    seen = {_core(s) for s in split_sentences(read)}
    parts: list[str] = []
    left_out = False
    for sentence in split_sentences(text):
        core = _core(sentence)
        if core and core not in seen:
            parts += [GAP, core] if left_out or sentence.startswith(GAP) else [core]
            left_out = sentence.endswith(GAP)
        else:  # a sentence read before, or a gap mark
            left_out = True
    if parts and left_out:
        parts.append(GAP)
    return " ".join(parts)


def _unread(payload: dict, before: Mapping[str, dict]) -> tuple[dict, str] | None:
    """What of ``payload`` the model has not read: the payload to cite (its text read so
    far and now, for the support checks) and the text to show; ``None`` if it read it all.
    A passage shown before under the same id shows only its new sentences (the model's
    cache holds the rest: a follow-up on overlapping context reads only what is new)."""
    earlier = before.get(payload["id"])
    if earlier is None:
        return payload, _shown(payload)
    new = unread_sentences(_shown(payload), _shown(earlier))
    if not new:
        return None
    read = f"{_shown(earlier)} {new.replace(GAP, ' ')}"
    return {**payload, "context_text": " ".join(read.split())}, new


def continue_exchange(
    previous: Exchange, state: Mapping[str, Any], max_chars: int
) -> Continuation | None:
    """The follow-up (``state``'s question and passages) as one more user message after
    ``previous``: what it has not shown of the passages (new passages whole, the new
    sentences of passages shown before) and the question. ``None`` when the scope changed
    or the whole would pass ``max_chars`` (start afresh)."""
    if previous.scope != scope_key(state):
        return None
    question, retrieved = state["question"], state["retrieved"]
    before = {p["id"]: p for p in previous.shown}
    fresh = [found for p in retrieved if (found := _unread(p, before)) is not None]
    if fresh:
        blocks = (passage_block(p["id"], p["source"], shown) for p, shown in fresh)
        body = prompts.FOLLOW_UP_USER.format(context="\n\n".join(blocks), question=question)
    else:
        body = prompts.FOLLOW_UP_SAME_PASSAGES.format(question=question)
    if previous.chars + len(body) > max_chars:
        return None
    messages = [*previous.messages, AIMessage(previous.reply), HumanMessage(body)]
    fresh_ids = {p["id"] for p, _ in fresh}
    citable = [p for p, _ in fresh] + [p for p in previous.shown if p["id"] not in fresh_ids]
    return Continuation(messages, citable)
