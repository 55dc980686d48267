"""User accounts as the entry points need them."""

from __future__ import annotations

from datetime import date

from agent.db import users
from agent.db.users import User
from agent.services import Services


async def resolve_user(services: Services, name: str | None) -> User:
    """The named user (default: the local user), created on first use.

    Used by trusted local entry points (CLI, embedded defaults); the HTTP API resolves users
    from bearer tokens instead.
    """
    async with services.engine.begin() as conn:
        return await users.get_or_create_user(conn, name or services.settings.default_user)


async def add_user(services: Services, name: str) -> tuple[User, str]:
    """Create a user and return it with a fresh API token (shown once)."""
    async with services.engine.begin() as conn:
        user = await users.create_user(conn, name)
        token = await users.issue_token(conn, user.id, label="created with the user")
    return user, token


async def issue_user_token(services: Services, name: str) -> tuple[User, str]:
    """A new API token for an existing user (one created by the CLI, say); ``ValueError``
    if there is no such user."""
    async with services.engine.begin() as conn:
        user = await users.get_user_by_name(conn, name.strip())
        if user is None:
            raise ValueError(f"no user named {name!r}: create one with 'quire users add {name}'")
        token = await users.issue_token(conn, user.id, label="issued with quire users token")
    return user, token


async def set_user_limit(services: Services, name: str, limit: int | None) -> User:
    """Give a user their own monthly turn limit, or (``None``) put them back on the default
    (``settings.monthly_message_limit``); ``ValueError`` for an unknown user or a negative
    limit."""
    async with services.engine.begin() as conn:
        user = await users.set_monthly_limit(conn, name.strip(), limit)
    if user is None:
        raise ValueError(f"no user named {name!r}: create one with 'quire users add {name}'")
    return user


async def list_users(services: Services) -> list[users.UserListing]:
    """Every user, with their own monthly limit and this month's counted turns."""
    async with services.engine.connect() as conn:
        return await users.list_users(conn, date.today())
