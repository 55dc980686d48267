"""``quire ask`` (one streamed question) and ``quire chat`` (an interactive, checkpointed
conversation): both stream the chat graph's turns through ``graphs.streaming``."""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import replace
from typing import Annotated, Any

import typer

from api.cli.common import (
    BookOption,
    JsonOption,
    PersonaOption,
    UserOption,
    err,
    fail,
    out,
    run_with_services,
    start_local_model_early,
    user_name,
)

SinceOption = Annotated[
    str | None,
    typer.Option(
        "--since",
        help="Only documents created since: an ISO date or date-time, or 24h, 48h, 7d, 1w, all.",
    ),
]
UntilOption = Annotated[
    str | None,
    typer.Option(
        "--until",
        help="Only documents created before: an ISO date (that day included), date-time or age.",
    ),
]


def _check_window(since: str | None, until: str | None) -> None:
    """Refuse an unreadable ``--since``/``--until`` with one error line (exit code 2)."""
    from agent.retrieval.time_window import InvalidTimeWindow, parse_time_window

    try:
        parse_time_window(since, until)
    except InvalidTimeWindow as exc:
        raise fail(f"invalid_time_window: {exc}", 2, highlight=False, soft_wrap=True) from None


def _answer_json(state: dict) -> dict:
    return {
        "answer": state.get("answer", ""),
        "route": state.get("route"),
        "route_reason": state.get("route_reason"),
        "routing": state.get("routing") or None,
        "citations": [
            {
                k: c.get(k)
                for k in ("id", "chunk_id", "document", "chapter", "section", "page", "text")
            }
            for c in state.get("citations", [])
        ],
        "sources": state.get("sources", []),
        "model_used": state.get("model_used"),
        "tokens_used": state.get("tokens_used", 0),
        "chat_id": state.get("chat_id"),
        "conflicts": state.get("conflicts") or [],
        "time_window": state.get("time_window") or None,
    }


async def _stream_turn(graph, question: str, context, config: dict, echo: bool) -> tuple[dict, str]:
    """Run one turn, printing answer tokens as they arrive; return final state and streamed text."""
    from graphs.streaming import stream_turn

    final: dict = {}
    streamed = ""
    async for event in stream_turn(graph, question, context=context, config=config):
        if event.kind == "token" and echo:
            streamed += event.text
            out.print(event.text, end="", soft_wrap=True, highlight=False, markup=False)
        elif event.kind == "final":
            final = event.state
    return final, streamed


def _print_footer(state: dict, streamed: str) -> None:
    answer = state.get("answer", "")
    if not streamed.strip():
        out.print(answer, highlight=False, markup=False)
    elif streamed.strip() != answer:
        # the citation guard repaired the streamed text: show the final version
        out.print(f"\n[dim]with citations:[/dim] {answer}", highlight=False)
    else:
        out.print()
    for c in state.get("citations", []):
        out.print(f"  [cyan]{c['id']}[/cyan] {c.get('source', '')}", highlight=False)
    out.print(
        f"[dim]route: {state.get('route')} · model: {state.get('model_used')} · tokens: {state.get('tokens_used', 0)}[/dim]"
    )
    routing = state.get("routing") or {}
    if routing:
        out.print(
            f"why: {routing.get('reason')} · confidence: {routing.get('confidence')}",
            style="dim",
            highlight=False,
            markup=False,
        )


def ask(
    question: str,
    user: UserOption = None,
    chat: Annotated[str | None, typer.Option(help="Chat id to add this turn to.")] = None,
    book: BookOption = None,
    persona: PersonaOption = None,
    as_json: JsonOption = False,
    since: SinceOption = None,
    until: UntilOption = None,
) -> None:
    """Ask one question about your documents; the answer streams, with citations."""
    _check_window(since, until)
    start_local_model_early()  # before the graph's imports: they take ~2 s
    from graphs.chat import graph, wait_for_background
    from graphs.context import Context

    async def work(services):
        context = Context(
            user=user_name(services, user),
            chat_id=chat,
            book=book,
            persona=persona,
            since=since,
            until=until,
        )
        state, streamed = await _stream_turn(graph, question, context, {}, echo=not as_json)
        if as_json:
            print(json.dumps(_answer_json(state), indent=2, ensure_ascii=False))
        else:
            _print_footer(state, streamed)
        # the turn's memory; the summary's rewrite is left to the chat's next turn
        await wait_for_background(timeout=300, summaries=False)

    run_with_services(work)


async def _next_question() -> str | None:
    """The next line typed at ``you>``; ``None`` when the user leaves (/quit, EOF, Ctrl-C)."""
    try:
        question = await asyncio.to_thread(input, "you> ")
    except (EOFError, KeyboardInterrupt):
        return None
    return None if question.strip() in {"/quit", "/exit"} else question


async def _chat_turn(graph: Any, question: str, context: Any, thread: str) -> bool:
    """Answer one typed question in the chat's thread; ``False`` when the model was lost
    (an error line: the chat goes on once the model is back)."""
    from agent.model_server.endpoint import ModelUnavailable

    out.print("[bold]quire>[/bold] ", end="")
    config = {"configurable": {"thread_id": thread}}
    try:
        state, streamed = await _stream_turn(graph, question, context, config, echo=True)
    except ModelUnavailable as exc:
        err.print(f"\n[red]error:[/red] model_unavailable: {exc}", highlight=False)
        return False
    _print_footer(state, streamed)
    return True


async def _converse(graph: Any, context: Any, thread: str) -> None:
    """Read questions and stream their answers until the user leaves."""
    err.print(f"[dim]chat {thread} · type /quit to leave[/dim]")
    while (question := await _next_question()) is not None:
        if not question.strip():
            continue
        if await _chat_turn(graph, question, context, thread):
            context = replace(context, persona=None)  # kept with the chat from now on


def chat(
    user: UserOption = None,
    chat_id: Annotated[str | None, typer.Option("--chat", help="Resume this chat.")] = None,
    book: BookOption = None,
    persona: PersonaOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
) -> None:
    """Interactive chat with streaming answers; conversation state is checkpointed in Postgres."""
    _check_window(since, until)
    start_local_model_early()
    from graphs.chat import wait_for_background
    from graphs.checkpoint import close_checkpointer, open_checkpointer
    from graphs.context import Context

    async def work(services):
        thread = chat_id or str(uuid.uuid4())
        try:
            graph = (await open_checkpointer(services)).chat_graph
            context = Context(
                user=user_name(services, user),
                chat_id=thread,
                book=book,
                persona=persona,
                since=since,
                until=until,
            )
            await _converse(graph, context, thread)
            await wait_for_background(timeout=300, summaries=False)
        finally:
            await close_checkpointer()

    run_with_services(work)
