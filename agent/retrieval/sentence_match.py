"""A question one sentence of a passage answers, though the passage as a whole is far from it.

A child chunk of an office document or a web page runs over several topics: "The fire
assembly point is the car park of the Pellworth Maritime Museum across the road." is the
last of four sentences about parking and bike storage. Under MiniLM "Where do we gather if
there's a fire?" lies 0.29 from that passage (below every threshold: the turn said the
documents do not cover it) and 0.42 from the sentence; "what temperature if I have a fan
oven" lies 0.24 from an ingredients list and 0.70 from "Heat the oven to 190°C (170°C fan,
gas mark 5)." When no chunk is similar enough, the best few fused candidates are read
sentence by sentence; those holding a sentence near the question are evidence after all.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence

import numpy as np

from agent.db.chunks import ChunkRecord, with_parent_texts
from agent.ingest.sentences import split_sentences
from agent.retrieval.context import record_surroundings
from agent.retrieval.query_vectors import unit
from agent.retrieval.reads import Reads

SENTENCE_CANDIDATES = 5
"""How many of the fused best are read sentence by sentence."""
_SHORTEST = 12  # characters: a heading's stray word is no sentence to match

Scored = list[tuple[uuid.UUID, float]]
Embed = Callable[[list[str]], list[list[float]]]
"""Documents' texts to their vectors (an embedder's ``embed_documents``)."""


def _sentences(text: str) -> list[str]:
    return [s for s in split_sentences(text) if len(s.strip()) >= _SHORTEST]


def best_sentence_similarity(
    embed: Embed,
    vectors: Sequence[np.ndarray],
    texts: Sequence[str],
) -> list[float]:
    """For each of ``texts``, the cosine of its sentence nearest any of the unit query
    ``vectors`` (``embed`` embeds documents' texts; -1 for a text without sentences)."""
    pieces = [_sentences(t) for t in texts]
    flat = [s for p in pieces for s in p]
    if not flat or not vectors:
        return [-1.0] * len(texts)
    # sibling candidates' windows overlap: each sentence is embedded once (85 -> 37 here)
    distinct = list(dict.fromkeys(flat))
    row = {s: i for i, s in enumerate(distinct)}
    matrix = np.array([unit(v) for v in embed(distinct)], dtype=np.float32)
    nearest = (matrix @ np.stack(vectors).T).max(axis=1)[[row[s] for s in flat]]
    best, start = [], 0
    for p in pieces:
        best.append(float(nearest[start : start + len(p)].max()) if p else -1.0)
        start += len(p)
    return best


async def sentence_matches(
    embed: Embed,
    vectors: Sequence[np.ndarray],
    scored: Scored,
    records: dict[uuid.UUID, ChunkRecord],
    *,
    threshold: float,
    window: int,
    reads: Reads,
) -> tuple[Scored, float | None]:
    """Of the first :data:`SENTENCE_CANDIDATES` of ``scored`` (fused order), those whose
    parent's ``window`` around them (what the prompt picks its sentences from) holds a
    sentence at least ``threshold`` near the question, nearest first and scored by that
    cosine, with the best cosine read (``None`` when nothing was read)."""
    head = [cid for cid, _ in scored if cid in records][:SENTENCE_CANDIDATES]
    if not head:
        return [], None
    read = await reads.read(lambda conn: with_parent_texts(conn, [records[c] for c in head]))
    texts = [record_surroundings(r, window) for r in read]
    near = await asyncio.to_thread(best_sentence_similarity, embed, vectors, texts)
    ranked = sorted(zip(head, near, strict=True), key=lambda pair: -pair[1])
    return [(cid, sim) for cid, sim in ranked if sim >= threshold], max(near)
