"""Users, their API tokens (only a sha256 of each token is stored) and their own monthly
limits."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import dataclass
from datetime import date

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

TOKEN_PREFIX = "qk_"


@dataclass(frozen=True)
class User:
    """A Quire user."""

    id: uuid.UUID
    name: str


def hash_token(token: str) -> str:
    """The stored form of an API token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


async def get_user_by_name(conn: AsyncConnection, name: str) -> User | None:
    """The user called ``name``, if any."""
    if "\x00" in name:  # no name holds one (Postgres text cannot), and the query would fail
        return None
    row = (
        await conn.execute(text("SELECT id, name FROM users WHERE name = :n"), {"n": name})
    ).first()
    return User(row.id, row.name) if row else None


async def create_user(conn: AsyncConnection, name: str) -> User:
    """Create a user; raises ``ValueError`` if the name is taken or empty."""
    name = name.strip()
    if not name:
        raise ValueError("user name must not be empty")
    if await get_user_by_name(conn, name):
        raise ValueError(f"user {name!r} already exists")
    user = User(uuid.uuid4(), name)
    await conn.execute(
        text("INSERT INTO users (id, name) VALUES (:id, :n)"), {"id": user.id, "n": user.name}
    )
    return user


async def get_or_create_user(conn: AsyncConnection, name: str) -> User:
    """The user called ``name``, created on first use (local CLI and embedded defaults)."""
    await conn.execute(
        text("INSERT INTO users (id, name) VALUES (:id, :n) ON CONFLICT (name) DO NOTHING"),
        {"id": uuid.uuid4(), "n": name.strip()},
    )
    user = await get_user_by_name(conn, name.strip())
    assert user is not None
    return user


async def issue_token(conn: AsyncConnection, user_id: uuid.UUID, label: str | None = None) -> str:
    """Create a new API token for a user and return it; it cannot be shown again."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    await conn.execute(
        text("INSERT INTO api_tokens (id, user_id, token_hash, label) VALUES (:id, :u, :h, :l)"),
        {"id": uuid.uuid4(), "u": user_id, "h": hash_token(token), "l": label},
    )
    return token


async def user_for_token(conn: AsyncConnection, token: str) -> User | None:
    """The owner of a valid (unrevoked) token, or ``None``."""
    row = (
        await conn.execute(
            text(
                "UPDATE api_tokens t SET last_used_at = now() FROM users u "
                "WHERE t.token_hash = :h AND t.revoked_at IS NULL AND u.id = t.user_id "
                "RETURNING u.id, u.name"
            ),
            {"h": hash_token(token)},
        )
    ).first()
    return User(row.id, row.name) if row else None


@dataclass(frozen=True)
class UserListing:
    """A user as ``quire users list`` shows them: their own monthly limit (``None``: the
    default applies) and this month's counted turns."""

    id: uuid.UUID
    name: str
    monthly_message_limit: int | None
    turns_this_month: int


async def set_monthly_limit(conn: AsyncConnection, name: str, limit: int | None) -> User | None:
    """Give the user called ``name`` their own monthly turn limit (``None``: back to the
    default); ``None`` when there is no such user."""
    if limit is not None and limit < 0:
        raise ValueError("a monthly limit cannot be negative")
    row = (
        await conn.execute(
            text(
                "UPDATE users SET monthly_message_limit = :n WHERE name = :name RETURNING id, name"
            ),
            {"n": limit, "name": name},
        )
    ).first()
    return User(row.id, row.name) if row else None


async def list_users(conn: AsyncConnection, month: date) -> list[UserListing]:
    """Every user by name, with their own limit and the turns counted for ``month``."""
    rows = await conn.execute(
        text(
            "SELECT u.id, u.name, u.monthly_message_limit, "
            "coalesce(m.chat_messages, 0) AS turns_this_month FROM users u "
            "LEFT JOIN usage_monthly m ON m.user_id = u.id AND m.month = :m ORDER BY u.name"
        ),
        {"m": month.replace(day=1)},
    )
    return [UserListing(**r._mapping) for r in rows]
