"""Keyword hits that hold most of the question's weight: evidence when no chunk is similar
enough (a step of :func:`agent.retrieval.ranking.rank`)."""

from __future__ import annotations

import uuid

from agent.db.keyword_sql import term_shares
from agent.db.scope import SearchScope
from agent.retrieval.candidates import Found
from agent.retrieval.reads import Reads

Scored = list[tuple[uuid.UUID, float]]

WORDS_HELD_SHARE = 0.7
"""The share of a question's IDF weight (:func:`~agent.db.keyword_sql.term_shares`) a
keyword hit must hold to be about the question when no chunk is similar enough. Measured
with each question's own documents in scope: the unanswerable questions of our two eval
sets share at most 0.43 with a chunk (0.69 with every document of the set in scope)."""
WORDS_HELD_CANDIDATES = 3


async def held_words(
    reads: Reads, scope: SearchScope, query: str, found: Found, scored: Scored
) -> Scored:
    """The best keyword hits among ``scored`` that hold most of the question's IDF weight,
    in keyword order, with their fused scores.

    The small embedder can miss a passage that names exactly what is asked (0.2 cosine for
    "Who plays Sauron in the example about the Lord of the Rings?" against the paragraph
    that says "Sala Baker ... the villain Sauron in the Lord of the Rings"): no similarity
    floor let it in, and the question was answered as not covered. Its words show that the
    documents do cover it. They also join a ``low_threshold`` layer (a price list at 0.39
    was preferred to "curated the exhibition" at 0.26), not chunks clearing the threshold:
    there they were new passages for follow-ups (418 tokens instead of 67), no answer."""
    fused = dict(scored)
    top = [h.chunk_id for h in found.keyword[0] if h.chunk_id in fused][:WORDS_HELD_CANDIDATES]
    pairs = [(found.records[cid].document_id, cid) for cid in top]
    shares = await reads.read(lambda conn: term_shares(conn, scope, query, pairs))
    return [(cid, fused[cid]) for cid in top if shares.get(cid, 0.0) >= WORDS_HELD_SHARE]
