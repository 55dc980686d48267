"""Messages the keyword rules let through, read by meaning: small talk, questions about the
assistant, and requests for the whole document's summary, recognised by their nearest
labelled examples under the library's own embedder.

The rules (:mod:`agent.chat.routing`) know "thanks" and "summarize"; a stranger writes
"cheers mate", "are you chatgpt?" or "what's this one about?". Those fell through to a
specific search of the documents. Only a clear match moves a message: its intent's
examples must be near (cosine) and nearer than every other intent's, the specific
questions' included, so "Who wrote the novel War and Peace?" stays a search. Analysis and
broad questions are not taken from here: measured on our question sets, their examples
pulled in plain factual questions ("Is Mr. Bingley a rich man?"), and their keywords
serve them well.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import numpy as np

from agent.chat.routing import RouteChoice, summary_topic
from agent.text import plain_words

logger = logging.getLogger(__name__)

Intent = Literal["small_talk", "name", "book_summary", "specific"]

# written for this purpose, about no document of ours (the routing sets stay a fair test)
EXAMPLES: dict[Intent, tuple[str, ...]] = {
    "small_talk": (
        "hi", "hello there", "thanks", "thank you so much", "cheers", "great, thanks",
        "nice one", "good evening", "how are you?", "ok cool", "bye for now",
        "that was helpful", "brilliant, thank you", "see you later", "you're great",
        "awesome", "lovely, thanks", "ty", "thx mate", "well that's interesting",
    ),
    "name": (
        "who are you?", "what is your name?", "what can you help me with?", "are you an AI?",
        "are you ChatGPT?", "tell me about yourself", "what kind of assistant are you?",
        "how do you work?", "who built you?", "what are you able to do?",
        "introduce yourself please", "what model are you?",
    ),
    "book_summary": (
        "summarize the book", "what is this document about?",
        "give me an overview of the whole text", "what's the book about in a nutshell?",
        "give me the short version of this book", "a quick rundown of the story please",
        "what's the storyline?", "what happens in this book overall?", "tell me the plot",
        "what is the main idea of this document?", "sum this up for me",
        "condense the text into a paragraph", "what's the general story?",
        "explain the book briefly", "brief synopsis of the novel",
        "high-level summary of the report",
    ),
    "specific": (
        "who is the captain's wife?", "what year was the bridge built?",
        "what is the name of the dog?", "how many people work there?",
        "where does the meeting take place?", "when did she arrive in town?",
        "what colour is the door?", "did he sign the contract?",
        "what is the first name of the doctor?", "which road leads to the harbour?",
        "what does the sign say?", "how much does the ticket cost?", "who wrote the letter?",
        "what did the teacher say to the boy?", "is the museum open on Mondays?",
        "what is written on the box?", "how old is the girl?", "who won the race?",
        "what is the capital mentioned in chapter two?", "what is the oven temperature?",
    ),
}  # fmt: skip

# how near an intent's examples must be, and by how much nearer than any other intent's
# (measured on 128 labelled routing messages, 34 unseen ones and 460 eval questions: no
# eval question moved)
_NEAR = {"small_talk": 0.5, "name": 0.5, "book_summary": 0.45}
_AHEAD = {"small_talk": 0.2, "name": 0.2, "book_summary": 0.15}


@dataclass(frozen=True)
class IntentMatch:
    """The intent whose examples are nearest a message, how near (the mean cosine of its
    two nearest examples), and how far ahead of the next intent."""

    intent: Intent
    similarity: float
    ahead: float


_vectors: dict[tuple[int, str], dict[Intent, np.ndarray]] = {}


def example_vectors(
    embedder, label: str = "", folder: Path | None = None
) -> dict[Intent, np.ndarray]:
    """Each intent's examples embedded by ``embedder`` (named ``label``): kept in memory,
    and in ``folder`` (the model cache) so a new process loads them instead of spending
    ~0.6 s of its first turn embedding them."""
    key = (id(embedder), label)
    if key in _vectors:
        return _vectors[key]
    digest = hashlib.sha256(json.dumps([label, EXAMPLES], sort_keys=True).encode()).hexdigest()
    path = folder / f"intents-{digest[:16]}.npz" if folder is not None and label else None
    vectors: dict[Intent, np.ndarray] | None = None
    if path is not None and path.exists():
        with contextlib.suppress(Exception), np.load(path) as stored:  # torn: embedded again
            vectors = {intent: stored[intent] for intent in EXAMPLES}
    if vectors is None:
        vectors = {
            intent: np.asarray([embedder.embed_query(t) for t in texts], dtype=np.float32)
            for intent, texts in EXAMPLES.items()
        }
        if path is not None:
            with contextlib.suppress(OSError):
                path.parent.mkdir(parents=True, exist_ok=True)
                partial = path.with_suffix(".tmp.npz")
                np.savez(partial, **vectors)
                partial.replace(path)
    _vectors[key] = vectors
    return vectors


def nearest_intent(
    embedder, vector: Sequence[float], label: str = "", folder: Path | None = None
) -> IntentMatch:
    """The intent whose examples lie nearest ``vector`` (a message embedded by
    ``embedder``, unit length; ``label`` and ``folder``: see :func:`example_vectors`)."""
    v = np.asarray(vector, dtype=np.float32)
    near = {
        intent: float(np.sort(vectors @ v)[-2:].mean())
        for intent, vectors in example_vectors(embedder, label, folder).items()
    }
    ranked = sorted(near, key=near.__getitem__, reverse=True)
    best, second = ranked[0], ranked[1]
    return IntentMatch(best, near[best], near[best] - near[second])


_SUMMARY_WORDS = frozenset(plain_words(" ".join(EXAMPLES["book_summary"])).split())


def routed_by_intent(
    choice: RouteChoice,
    message: str,
    match: IntentMatch,
    *,
    single_book: bool,
    book_names: Sequence[str] = (),
) -> RouteChoice:
    """``choice`` (the rules' specific search) moved to the path ``match`` clearly reads:
    small talk, the fixed reply about the assistant, or the one book's stored summary for
    a request naming no topic of its own; else ``choice`` unchanged."""
    intent = match.intent
    if intent == "specific" or match.similarity < _NEAR[intent] or match.ahead < _AHEAD[intent]:
        return choice
    if intent == "small_talk":
        return RouteChoice("general", "small talk, read by meaning: no retrieval")
    if intent == "name":
        return RouteChoice("direct", "a question about the assistant, read by meaning")
    # the examples' own words ("rundown", "storyline") name no topic either
    if single_book and not summary_topic(message, book_names=book_names, filler=_SUMMARY_WORDS):
        return replace(
            choice,
            route="global_summary",
            reason="summary request for the one book in scope, read by meaning",
            mode=None,
            web="",
        )
    return choice


async def route_by_meaning(
    services,
    choice: RouteChoice,
    message: str,
    *,
    single_book: bool,
    book_names: Sequence[str] = (),
) -> RouteChoice:
    """:func:`routed_by_intent` for a message the rules sent to a specific search, read
    with the library's local embedder; ``choice`` as it was with a hosted embedder or when
    the message cannot be embedded."""
    # the thresholds are MiniLM's cosines: a hosted embedder's lie elsewhere
    local = services.settings.embedding_model == "local"
    if not local or (choice.route, choice.mode) != ("hybrid", "specific"):
        return choice
    from agent.retrieval.search import embed_question

    vector = await embed_question(services, message)
    if vector is None:
        return choice
    embeddings, settings = services.embeddings, services.settings

    def read() -> IntentMatch:  # in a thread: the model cache folder is made on disk
        return nearest_intent(
            embeddings.embedder, vector, embeddings.name, settings.model_cache_dir
        )

    try:
        match = await asyncio.to_thread(read)
    except Exception as exc:  # routing by rules alone is still a route
        logger.warning("the message's intent could not be read: %s", exc)
        return choice
    return routed_by_intent(choice, message, match, single_book=single_book, book_names=book_names)
