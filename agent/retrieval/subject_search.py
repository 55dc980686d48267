"""A comparison searched one subject at a time, its passages shared between the subjects.

:func:`search_subjects` runs :func:`~agent.retrieval.search.search` once per query of
:func:`~agent.retrieval.compared_subjects.subject_queries` and deals the results out in turn
(the best passage on each subject, then the second best on each, …), one passage per parent,
so each side of "Compare A and B" is read. A subject the documents do not hold (its search
fell to a layer that is no evidence) gives no passages; when no subject is held, the first
subject's search stands as it came.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import replace

from langchain_core.language_models import BaseChatModel

from agent.db.scope import SearchScope
from agent.retrieval.ranking import passage_of
from agent.retrieval.search import SearchOptions, SearchResult, search
from agent.retrieval.types import BELOW_RELEVANCE, RetrievedChunk
from agent.services import Services


def each_subject_k(k: int, subjects: int) -> int:
    """Passages to find for one subject: a fair share of ``k``, at least two."""
    return max(2, math.ceil(k / subjects))


def dealt(results: list[SearchResult], most: int) -> list[RetrievedChunk]:
    """The results' chunks taken in turn, best first, one per passage, at most ``most``."""
    chosen: list[RetrievedChunk] = []
    seen: set = set()
    for rank in range(max((len(r.chunks) for r in results), default=0)):
        for result in results:
            if rank >= len(result.chunks) or len(chosen) >= most:
                continue
            chunk = result.chunks[rank]
            if passage_of(chunk.record) not in seen:
                seen.add(passage_of(chunk.record))
                chosen.append(chunk)
    return chosen


async def search_subjects(
    services: Services,
    scope: SearchScope,
    queries: list[str],
    options: SearchOptions,
    *,
    model: BaseChatModel | None = None,
) -> SearchResult:
    """Search each subject's query (see the module docs) and share ``options.k`` passages
    (at least two a subject) between them; the first held subject's layer and metrics,
    with every query listed."""
    k = each_subject_k(options.k, len(queries))
    fill = k if options.fill_to else None
    each = replace(options, k=k, fill_to=fill)
    results = await asyncio.gather(
        *(search(services, scope, q, each, model=model) for q in queries)
    )
    held = [r for r in results if r.chunks and r.layer not in BELOW_RELEVANCE]
    if not held:
        return results[0]
    chunks = dealt(held, max(options.k, 2 * len(held)))
    shown = {c.citation_id for c in chunks}
    conflicts = [  # within one subject's passages: two subjects differ by design
        c for r in held for c in r.conflicts if c.first in shown and c.second in shown
    ]
    metrics = replace(
        held[0].metrics,
        queries=[q for r in results for q in (r.metrics.queries or [])] or list(queries),
        results=len(chunks),
    )
    return SearchResult(chunks, held[0].layer, metrics, conflicts)
