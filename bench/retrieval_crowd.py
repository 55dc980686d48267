"""The retrieval benchmark's crowded reads: what one user's search reads cost before and
after many more documents of other users are added (in a transaction rolled back), since
that cost must not grow with everyone else's library."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence

import numpy as np
from sqlalchemy import text

from agent.db.chunks import dense_candidates
from agent.db.keyword_sql import BM25Params, keyword_search
from agent.db.postings import library_state
from agent.db.scope import SearchScope
from agent.services import Services

CROWD = 100_000
"""Documents of other users added (in a transaction rolled back) for the crowded reads."""


def crowded_summary(reads: dict[str, dict[str, float]], crowd: int) -> str:
    """:attr:`RetrievalFigures.crowded_reads_p50_ms` in one line ('' when not measured);
    also for the stored JSON (the bench report)."""
    if not reads:
        return ""
    each = ", ".join(f"{name} {t['as is']} -> {t['crowded']}" for name, t in reads.items())
    return f"search reads p50 ms, with {crowd} more documents of other users: {each}"


async def crowded_reads(
    services: Services,
    scope: SearchScope,
    others: Sequence[uuid.UUID],
    question: str,
    vector: Sequence[float],
    crowd: int = CROWD,
    repeats: int = 30,
) -> dict[str, dict[str, float]]:
    """p50 ms of the search's reads before and after ``crowd`` empty documents are added
    for ``others`` (one transaction, planner statistics refreshed, then rolled back and the
    table vacuumed and analyzed again)."""
    n = services.settings.candidates_per_retriever
    bm25 = BM25Params.from_settings(services.settings)
    out: dict[str, dict[str, float]] = {}
    async with services.engine.connect() as conn:
        reads = {
            "state": lambda: library_state(conn, scope, [question]),
            "dense": lambda: dense_candidates(conn, scope, vector, n),
            "keyword_sql": lambda: keyword_search(conn, scope, question, n, bm25),
        }

        async def timed(label: str) -> None:
            for name, read in reads.items():
                await read()  # warm
                took = []
                for _ in range(repeats):
                    t = time.perf_counter()
                    await read()
                    took.append(time.perf_counter() - t)
                out.setdefault(name, {})[label] = round(float(np.median(took)) * 1000, 2)

        await timed("as is")
        await conn.execute(
            text(
                "INSERT INTO documents (id, user_id, title, file_type, doc_type, content_hash, "
                "embedding_model) SELECT gen_random_uuid(), (CAST(:o AS uuid[]))[1 + g % :n], "
                "'crowd', 'txt', 'document', md5('crowd' || g), 'none' "
                "FROM generate_series(1, :crowd) g"
            ),
            {"o": list(others), "n": len(others), "crowd": crowd},
        )
        await conn.execute(text("ANALYZE documents"))
        await timed("crowded")
        await conn.rollback()
    # the rolled-back rows stay in the table and its indexes until vacuumed, and ANALYZE
    # wrote the row count in place, outside the transaction: clean both up
    async with services.engine.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.execute(text("VACUUM ANALYZE documents"))
    return out
