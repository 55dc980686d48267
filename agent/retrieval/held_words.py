"""The question's words as evidence when no chunk is similar enough (steps of
:func:`agent.retrieval.ranking.rank`): keyword hits that hold most of the question's
weight, and documents that know the words of a question none of their chunks is near."""

from __future__ import annotations

import re
import uuid

from agent.db.keyword_sql import question_words_known, term_shares
from agent.db.scope import SearchScope
from agent.retrieval.anchors import anchors
from agent.retrieval.candidates import Found
from agent.retrieval.reads import Reads

Scored = list[tuple[uuid.UUID, float]]

WORDS_HELD_SHARE = 0.7
"""The share of a question's IDF weight (:func:`~agent.db.keyword_sql.term_shares`) a
keyword hit must hold to be about the question when no chunk is similar enough. Measured
with each question's own documents in scope: the unanswerable questions of our two eval
sets share at most 0.43 with a chunk (0.69 with every document of the set in scope)."""
WORDS_HELD_CANDIDATES = 3

KNOWN_WORDS_SHARE = 0.4
"""The share of a question's IDF weight the documents in scope must hold, when no chunk is
near it, for it to be about them (:func:`knows_the_question`). Measured on the questions of
our three eval sets that no chunk is near: general questions share 0-0.58 ("the speed of
light in a vacuum" with a novel), questions about the documents 0.46-0.63 ("the name of the
volunteer lock-keeper's dog": "dog" and "name" are the words the podcast lacks)."""

_ACRONYM = re.compile(r"\b[A-Z][A-Z0-9]{1,}\b")


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


async def knows_the_question(reads: Reads, scope: SearchScope, query: str) -> bool:
    """Whether the documents in scope know what ``query`` is about, though no chunk is
    near it: they hold most of its words (:data:`KNOWN_WORDS_SHARE`) and every name,
    figure and acronym it uses.

    MiniLM puts a question about a notebook's own jargon far from every chunk ("the serial
    number of the multiprobe kept as the main instrument": 0.26 against the header that
    lists "multiprobe #2 (serial MP2-0448)"), and it was answered as not covered, from
    "general knowledge" that the 1.5B model makes up ("serial number 12345", "the
    lock-keeper's dog is Max"). Such a question is answered from the passages, which say
    "not found" when they do not hold it. A question naming what the documents never do
    ("the capital of Peru", "Who won the 2018 World Cup?") stays a general one."""
    names = " ".join(sorted(anchors(query) | set(_ACRONYM.findall(query))))
    share, unknown_name = await reads.read(
        lambda conn: question_words_known(conn, scope, query, names)
    )
    return share >= KNOWN_WORDS_SHARE and not unknown_name
