"""Hot reads straight on psycopg, past SQLAlchemy's execution machinery.

A search makes a few small reads per question; on 2 cores SQLAlchemy's statement and row
handling (~0.3-0.5 ms of CPU a read) and the text form of binary values (vectors, uuids)
cost as much as the queries themselves. These helpers take the same SQL with
SQLAlchemy-style ``:name`` parameters and run it on the connection's psycopg connection
(same transaction), returning plain tuples, in binary.
"""

from __future__ import annotations

import re

from sqlalchemy.ext.asyncio import AsyncConnection

_PARAMETER = re.compile(r"(?<![:\w]):(\w+)")


def pyformat(sql: str) -> str:
    """SQLAlchemy-style ``:name`` parameters as psycopg's ``%(name)s`` (casts kept)."""
    return _PARAMETER.sub(r"%(\1)s", sql.replace("%", "%%"))


async def fetch_rows(conn: AsyncConnection, sql: str, params: dict) -> list[tuple]:
    """Every row of ``sql`` as tuples, read in binary on ``conn``'s psycopg connection."""
    raw = (await conn.get_raw_connection()).driver_connection
    async with raw.cursor(binary=True) as cur:
        await cur.execute(pyformat(sql), params)
        return await cur.fetchall()
