"""Answer latency benchmark (``quire bench answers``): time to first token, total time and
tokens in/out of each chat path, through the real ``chat`` graph.

Setup, in its own database (``quire_bench_answers``, never the user's data): a bench user
owns *Alice's Adventures in Wonderland* (ingested once, reused by later runs) with a
stored global summary, so Path B answers from it. The summary is written by the
``extractive`` summary writer (lead sentences, no model: seconds) unless
``llm_summaries`` asks for the chat model (a whole book on the local CPU model: an hour).

Each question of :data:`QUESTIONS` is asked ``repeat`` times, one after another, each in a
fresh chat with no remembered turn of earlier questions or runs (no "previous discussion"),
with the book in scope (``Context.book``). Per question:

* **TTFT**: from the start of the turn to its first answer token
  (:func:`graphs.streaming.stream_turn`, the same tokens the API and the CLI show). A path
  that streams nothing (``direct``'s fixed reply, a refusal): its TTFT is when the answering
  node is done (``streamed`` false).
* **total**: until the graph's stream ends (``save`` included).
* **tokens in/out**: ``usage_metadata`` of every chat-model call of the turn, collected by
  a callback handler. ``langchain_core``'s ``get_usage_metadata_callback`` records a call
  only when its message names ``response_metadata["model_name"]``, which neither the local
  llama.cpp model nor the extractive one sets: it stays empty, so :class:`UsageCollector`
  (the same mechanism, without that condition) is used. When no call reports usage, the
  graph state's ``tokens_used`` (total only) is the fallback.
* With a real model, ``save`` updates the chat's summary in a background model call after
  the answer; it is waited for before the next question (so it does not hold llama.cpp's
  generation lock during the next turn) and reported apart (``background_s``/tokens).

Here: the questions, the run and its figures' JSON. Token usage is collected by
:mod:`bench.answers_usage`, one question asked and timed by :mod:`bench.answers_turn`, the
book prepared by :mod:`bench.answers_book`, the figures made by :mod:`bench.answers_figures`.
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, replace
from pathlib import Path

from langchain_core.messages import HumanMessage
from sqlalchemy import text

from agent.config import Settings
from agent.services import Services, serving
from bench.answers_book import BOOK, ensure_global_summary, prepare_book
from bench.answers_figures import (
    AnswersFigures,
    PathFigures,
    QuestionFigures,
    describe,
    mismatches,
    path_figures,
    question_figures,
    usage_source,
)
from bench.answers_turn import ask_once
from bench.answers_usage import UsageCollector, collect_usage
from bench.common import database_settings, forget_earlier_turns, opened_services
from bench.progress import Log, quiet
from bench.prompt_speed import raw_prompt_speed, raw_read_seconds

__all__ = [
    "BENCH_DATABASE",
    "BENCH_USER",
    "BOOK",
    "EXPECTED",
    "QUESTIONS",
    "AnswersFigures",
    "PathFigures",
    "QuestionFigures",
    "UsageCollector",
    "ask_once",
    "bench_answers",
    "bench_settings",
    "collect_usage",
    "ensure_global_summary",
    "figures_json",
    "prepare_book",
    "run_answers_bench",
]

BENCH_DATABASE = "quire_bench_answers"
BENCH_USER = "bench-answers"

QUESTIONS: dict[str, list[str]] = {
    "direct": ["What is your name?"],
    "general": ["hello!", "hello, how are you?"],
    "global_summary": ["Summarize the book"],
    "chapter_summary": ["Summarize chapter 7"],
    "hybrid": ["Who is Dinah?", "What does the Caterpillar ask Alice?"],
    "follow_up": ["What does Alice say about her?"],
    "deep_reasoning": ["Why does Alice keep changing size, and how does it affect her?"],
    "not_covered": ["What is the capital of Peru?"],
    "unanswered": ["What did the Queen of Hearts decree in 1871?"],
    "web_search": ["What is the latest news about Alice in Wonderland adaptations?"],
}
"""Questions per path, in the order they are asked (``web_search`` only when configured)."""

OPENERS: dict[str, str] = {"What does Alice say about her?": "Who is Dinah?"}
"""A ``follow_up`` question is asked in the chat this question opened (not timed), on the
same passages: the prefix cache should spare most of its prompt. It is asked as soon as the
opener's answer ends, as a reader who goes on at once would: the opener's chat summary is
still being written then, and must yield the model to it."""

EXPECTED: dict[str, tuple[str, str]] = {
    "direct": ("direct", "direct"),
    "general": ("general", "general"),
    "global_summary": ("global_summary", "overview"),
    "chapter_summary": ("chapter_summary", "chapter"),
    "hybrid": ("hybrid", "generate"),
    "follow_up": ("hybrid", "generate"),
    "deep_reasoning": ("deep_reasoning", "generate"),
    "not_covered": ("hybrid", "not_covered"),
    "unanswered": ("hybrid", "unanswered"),
    "web_search": ("web_search", "web_search"),
}
"""Per path: the route the router should pick (``state["route"]``) and the node that answers."""


def bench_settings(base: Settings | None = None, database: str = BENCH_DATABASE) -> Settings:
    """The settings with the benchmark's own database (same server) instead of Quire's."""
    return database_settings(database, base)


async def _warm_up(services: Services, model: str) -> None:
    """Load the chat model and the embedder before timing (the first local load reads 1 GB),
    and warm the local model's prompt cache as a server does: the system prompts, and the
    overview openings of the books summarized last (the benchmark's book: its summary
    request then reads only the question; without, 517 tokens, TTFT 4.8 s on 2 cores)."""
    from agent.chat.overview import openings_to_warm
    from agent.models import achat_model

    settings = services.settings
    chat = await achat_model(model, settings, 0.0)
    embedder = services.embeddings.embedder  # the local one warms its bulk sessions too
    warm = getattr(embedder, "warm", None) or (lambda: embedder.embed_query("warm up"))
    await asyncio.to_thread(warm)
    await chat.ainvoke([HumanMessage("Say OK.")], max_tokens=2)
    server = getattr(chat, "server_url", None)
    if server and settings.local_chat_warm_prompts:  # as a server does when it starts
        from agent.model_server.warm import warm_openings, warm_prompt_cache

        await asyncio.to_thread(warm_prompt_cache, server, settings)
        await asyncio.to_thread(warm_openings, server, await openings_to_warm(services))


async def _in_chat_of(graph, context, question: str):
    """``context`` in the chat that ``question``'s opener starts (when it has one)."""
    opener = OPENERS.get(question)
    if opener is None:
        return context
    opened = await ask_once(graph, opener, context, drain=False)
    return replace(context, chat_id=opened["state"]["chat_id"])


