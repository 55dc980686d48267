"""``quire users``: create users and issue their API tokens."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import typer

from api.cli.common import err, fail, run_with_services

users_app = typer.Typer(help="Manage users and their API tokens.", no_args_is_help=True)


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
