"""Query vectors: the question and its rewrites embedded in a thread, as unit vectors."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import numpy as np

from agent.services import Services


def unit(vector: Sequence[float]) -> np.ndarray:
    """``vector`` as float32 scaled to length 1 (unchanged if it is all zeros)."""
    v = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(v))
    return v / norm if norm else v


def embed_soon(
    services: Services,
    queries: list[str],
    first: asyncio.Future | None = None,
    given: Sequence[float] | None = None,
) -> asyncio.Future:
    """Unit query vectors of ``queries`` (after those of ``first``), embedded in a thread and
    timed into ``(vectors, ms)``; ``given``: the one query's vector, already embedded."""
    embedder = services.embeddings.embedder
    if given is not None:
        done = asyncio.get_running_loop().create_future()
        done.set_result(([unit(given)], 0.0))
        return done

    def embed() -> tuple[list[np.ndarray], float]:
        started = time.perf_counter()
        vectors = [unit(embedder.embed_query(q)) for q in queries]
        return vectors, (time.perf_counter() - started) * 1000

    async def after_first() -> tuple[list[np.ndarray], float]:
        earlier, ms = await first
        more, more_ms = await asyncio.to_thread(embed)
        return earlier + more, ms + more_ms

    if first is not None:
        return asyncio.ensure_future(after_first())
    return asyncio.ensure_future(asyncio.to_thread(embed))


def discard(task: asyncio.Future) -> None:
    """Retrieve an unneeded task's outcome so a failure is not reported as unhandled."""
    if not task.cancelled():
        task.exception()
