"""One shared Postgres checkpointer per process (and event loop) for the chat graph.

Our own entry points (the HTTP API, ``quire chat``) keep each chat's LangGraph state in
Postgres, with the chat id as the thread id. Under ``langgraph dev`` the LangGraph server
brings its own checkpointer and none of this is used.

The API's lifespan may call :func:`open_checkpointer` on startup and
:func:`close_checkpointer` on shutdown; until it does, the first request opens it lazily.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from agent.services import Services, get_services


@dataclass
class Checkpointing:
    """The open connection pool, the saver on it and the chat graph compiled with it."""

    pool: AsyncConnectionPool
    saver: AsyncPostgresSaver
    chat_graph: Any


_open: dict[int, Checkpointing] = {}
_locks: dict[int, asyncio.Lock] = {}


async def open_checkpointer(services: Services | None = None) -> Checkpointing:
    """This event loop's checkpointer, opened (pool, ``setup()`` migrations) on first call."""
    loop_id = id(asyncio.get_running_loop())
    if loop_id in _open:
        return _open[loop_id]
    async with _locks.setdefault(loop_id, asyncio.Lock()):
        if loop_id in _open:
            return _open[loop_id]
        services = services or await get_services()
        pool = AsyncConnectionPool(
            services.urls.libpq,
            min_size=1,
            max_size=services.settings.checkpoint_pool_size,
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
            # test each connection as it is handed out: one the server dropped (restart,
            # idle timeout, pg_terminate_backend) is replaced instead of failing the turn
            check=AsyncConnectionPool.check_connection,
            open=False,
        )
        await pool.open(wait=True)
        try:
            saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
            await saver.setup()
            from graphs.chat import build_graph  # the graph imports the agent, not vice versa

            graph = build_graph().compile(checkpointer=saver, name="chat")
        except BaseException:
            await pool.close()
            raise
        _open[loop_id] = Checkpointing(pool=pool, saver=saver, chat_graph=graph)
    return _open[loop_id]


async def checkpointed_chat_graph(services: Services | None = None):
    """The chat graph compiled with the shared Postgres checkpointer (opened lazily)."""
    return (await open_checkpointer(services)).chat_graph


async def close_checkpointer() -> None:
    """Close this event loop's checkpointer pool, if open (API shutdown)."""
    opened = _open.pop(id(asyncio.get_running_loop()), None)
    if opened is not None:
        with contextlib.suppress(Exception):
            await opened.pool.close()