async def _ask_all(
    graph,
    context,
    questions: dict[str, list[str]],
    repeat: int,
    web: bool,
    log: Log,
    prompt_speed: float | None = None,
    raw_read: Callable[[int, int], Awaitable[float | None]] | None = None,
    forget: Callable[[], Awaitable[int]] | None = None,
) -> tuple[list[QuestionFigures], dict[str, str]]:
    """Ask every path's questions ``repeat`` times; the rows, and the paths skipped (why).
    ``prompt_speed``: the model's raw prompt tokens/s, for each TTFT's floor; ``raw_read``:
    ``(cached, read) ->`` seconds the same read takes done bare; ``forget``: drops the
    user's remembered turns before each question (and a follow-up's opener), so each is
    asked as a first one, whatever earlier runs asked."""
    rows: list[QuestionFigures] = []
    skipped: dict[str, str] = {}
    for path, asked in questions.items():
        if path == "web_search" and not web:
            skipped[path] = "not configured"
            continue
        expected = EXPECTED[path]
        for question in asked:
            for run in range(repeat):
                if forget:
                    await forget()
                turn_context = await _in_chat_of(graph, context, question)
                got = await ask_once(graph, question, turn_context)
                read = int(got.get("tokens_read") or 0)
                bare = None
                if raw_read and read and got["streamed"]:
                    bare = await raw_read(max(got["tokens_in"] - read, 0), read)
                row = question_figures(path, question, run, expected, got, prompt_speed, bare)
                rows.append(row)
                log(describe(row))
    return rows, skipped


