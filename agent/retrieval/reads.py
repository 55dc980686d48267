"""The database reads of one search, over the search read pool (:mod:`agent.db.read_pool`)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TypeVar

import psycopg

from agent.db.read_pool import Read, ReadPool, is_dead_connection

T = TypeVar("T")


class Reads:
    """The connections of one search's reads, held until it ends (:mod:`agent.db.read_pool`).

    A read takes a held connection no other read is using, else checks out one more: the
    keyword side (library state, then its hits' records) and the dense side read at once
    when the question's vector is known from the start, and one after the other on a
    single connection while the question is embedded. Autocommit: a search only reads and
    each read is confined to the scope on its own. A connection whose read failed or was
    cut short is given back at once; a read that found its connection dead runs once more
    on a live one (reads are plain SELECTs).
    """

    def __init__(self, pool: ReadPool) -> None:
        self._pool = pool
        self._free: list[psycopg.AsyncConnection] = []
        self._held: list[psycopg.AsyncConnection] = []
        self._started: list[asyncio.Future] = []

    async def read(self, fn: Read[T]) -> T:
        """``fn(connection)`` on a connection of this search (once more on a fresh one if
        the server had closed it)."""
        for attempt in (1, 2):
            conn = await self._take()
            try:
                result = await fn(conn)
            except BaseException as exc:
                await self._drop(conn)
                if attempt == 2 or not is_dead_connection(exc, conn):
                    raise
                await self._pool.drop_dead()
                continue
            self._free.append(conn)
            return result
        raise AssertionError("unreachable")

    async def _take(self) -> psycopg.AsyncConnection:
        if self._free:
            return self._free.pop()
        conn = await self._pool.checkout()
        self._held.append(conn)
        return conn

    async def _drop(self, conn: psycopg.AsyncConnection) -> None:
        self._held.remove(conn)
        with contextlib.suppress(Exception):
            await self._pool.give_back(conn)

    def start(self, read) -> asyncio.Future:
        """Run the coroutine ``read`` now, beside the caller; cancelled when the search ends
        without having used it (a cache hit, a failure)."""
        task = asyncio.ensure_future(read)
        self._started.append(task)
        return task

    async def __aenter__(self) -> Reads:
        return self

    async def __aexit__(self, *exc) -> None:
        for task in self._started:  # before their connections are given back
            task.cancel()
        await asyncio.gather(*self._started, return_exceptions=True)
        held, self._held, self._free = self._held, [], []
        for conn in held:
            with contextlib.suppress(Exception):
                await self._pool.give_back(conn)
