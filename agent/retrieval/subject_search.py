"""A comparison searched one subject at a time, its passages shared between the subjects.

:func:`search_subjects` runs :func:`~agent.retrieval.search.search` once per subject of a
:class:`~agent.retrieval.compared_subjects.Comparison` (:func:`~agent.retrieval.
compared_subjects.subject_query`: the subject and the topic) and deals the results out in turn
(the best passage on each subject, then the second best on each, …), one passage per parent,
so each side of "Compare A and B" is read.

A subject the documents do not hold gives no passages and is reported missing: its search
fell to a layer that is no evidence, or it names something ("Real Madrid", "Detectron2")
that none of the passages found for it says (the low-similarity layer admits any passage
near enough in meaning: a club's statistics table for "Real Madrid" in an article that never
mentions it). When no subject is held, nothing is found: the documents do not cover it.
"""

from __future__ import annotations

import asyncio
import math
import re
from dataclasses import dataclass, replace

from langchain_core.language_models import BaseChatModel

from agent.db.scope import SearchScope
from agent.retrieval.compared_subjects import Comparison, name_like, subject_query
from agent.retrieval.name_words import TITLES
from agent.retrieval.ranking import passage_of
from agent.retrieval.search import SearchOptions, SearchResult, search
from agent.retrieval.types import BELOW_RELEVANCE, RetrievedChunk
from agent.services import Services
from agent.text import STOPWORDS


@dataclass(frozen=True)
class SubjectsFound:
    """A comparison's search: the passages dealt out, and the subjects none of them is on."""

    result: SearchResult
    missing: tuple[str, ...] = ()


def each_subject_k(k: int, subjects: int) -> int:
    """Passages to find for one subject: a fair share of ``k``, at least two."""
    return max(2, math.ceil(k / subjects))


def name_words(subject: str) -> list[str]:
    """The words naming ``subject`` ("Real Madrid", "Detectron2", "Queen" and "Hearts" of
    "the Queen of Hearts"): capitalised or holding a digit, titles and stop words aside.
    None for a common noun ("dense retrieval")."""
    words = re.findall(r"[\w'’-]+", subject)
    return [
        w
        for w in words
        if name_like(w) and w.lower() not in STOPWORDS and w.lower().rstrip(".") not in TITLES
    ]


def says_subject(chunk: RetrievedChunk, words: list[str]) -> bool:
    """Whether ``chunk`` (or the passage around it) holds one of the subject's ``words`` as
    written ("Bridge" of "the Brooklyn Bridge" is no "harbour bridge"), or every one of them
    in any case (a user's capitals: "Compare Revenue and Profit" over "revenue" and "profit";
    but "Real Madrid" is not held by "a real shock")."""
    text = f"{chunk.record.text} {chunk.record.parent_text or ''}"

    def held(word: str, flags: int = 0) -> bool:
        return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text, flags) is not None

    return any(held(w) for w in words) or all(held(w, re.IGNORECASE) for w in words)


def held_chunks(result: SearchResult, subject: str) -> list[RetrievedChunk]:
    """The chunks of ``subject``'s search that are on it: none from a layer that is no
    evidence, and those saying one of its names when it has any (:func:`name_words`)."""
    if result.layer in BELOW_RELEVANCE:
        return []
    words = name_words(subject)
    return [c for c in result.chunks if not words or says_subject(c, words)]


def dealt(results: list[list[RetrievedChunk]], most: int) -> list[RetrievedChunk]:
    """The lists' chunks taken in turn, best first, one per passage, at most ``most``."""
    chosen: list[RetrievedChunk] = []
    seen: set = set()
    for rank in range(max((len(r) for r in results), default=0)):
        for chunks in results:
            if rank >= len(chunks) or len(chosen) >= most:
                continue
            chunk = chunks[rank]
            if passage_of(chunk.record) not in seen:
                seen.add(passage_of(chunk.record))
                chosen.append(chunk)
    return chosen


async def search_subjects(
    services: Services,
    scope: SearchScope,
    comparison: Comparison,
    options: SearchOptions,
    *,
    model: BaseChatModel | None = None,
) -> SubjectsFound:
    """Search each subject of ``comparison`` (see the module docs) and share ``options.k``
    passages (at least two a subject) between the subjects held; the first held subject's
    layer and metrics, with every query listed, and the subjects missing."""
    subjects = list(comparison.subjects)
    queries = [subject_query(comparison, s) for s in subjects]
    k = each_subject_k(options.k, len(queries))
    each = replace(options, k=k, fill_to=k if options.fill_to else None)
    results = await asyncio.gather(
        *(search(services, scope, q, each, model=model) for q in queries)
    )
    on = [held_chunks(r, s) for r, s in zip(results, subjects, strict=True)]
    held = [(r, chunks) for r, chunks in zip(results, on, strict=True) if chunks]
    missing = tuple(s for s, chunks in zip(subjects, on, strict=True) if not chunks)
    if not held:  # no passage on any of them: the documents do not cover the question
        nothing = replace(results[0].metrics, layer="none", results=0)
        return SubjectsFound(SearchResult([], "none", nothing), missing)
    chunks = dealt([c for _, c in held], max(options.k, 2 * len(held)))
    shown = {c.citation_id for c in chunks}
    conflicts = [  # within one subject's passages: two subjects differ by design
        c for r, _ in held for c in r.conflicts if c.first in shown and c.second in shown
    ]
    first = held[0][0]
    metrics = replace(
        first.metrics,
        queries=[q for r in results for q in (r.metrics.queries or [])] or list(queries),
        results=len(chunks),
    )
    return SubjectsFound(SearchResult(chunks, first.layer, metrics, conflicts), missing)