def _notes(rows: list[QuestionFigures], summary: dict, llm_summaries: bool) -> list[str]:
    notes: list[str] = []
    if any(r.model_calls for r in rows) and not any(r.stock_callback_models for r in rows):
        notes.append(
            "get_usage_metadata_callback recorded no call: the models set no "
            "response_metadata['model_name']; usage_metadata was collected by UsageCollector"
        )
    notes += [
        f"summaries for Path B: {summary['writer']} writer"
        + ("" if llm_summaries else " (fast setup; --llm-summaries for the chat model)"),
        "questions asked one after another, each in a fresh chat (a follow-up in its "
        "opener's, at once), book in scope",
        "floor: the tokens a turn's model calls read before the first answer token (the "
        "prefix cache held the rest) at llama.cpp's raw prompt speed, measured in this run; "
        "bare read: the same read (as many new tokens after as long a cached prefix) sent "
        "to the model with nothing in front, a floor for short reads",
        "TTFT: first streamed answer token; direct streams none (TTFT = answer ready)",
        "tokens: every model call of the turn; background conversation-summary update apart",
    ]
    if any(r.run for r in rows):
        notes.append(
            "a repeat asks the same question again: the prompt cache holds its whole prompt "
            "(a re-ask reads ~1 token), so the p50s of more than one run mix first asks and "
            "re-asks; each question's first ask is its run 0 in the JSON"
        )
    return notes


async def bench_answers(
    services: Services,
    *,
    model: str = "local",
    repeat: int = 1,
    questions: dict[str, list[str]] | None = None,
    user: str = BENCH_USER,
    llm_summaries: bool = False,
    warmup: bool = True,
    log: Log = quiet,
) -> AnswersFigures:
    """Prepare the book, then ask every path's questions ``repeat`` times through the graph.

    ``services`` must be (or become, see :func:`agent.services.serving`) what the graph's nodes get from
    ``get_services()``. ``model`` is the chat model spec for every node (``Context.chat_model``).
    """
    from agent.web_search import web_search_available
    from graphs.chat import graph
    from graphs.context import Context

    began = time.perf_counter()
    questions = questions if questions is not None else QUESTIONS
    async with serving(services):
        summary_spec = model if llm_summaries else "extractive"
        document_id, book, summary = await prepare_book(
            services, user, summary_spec=summary_spec, log=log
        )
        if warmup:
            log(f"warming up {model}...")
            await _warm_up(services, model)
        speed = await raw_prompt_speed(model, services.settings)
        log(f"raw prompt speed: {speed} tokens/s")
        web = web_search_available(services.settings)
        context = Context(user=user, book=str(document_id), chat_model=model)
        load_before = list(os.getloadavg())
        rows, skipped = await _ask_all(
            graph,
            context,
            questions,
            repeat,
            web,
            log,
            speed,
            functools.partial(raw_read_seconds, model, services.settings),
            functools.partial(forget_earlier_turns, services, user),
        )
        load_after = list(os.getloadavg())
        async with services.engine.connect() as conn:
            database = (await conn.execute(text("SELECT current_database()"))).scalar()

    return AnswersFigures(
        database=str(database),
        model=model,
        repeat=repeat,
        book=book,
        summary=summary,
        paths=path_figures(questions, rows, skipped),
        questions=rows,
        mismatches=mismatches(rows),
        usage_source=usage_source(rows),
        load_avg_before=[round(x, 2) for x in load_before],
        load_avg_after=[round(x, 2) for x in load_after],
        seconds=round(time.perf_counter() - began, 2),
        notes=_notes(rows, summary, llm_summaries),
        prompt_tokens_per_s=speed,
    )


async def run_answers_bench(
    model: str = "local",
    repeat: int = 1,
    llm_summaries: bool = False,
    log: Log = quiet,
    database: str = BENCH_DATABASE,
) -> tuple[AnswersFigures, Path]:
    """``quire bench answers``: the benchmark in its own database; figures and data folder."""
    settings = await asyncio.to_thread(bench_settings, None, database)
    async with opened_services(settings) as services:
        figures = await bench_answers(
            services, model=model, repeat=repeat, llm_summaries=llm_summaries, log=log
        )
        return figures, services.settings.data_dir


def figures_json(figures: AnswersFigures) -> dict:
    """The figures as plain JSON-ready data."""
    return asdict(figures)
