"""``quire users``: create users, issue their API tokens, list them and set their own
monthly limits."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import typer
from rich.table import Column, Table

from api.cli.common import JsonOption, err, fail, out, run_with_services

users_app = typer.Typer(
    help="Manage users, their API tokens and their monthly limits.", no_args_is_help=True
)


def _print_token(issue: Callable[[Any, str], Awaitable[tuple[Any, str]]], name: str, done: str):
    """Run ``issue(services, name)``: who it was for on stderr, the token alone on stdout."""

    async def work(services):
        try:
            user, token = await issue(services, name)
        except ValueError as exc:
            raise fail(exc) from None
        err.print(f"{done} {user.name} ({user.id})")
        print(token)

    run_with_services(work)


@users_app.command("add")
def users_add(name: str) -> None:
    """Create a user and print their API token (shown only once)."""
    from agent.library.accounts import add_user

    _print_token(add_user, name, "created user")


@users_app.command("token")
def users_token(name: str) -> None:
    """Issue a new API token for an existing user (e.g. one the CLI created); shown once."""
    from agent.library.accounts import issue_user_token

    _print_token(issue_user_token, name, "new token for")


def _parse_limit(raw: str) -> int | None:
    """``N`` (turns a month, 0 or more) or ``none`` (the default applies again)."""
    if raw.strip().lower() in ("none", "default"):
        return None
    try:
        limit = int(raw)
    except ValueError:
        raise typer.BadParameter("a whole number of turns a month, or 'none'") from None
    if limit < 0:
        raise typer.BadParameter("a monthly limit cannot be negative")
    return limit


@users_app.command("limit")
def users_limit(
    name: str,
    limit: str = typer.Argument(
        ..., metavar="N|none", help="Chat turns a month, or 'none' for the default."
    ),
) -> None:
    """Set a user's own monthly limit of chat turns (over the default of
    QUIRE_MONTHLY_MESSAGE_LIMIT), or put them back on the default with 'none'."""
    from agent.library.accounts import set_user_limit

    value = _parse_limit(limit)

    async def work(services):
        try:
            user = await set_user_limit(services, name, value)
        except ValueError as exc:
            raise fail(exc) from None
        default = services.settings.monthly_message_limit
        shown = value if value is not None else f"the default ({default or 'unlimited'})"
        err.print(f"monthly limit of {user.name}: {shown}")

    run_with_services(work)


@users_app.command("list")
def users_list(as_json: JsonOption = False) -> None:
    """Every user with their monthly limit (their own, else the default) and this month's
    chat turns."""
    from agent.library.accounts import list_users

    async def work(services):
        default = services.settings.monthly_message_limit
        return [
            {
                "id": str(u.id),
                "name": u.name,
                "monthly_limit": u.monthly_message_limit
                if u.monthly_message_limit is not None
                else default,
                "own_limit": u.monthly_message_limit is not None,
                "turns_this_month": u.turns_this_month,
            }
            for u in await list_users(services)
        ]

    users = run_with_services(work)
    if as_json:
        print(json.dumps(users, indent=2))
        return
    # names and ids are what the other commands take: shown whole, never cut with "…"
    table = Table(
        Column("name", overflow="fold"),
        Column("id", overflow="fold"),
        "monthly limit",
        "turns this month",
    )
    for u in users:
        limit = "unlimited" if u["monthly_limit"] is None else str(u["monthly_limit"])
        table.add_row(
            u["name"],
            u["id"],
            f"{limit} (own)" if u["own_limit"] else limit,
            str(u["turns_this_month"]),
        )
    out.print(table)
