"""Hot reads straight on psycopg, past SQLAlchemy's execution machinery.

A search makes a few small reads per question; on 2 cores SQLAlchemy's statement and row
handling (~0.3-0.5 ms of CPU a read) and the text form of binary values (vectors, uuids)
cost as much as the queries themselves. These helpers take the same SQL with
SQLAlchemy-style ``:name`` parameters and run it on the connection's psycopg connection
(same transaction), with parameters sent and rows returned in binary (a 384-float vector
or a list of ids dumps ~5x faster in binary than in text).
"""

from __future__ import annotations

import re
from collections.abc import Collection

import psycopg
from sqlalchemy.ext.asyncio import AsyncConnection

Connection = AsyncConnection | psycopg.AsyncConnection
"""Where the hot reads run: a SQLAlchemy connection (inside its transaction) or a psycopg
one (the search read pool's, in autocommit)."""

_PARAMETER = re.compile(r"(?<![:\w]):(\w+)")


def pyformat(sql: str, binary: Collection[str] = ()) -> str:
    """SQLAlchemy-style ``:name`` parameters as psycopg's ``%(name)s``, or ``%(name)b`` (sent
    in binary) for those named in ``binary``; casts kept."""

    def placeholder(match: re.Match) -> str:
        name = match.group(1)
        return f"%({name})b" if name in binary else f"%({name})s"

    return _PARAMETER.sub(placeholder, sql.replace("%", "%%"))


async def fetch_rows(conn: Connection, sql: str, params: dict) -> list[tuple]:
    """Every row of ``sql`` as tuples, read in binary on ``conn``'s psycopg connection."""
    if isinstance(conn, psycopg.AsyncConnection):
        raw = conn
    else:
        raw = (await conn.get_raw_connection()).driver_connection
    # arrays (vectors, id lists) go in binary; scalars as text, so that Postgres infers
    # their type from the column (a uuid given as a string, say)
    arrays = [name for name, value in params.items() if isinstance(value, list | tuple)]
    async with raw.cursor(binary=True) as cur:
        await cur.execute(pyformat(sql, arrays), params)
        return await cur.fetchall()
