"""What every ``quire`` command shares: the consoles, the common options, error lines, the
progress display, the user a command acts for, and running async work with known errors
turned into one line and an exit code."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Coroutine
from typing import Annotated, Any

import click
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

out = Console()
err = Console(stderr=True)

UserOption = Annotated[
    str | None, typer.Option("--user", "-u", help="User name (default: the local user).")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
BookOption = Annotated[
    str | None,
    typer.Option("--book", help="Put one book in scope: its document id or title."),
]
PersonaOption = Annotated[
    str | None,
    typer.Option("--persona", help="A persona for this chat (tone and role); the chat keeps it."),
]


def print_error(message: object, **print_options: Any) -> None:
    """Print ``error: <message>`` on stderr (``print_options`` go to ``Console.print``)."""
    err.print(f"[red]error:[/red] {message}", **print_options)


def fail(message: object, code: int = 1, **print_options: Any) -> typer.Exit:
    """Print the error line and return the exit to raise: ``raise fail("...", 2)``."""
    print_error(message, **print_options)
    return typer.Exit(code)


def log_dim(line: str) -> None:
    """A progress line of a long run, dimmed, on stderr."""
    err.print(f"[dim]{line}[/dim]")


def progress_log(as_json: bool) -> Callable[[str], None]:
    """The progress logger of a long run: :func:`log_dim`, or nothing under ``--json``."""
    return (lambda _line: None) if as_json else log_dim


def progress_bar(disable: bool = False) -> Progress:
    """The CLI's progress display (on stderr): label, bar, done/total, elapsed time."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=disable,
    )


def user_name(services: Any, user: str | None) -> str:
    """The user a command acts for: ``--user``, else the configured default user."""
    return user or services.settings.default_user


def start_local_model_early() -> None:
    """Find or start the local model in a thread while the command opens its database and
    embedder, so the first answer does not wait for the model to load (~2 s); its fixed
    prompt openings are warmed (or loaded, when an earlier process saved them) meanwhile."""
    from agent.config import get_settings
    from agent.model_server.endpoint import start_in_background

    start_in_background(get_settings())


def run_with_services(work: Callable[[Any], Awaitable[Any]]) -> Any:
    """Open the services, run ``work(services)``, close them; turn known errors into lines."""
    from agent.db.engine import EmbeddingMismatchError
    from agent.model_server.endpoint import ModelUnavailable
    from agent.services import close_services, get_services

    async def main():
        try:
            return await work(await get_services())
        finally:
            await close_services()

    try:
        return asyncio.run(main())
    except EmbeddingMismatchError as exc:
        raise fail(exc, 2) from None
    except ModelUnavailable as exc:
        raise fail(f"model_unavailable: {exc}", 1, highlight=False) from None
    except (typer.Exit, typer.Abort, click.exceptions.Exit, click.ClickException):
        raise
    except Exception as exc:  # a model or database failure: one line, the trace on request
        if os.environ.get("QUIRE_DEBUG"):
            raise
        raise fail(
            f"{type(exc).__name__}: {exc or 'no message'} (QUIRE_DEBUG=1 shows the trace)",
            1,
            highlight=False,
        ) from None


def run_or_exit(work: Coroutine[Any, Any, Any], *errors: type[BaseException], code: int = 2) -> Any:
    """``asyncio.run(work)``; an embedding mismatch (or one of ``errors``) is an error line
    and exit ``code``."""
    from agent.db.engine import EmbeddingMismatchError

    try:
        return asyncio.run(work)
    except (EmbeddingMismatchError, *errors) as exc:
        raise fail(exc, code) from None
