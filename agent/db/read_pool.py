"""The connections searches read on: a psycopg pool of autocommit connections.

A search makes a handful of small reads. Through SQLAlchemy's pool each checkout cost a
pre-ping round trip and two isolation-level switches (~0.35 ms of CPU, measured), as much
as a read itself; this pool hands out a connection already in autocommit in ~0.01 ms.
Connections are not pinged on checkout: a search read that finds its connection dead
(``Reads.read`` in :mod:`agent.retrieval.reads`) has the pool drop its dead connections
(:meth:`ReadPool.drop_dead`) and runs once more.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

import psycopg
from psycopg import pq
from psycopg_pool import AsyncConnectionPool

T = TypeVar("T")
APPLICATION_NAME = "quire search"
"""How the pool's connections show in ``pg_stat_activity``."""
Read = Callable[[psycopg.AsyncConnection], Awaitable[T]]


class ReadPool:
    """A lazily opened pool of autocommit connections for read-only queries."""

    def __init__(self, conninfo: str, options: str, max_size: int) -> None:
        self._conninfo = conninfo
        self._options = options
        self._max_size = max(max_size, 2)
        self._pool: AsyncConnectionPool | None = None
        self._lock = asyncio.Lock()

    async def _opened(self) -> AsyncConnectionPool:
        if self._pool is None:
            async with self._lock:
                if self._pool is None:
                    pool = AsyncConnectionPool(
                        self._conninfo,
                        min_size=1,
                        max_size=self._max_size,
                        kwargs={
                            "autocommit": True,
                            "options": self._options,
                            "application_name": APPLICATION_NAME,
                        },
                        open=False,
                    )
                    await pool.open(wait=True)
                    self._pool = pool
        return self._pool

    async def checkout(self) -> psycopg.AsyncConnection:
        """A connection of the pool; give it back with :meth:`give_back`."""
        return await (await self._opened()).getconn()

    async def give_back(self, conn: psycopg.AsyncConnection) -> None:
        """Return ``conn``; one left mid-query (its read was cancelled) has its query
        cancelled and is closed first, so the pool replaces it instead of warning."""
        if not conn.closed and conn.pgconn.transaction_status != pq.TransactionStatus.IDLE:
            with contextlib.suppress(Exception):
                await conn.cancel_safe(timeout=1.0)  # stop the query on the server too
            with contextlib.suppress(Exception):
                await conn.close()
        if self._pool is not None:
            await self._pool.putconn(conn)

    async def drop_dead(self) -> None:
        """Test the idle connections and replace those the server closed (a restart,
        ``pg_terminate_backend``)."""
        if self._pool is not None:
            await self._pool.check()

    def stats(self) -> dict[str, int]:
        """psycopg_pool's counters (``pool_size``, ``pool_available``...), empty if unopened."""
        return self._pool.get_stats() if self._pool is not None else {}

    async def close(self) -> None:
        """Close every connection (the pool opens again on next use)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()


def is_dead_connection(exc: BaseException, conn: psycopg.AsyncConnection) -> bool:
    """Whether ``exc`` came from ``conn`` having been closed under the read."""
    return isinstance(exc, psycopg.OperationalError) and (conn.broken or conn.closed)
