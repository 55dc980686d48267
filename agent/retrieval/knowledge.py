"""Knowledge search as one service: search, optional compression, context, citations.

Used by the chat graph's retrieval step, the ``search`` graph and the ``search_knowledge``
tool. :func:`knowledge_response` gives seed 004's shape: ``answerHints`` (markdown),
``citations`` (document, chunk, query-aware snippet, similarity, page) and
``searchMetadata`` (queries, results, average similarity, rerank, threshold, layer, ms).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from agent import prompts
from agent.db.chunks import ChunkRecord, child_records
from agent.db.scope import SearchScope
from agent.ingest.sentences import split_sentences
from agent.retrieval.citations import citation_id
from agent.retrieval.compared_subjects import compared_subjects
from agent.retrieval.conflicts import Conflict
from agent.retrieval.context import BuiltContext, build_context, surroundings, window_size
from agent.retrieval.focus import focus_by_holder, focus_passages, lone_word_passages
from agent.retrieval.reads import Reads
from agent.retrieval.search import SearchOptions, SearchResult, search
from agent.retrieval.subject_search import search_subjects
from agent.retrieval.types import RetrievedChunk
from agent.services import Services
from agent.text import content_terms


@dataclass(frozen=True)
class KnowledgeSearch:
    """A finished knowledge search: what was found and the context built from it."""

    question: str
    result: SearchResult
    context: BuiltContext
    missing_subjects: tuple[str, ...] = ()
    """Subjects of a compared question that no passage is on (:mod:`~agent.retrieval.
    subject_search`)."""

    @property
    def conflicts(self) -> list[Conflict]:
        """The detected conflicts whose two sides are both in the context."""
        shown = self.context.chunk_map
        return [c for c in self.result.conflicts if c.first in shown and c.second in shown]


async def compress_paragraphs(
    model: BaseChatModel, question: str, chunks: list[RetrievedChunk]
) -> dict[str, str]:
    """Each chunk's paragraph cut to the sentences the question needs (seed 002), possibly
    prefixed ``[Partial]:`` or ``[Conflicting]:``; empty when nothing is relevant."""

    async def one(chunk: RetrievedChunk) -> str:
        reply = await model.ainvoke(
            [
                SystemMessage(prompts.COMPRESS_SYSTEM),
                HumanMessage(
                    prompts.COMPRESS_USER.format(
                        question=question, source=chunk.source, text=chunk.record.text
                    )
                ),
            ],
            max_tokens=256,
        )
        return str(reply.content).strip()

    texts = await asyncio.gather(*(one(c) for c in chunks))
    return {c.citation_id: t for c, t in zip(chunks, texts, strict=True)}


async def knowledge_search(
    services: Services,
    scope: SearchScope,
    question: str,
    options: SearchOptions,
    *,
    max_chars: int | None = None,
    model: BaseChatModel | None = None,
    compress: bool | None = None,
    query_vector: Sequence[float] | None = None,
    cite_holders: bool = False,
    passage_chars: int | None = None,
    lone_word_first: bool = False,
) -> KnowledgeSearch:
    """Search, then build the cited context (compressing paragraphs if enabled);
    ``query_vector``: the question already embedded (see :func:`search`). A comparison on
    Path C (``options.query_type == "deep"``) searches each of its subjects
    (:mod:`~agent.retrieval.subject_search`); the subjects no passage is on are reported.

    ``cite_holders`` (a model's prompt, not a result list): a focused passage's sentences go
    under the sibling chunks that hold them (:func:`~agent.retrieval.focus.focus_by_holder`),
    so the context may cite more chunks than were found. ``passage_chars``: the most
    characters one focused passage keeps (none: its window's length). ``lone_word_first``
    (with ``cite_holders``): a question of one content word reads its passages up to the
    first holding that word (:func:`~agent.retrieval.focus.lone_word_passages`)."""
    settings = services.settings
    # a comparison on Path C: passages on each of its subjects, not only the nearest side
    comparison = compared_subjects(question) if options.query_type == "deep" else None
    missing: tuple[str, ...] = ()
    if comparison is not None:
        found = await search_subjects(services, scope, comparison, options, model=model)
        result, missing = found.result, found.missing
    else:
        result = await search(
            services, scope, question, options, model=model, query_vector=query_vector
        )
    started = time.perf_counter()
    paragraphs = None
    if (settings.compress_context if compress is None else compress) and result.chunks:
        if model is None:
            from agent.models import achat_model

            model = await achat_model(settings.chat_model, settings, 0.0)
        paragraphs = await compress_paragraphs(model, question, result.chunks)
    keep = {cid for conflict in result.conflicts for cid in conflict.ids}
    focused = paragraphs is None and settings.focus_context
    budget = max_chars or settings.max_context_chars
    chunks = result.chunks
    if focused:  # each passage cut to the sentences the question matches (no model call)
        window = window_size(settings.parent_context_chars, budget, len(chunks))
        windows = {c.citation_id: surroundings(c, window) for c in chunks}
        wholes = {c.citation_id: c.record.parent_text or "" for c in chunks}
        hits, neighbours = settings.focus_sentences, settings.focus_neighbours
        if cite_holders:
            siblings = await _siblings(services, scope, chunks)
            runs = focus_by_holder(
                question,
                windows,
                {
                    c.citation_id: [(x.citation_id, x.record.text) for x in siblings[c.citation_id]]
                    for c in chunks
                    if c.citation_id not in keep  # a side of a conflict stays itself
                },
                hits=hits,
                neighbours=neighbours,
                wholes=wholes,
                most=passage_chars,
            )
            if lone_word_first:
                texts = {cid: " ".join(t for _, t in run) for cid, run in runs.items()}
                needed = set(lone_word_passages(question, texts, keep))
                chunks = [c for c in chunks if c.citation_id in needed]
            chunks, paragraphs = _under_holders(chunks, runs, siblings)
        else:
            paragraphs = focus_passages(
                question,
                windows,
                hits=hits,
                neighbours=neighbours,
                wholes=wholes,
                most=passage_chars,
            )
    if paragraphs:  # both sides of a conflict stay whole: compression may cut the value
        paragraphs = {cid: text for cid, text in paragraphs.items() if cid not in keep}
    context = build_context(
        chunks,
        budget,
        settings.parent_context_chars,
        overlap=settings.sentence_overlap_ratio if settings.dedupe_sentences else 1.0,
        paragraphs=paragraphs,
        keep=keep,
        parents=not focused,
    )
    result.metrics.context_chars = len(context.text)
    result.metrics.stages_ms["context"] = round((time.perf_counter() - started) * 1000, 2)
    return KnowledgeSearch(question, result, context, missing)


async def _siblings(
    services: Services, scope: SearchScope, chunks: list[RetrievedChunk]
) -> dict[str, list[RetrievedChunk]]:
    """Per chunk (by citation id): itself, then the other children of its parent (one read).

    A sibling carries the scores of the chunk it was found beside (its layer, rank score and
    similarity: how it was found, which the turn's confidence reads)."""
    parents = list(dict.fromkeys(c.record.parent_id for c in chunks if c.record.parent_id))
    records: list[ChunkRecord] = []
    if parents:
        async with Reads(services.read_pool) as reads:
            records = await reads.read(lambda conn: child_records(conn, scope, parents))
    by_parent: dict = {}
    for record in records:
        by_parent.setdefault(record.parent_id, []).append(record)
    return {
        c.citation_id: [c]
        + [
            replace(c, record=r, citation_id=citation_id(r.id))
            for r in by_parent.get(c.record.parent_id, [])
            if r.id != c.record.id
        ]
        for c in chunks
    }


def _under_holders(
    chunks: list[RetrievedChunk],
    runs: dict[str, list[tuple[str, str]]],
    siblings: dict[str, list[RetrievedChunk]],
) -> tuple[list[RetrievedChunk], dict[str, str]]:
    """The chunks to cite and their focused paragraphs: each retrieved chunk is replaced by
    the chunks holding its kept sentences, in rank order (a chunk held twice is shown once,
    its sentences joined: the context's sentence check drops repeats)."""
    placed: dict[str, RetrievedChunk] = {}
    paragraphs: dict[str, str] = {}
    for chunk in chunks:
        known = {x.citation_id: x for x in siblings[chunk.citation_id]}
        for cid, text in runs[chunk.citation_id]:
            if cid in placed:
                paragraphs[cid] = f"{paragraphs[cid]} {text}"
                continue
            placed[cid] = known[cid]
            paragraphs[cid] = text
    return list(placed.values()), paragraphs


def snippet(text: str, question: str, limit: int = 400) -> str:
    """The run of consecutive sentences (<= ``limit`` chars) that mentions the most query
    words; the start of the text when none does."""
    sentences = split_sentences(" ".join(text.split())) or [text]
    wanted = content_terms(question)
    best, best_score = "", -1
    for i in range(len(sentences)):
        window = ""
        for sentence in sentences[i:]:
            joined = f"{window} {sentence}".strip()
            if len(joined) > limit:
                break
            window = joined
        if not window:
            window = sentences[i][: limit - 1].rsplit(" ", 1)[0] + "…"
        score = len(wanted & content_terms(window))
        if score > best_score:
            best, best_score = window, score
    return best


def knowledge_response(found: KnowledgeSearch, snippet_chars: int = 400) -> dict:
    """Seed 004's response: ``answerHints``, ``citations`` and ``searchMetadata``."""
    metrics = found.result.metrics
    chunks = found.context.chunks
    citations = [
        {
            "id": c.citation_id,
            "documentId": str(c.record.document_id),
            "title": c.record.document_title,
            "chunkId": str(c.record.id),
            "snippet": snippet(c.record.text, found.question, snippet_chars),
            "similarity": None if c.similarity is None else round(c.similarity, 4),
            "page": c.record.page,
            "chapter": c.record.chapter_title,
            "section": c.record.section_title,
            "source": c.source,
            "layer": c.layer,
        }
        for c in chunks
    ]
    return {
        "answerHints": answer_hints(found),
        "citations": citations,
        "searchMetadata": {
            "queriesUsed": len(metrics.queries),
            "queries": metrics.queries,
            "queryType": metrics.query_type,
            "intent": metrics.intent,
            "resultsFound": len(chunks),
            "averageSimilarity": metrics.average_similarity,
            "reranked": metrics.reranked,
            "similarityThreshold": metrics.threshold,
            "fallbackLayer": metrics.layer,
            "cacheHit": metrics.cache_hit,
            "timedOut": metrics.timed_out,
            "contextChars": metrics.context_chars,
            "stagesMs": metrics.stages_ms,
            "conflicts": [c.as_dict() for c in found.conflicts],
        },
    }


def answer_hints(found: KnowledgeSearch) -> str:
    """Markdown for a model that will answer: query, sources with similarity, context."""
    chunks = found.context.chunks
    if not chunks:
        return (
            f"# Knowledge Base Search Results\n**Query:** {found.question}\n**Found:** 0 "
            "passages\n\nNothing in the user's documents matches. Say so; do not guess."
        )
    lines = [
        "# Knowledge Base Search Results",
        f"**Query:** {found.question}",
        f"**Found:** {len(chunks)} passages (fallback layer: {found.result.layer})",
        "",
        "## Sources",
    ]
    for i, c in enumerate(chunks, start=1):
        sim = "n/a" if c.similarity is None else f"{c.similarity:.2f}"
        lines.append(f"{i}. {c.citation_id} {c.source} (similarity: {sim})")
    if found.conflicts:
        lines += ["", "## Conflicts (the passages disagree: give both, ask which to trust)"]
        lines += [
            f"- {c.first} says {c.first_value}; {c.second} says {c.second_value}"
            for c in found.conflicts
        ]
    lines += [
        "",
        "## Context",
        found.context.text,
        "",
        "## How to use",
        "Answer only from the context above. Cite the #chk_ id of each passage you use, "
        "right after the statement it supports. If the context does not answer the question, "
        "say so.",
    ]
    return "\n".join(lines)
