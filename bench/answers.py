"""Answer latency benchmark (``quire bench answers``): time to first token, total time and
tokens in/out of each chat path, through the real ``chat`` graph.

Setup, in its own database (``quire_bench_answers``, never the user's data): a bench user
owns *Alice's Adventures in Wonderland* (ingested once, reused by later runs) with a
stored global summary, so Path B answers from it. The summary is written by the
``extractive`` summary writer (lead sentences, no model: seconds) unless
``llm_summaries`` asks for the chat model (a whole book on the local CPU model: an hour).

Each question of :data:`QUESTIONS` is asked ``repeat`` times, one after another, each in a
fresh chat, with the book in scope (``Context.book``). Per question:

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
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.callbacks import BaseCallbackHandler, get_usage_metadata_callback
from langchain_core.messages import HumanMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.tracers.context import register_configure_hook
from sqlalchemy import text

from agent.config import Settings
from agent.services import Services, open_services, serving
from bench.common import SHARED_DATA, database_settings
from graphs.streaming import ANSWER_NODES, stream_turn

BENCH_DATABASE = "quire_bench_answers"
BENCH_USER = "bench-answers"
BOOK = SHARED_DATA / "books" / "alice-in-wonderland.txt"

QUESTIONS: dict[str, list[str]] = {
    "direct": ["What is your name?"],
    "general": ["hello!", "hello, how are you?"],
    "global_summary": ["Summarize the book"],
    "hybrid": ["Who is Dinah?", "What does the Caterpillar ask Alice?"],
    "deep_reasoning": ["Why does Alice keep changing size, and how does it affect her?"],
    "not_covered": ["What is the capital of Peru?"],
    "web_search": ["What is the latest news about Alice in Wonderland adaptations?"],
}
"""Questions per path, in the order they are asked (``web_search`` only when configured)."""

EXPECTED: dict[str, tuple[str, str]] = {
    "direct": ("direct", "direct"),
    "general": ("general", "general"),
    "global_summary": ("global_summary", "overview"),
    "hybrid": ("hybrid", "generate"),
    "deep_reasoning": ("deep_reasoning", "generate"),
    "not_covered": ("hybrid", "not_covered"),
    "web_search": ("web_search", "web_search"),
}
"""Per path: the route the router should pick (``state["route"]``) and the node that answers."""

"""Nodes that write the answer; streamed tokens of other nodes (e.g. ``retrieve``) are not it."""

Log = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


# --- token usage --------------------------------------------------------------------------


class UsageCollector(BaseCallbackHandler):
    """Sums ``usage_metadata`` of every chat-model call, named by its model or not."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        """Add one finished call's usage (streamed calls end with their merged message)."""
        try:
            generation = response.generations[0][0]
        except IndexError:
            return
        if not isinstance(generation, ChatGeneration):
            return
        usage = getattr(generation.message, "usage_metadata", None)
        if usage:
            self.calls += 1
            self.input_tokens += usage.get("input_tokens", 0)
            self.output_tokens += usage.get("output_tokens", 0)

    def snapshot(self) -> tuple[int, int, int]:
        """Calls, input tokens and output tokens so far."""
        return self.calls, self.input_tokens, self.output_tokens


_collector: ContextVar[UsageCollector | None] = ContextVar("quire_bench_usage", default=None)
register_configure_hook(_collector, inheritable=True)


@contextlib.contextmanager
def collect_usage():
    """Collect the usage of every model call run in this context (tasks it starts included)."""
    collector = UsageCollector()
    token = _collector.set(collector)
    try:
        yield collector
    finally:
        _collector.reset(token)


# --- figures ------------------------------------------------------------------------------


@dataclass
class QuestionFigures:
    """One asked question (one repeat)."""

    path: str
    question: str
    run: int
    expected_route: str
    route: str | None
    expected_node: str
    answered_by: str | None
    """The answering node that ran (the last of :data:`ANSWER_NODES` in the turn)."""
    matches: bool
    ttft_s: float
    total_s: float
    streamed: bool
    """False: no answer token was streamed (the fixed ``direct`` reply); TTFT = answer ready."""
    tokens_in: int
    tokens_out: int
    model_calls: int
    tokens_source: str
    """``callback`` (usage of each call), ``tokens_used`` (state total, in ``tokens_out``) or
    ``none`` (no model call)."""
    tokens_used: int
    """The graph state's ``tokens_used`` (the answering call's total)."""
    stock_callback_models: int
    """Models ``get_usage_metadata_callback`` recorded usage for in the turn (module docs)."""
    model_used: str | None
    background_s: float
    """The conversation-summary update ``save`` left running, waited for after the turn."""
    background_tokens: int
    nodes: list[str]
    answer: str


@dataclass
class PathFigures:
    """One path's figures over its questions and repeats."""

    path: str
    questions: int
    runs: int
    ttft_p50_s: float | None = None
    total_p50_s: float | None = None
    total_max_s: float | None = None
    tokens_in_mean: float | None = None
    tokens_out_mean: float | None = None
    route_matches: int = 0
    skipped: str | None = None


@dataclass
class AnswersFigures:
    """Everything ``quire bench answers`` prints and stores."""

    database: str
    model: str
    repeat: int
    book: dict
    summary: dict
    paths: list[PathFigures]
    questions: list[QuestionFigures]
    mismatches: list[str]
    usage_source: str
    load_avg_before: list[float]
    load_avg_after: list[float]
    seconds: float
    notes: list[str] = field(default_factory=list)

    def path(self, name: str) -> PathFigures:
        """The figures of one path."""
        return next(p for p in self.paths if p.path == name)


# --- the database -------------------------------------------------------------------------


def bench_settings(base: Settings | None = None, database: str = BENCH_DATABASE) -> Settings:
    """The settings with the benchmark's own database (same server) instead of Quire's."""
    return database_settings(database, base)


async def ensure_global_summary(
    services: Services, document_id: uuid.UUID, summary_spec: str = "extractive", log: Log = _quiet
) -> dict:
    """Make sure ``document_id`` has a global summary; the summary's setup figures.

    A stored summary is kept, except that ``summary_spec`` other than ``extractive``
    (``--llm-summaries``) writes whatever that model has not written yet.
    """
    from agent.db import summaries as store
    from agent.summaries.builder import summarize_document
    from agent.summaries.writers import summary_writer

    async with services.engine.connect() as conn:
        doc = await store.document_for_summary(conn, document_id)
    summary: dict = {"writer": summary_spec, "reused": True, "seconds": 0.0}
    if doc is None or not doc.global_summary or summary_spec != "extractive":
        log(f"writing summaries ({summary_spec} writer)...")
        writer = await summary_writer(services.settings, summary_spec)
        report = await summarize_document(services, document_id, writer=writer)
        summary.update(
            reused=False,
            seconds=round(report.seconds, 2),
            sections=report.sections,
            chapters=report.chapters,
        )
        async with services.engine.connect() as conn:
            doc = await store.document_for_summary(conn, document_id)
    summary["model"] = doc.summary_model if doc else None
    summary["chars"] = len(doc.global_summary or "") if doc else 0
    return summary


async def prepare_book(
    services: Services,
    user: str,
    *,
    summary_spec: str = "extractive",
    log: Log = _quiet,
) -> tuple[uuid.UUID, dict, dict]:
    """Ingest Alice for ``user`` (reused when there) and make sure it has a global summary
    (see :func:`ensure_global_summary`). Returns the document id, the book's and the
    summary's setup figures.
    """
    from agent.ingest.pipeline import ingest_file
    from agent.library.accounts import resolve_user

    owner = await resolve_user(services, user)
    log(f"ingesting {BOOK.name} for {user}...")
    result = await ingest_file(services, owner.id, BOOK)
    book = {
        "file": BOOK.name,
        "title": result.title,
        "document_id": str(result.document_id),
        "status": result.status,
        "chunks": result.chunks,
        "parents": result.parents,
        "seconds": round(result.seconds, 2),
    }
    summary = await ensure_global_summary(services, result.document_id, summary_spec, log)
    return result.document_id, book, summary


# --- the measurements ---------------------------------------------------------------------


async def _drain_background() -> float:
    """Wait for the work ``save`` left running (the conversation-summary update)."""
    from graphs.chat import wait_for_background

    started = time.perf_counter()
    waited = await wait_for_background()
    return time.perf_counter() - started if waited else 0.0


async def ask_once(graph, question: str, context) -> dict:
    """Ask one question through ``graph`` and time it (see the module docs)."""
    nodes: list[str] = []
    final: dict = {}
    first: float | None = None
    answered_at: float | None = None
    with get_usage_metadata_callback() as stock, collect_usage() as usage:
        started = time.perf_counter()
        async for event in stream_turn(graph, question, context=context):
            if event.kind == "token" and first is None:
                first = time.perf_counter() - started
            elif event.kind == "node":
                nodes.append(event.node)
                if event.node in ANSWER_NODES and answered_at is None:
                    answered_at = time.perf_counter() - started
            elif event.kind == "final":
                final = event.state
        total = time.perf_counter() - started
        calls, tokens_in, tokens_out = usage.snapshot()
        stock_models = len(stock.usage_metadata)
    background = await _drain_background()
    return {
        "state": final,
        "nodes": nodes,
        "ttft": first if first is not None else (answered_at or total),
        "streamed": first is not None,
        "total": total,
        "calls": calls,
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "stock_models": stock_models,
        "background_s": background,
        "background_tokens": usage.input_tokens + usage.output_tokens - tokens_in - tokens_out,
    }


def _p50(values: list[float]) -> float:
    return round(float(np.percentile(values, 50)), 3)


def _path_figures(path: str, rows: list[QuestionFigures]) -> PathFigures:
    return PathFigures(
        path=path,
        questions=len({r.question for r in rows}),
        runs=len(rows),
        ttft_p50_s=_p50([r.ttft_s for r in rows]),
        total_p50_s=_p50([r.total_s for r in rows]),
        total_max_s=round(max(r.total_s for r in rows), 3),
        tokens_in_mean=round(sum(r.tokens_in for r in rows) / len(rows), 1),
        tokens_out_mean=round(sum(r.tokens_out for r in rows) / len(rows), 1),
        route_matches=sum(r.matches for r in rows),
    )


async def _warm_up(services: Services, model: str) -> None:
    """Load the chat model and the embedder before timing (the first local load reads 1 GB)."""
    from agent.models import achat_model

    settings = services.settings
    chat = await achat_model(model, settings, 0.0)
    await asyncio.to_thread(services.embeddings.embedder.embed_query, "warm up")
    await chat.ainvoke([HumanMessage("Say OK.")], max_tokens=2)


async def bench_answers(
    services: Services,
    *,
    model: str = "local",
    repeat: int = 1,
    questions: dict[str, list[str]] | None = None,
    user: str = BENCH_USER,
    llm_summaries: bool = False,
    warmup: bool = True,
    log: Log = _quiet,
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
    notes: list[str] = []
    async with serving(services):
        summary_spec = model if llm_summaries else "extractive"
        document_id, book, summary = await prepare_book(
            services, user, summary_spec=summary_spec, log=log
        )
        if warmup:
            log(f"warming up {model}...")
            await _warm_up(services, model)
        web = web_search_available(services.settings)
        context = Context(user=user, book=str(document_id), chat_model=model)
        rows: list[QuestionFigures] = []
        skipped: dict[str, str] = {}
        load_before = list(os.getloadavg())
        for path, asked in questions.items():
            if path == "web_search" and not web:
                skipped[path] = "not configured"
                continue
            route, node = EXPECTED[path]
            for question in asked:
                for run in range(repeat):
                    got = await ask_once(graph, question, context)
                    state = got["state"]
                    answered_by = next(
                        (n for n in reversed(got["nodes"]) if n in ANSWER_NODES), None
                    )
                    tokens_used = int(state.get("tokens_used") or 0)
                    if got["calls"]:
                        source, t_in, t_out = "callback", got["tokens_in"], got["tokens_out"]
                    elif tokens_used:
                        source, t_in, t_out = "tokens_used", 0, tokens_used
                    else:
                        source, t_in, t_out = "none", 0, 0
                    row = QuestionFigures(
                        path=path,
                        question=question,
                        run=run,
                        expected_route=route,
                        route=state.get("route"),
                        expected_node=node,
                        answered_by=answered_by,
                        matches=state.get("route") == route and answered_by == node,
                        ttft_s=round(got["ttft"], 3),
                        total_s=round(got["total"], 3),
                        streamed=got["streamed"],
                        tokens_in=t_in,
                        tokens_out=t_out,
                        model_calls=got["calls"],
                        tokens_source=source,
                        tokens_used=tokens_used,
                        stock_callback_models=got["stock_models"],
                        model_used=state.get("model_used"),
                        background_s=round(got["background_s"], 3),
                        background_tokens=got["background_tokens"],
                        nodes=got["nodes"],
                        answer=str(state.get("answer", ""))[:400],
                    )
                    rows.append(row)
                    log(
                        f"{path}: {question!r} -> route {row.route} via {row.answered_by}"
                        f"{'' if row.matches else ' (MISMATCH)'}; TTFT {row.ttft_s} s, "
                        f"total {row.total_s} s, tokens {row.tokens_in}/{row.tokens_out}"
                    )
        load_after = list(os.getloadavg())
        async with services.engine.connect() as conn:
            database = (await conn.execute(text("SELECT current_database()"))).scalar()

    paths: list[PathFigures] = []
    for path in questions:
        if path in skipped:
            paths.append(PathFigures(path, len(questions[path]), 0, skipped=skipped[path]))
            continue
        mine = [r for r in rows if r.path == path]
        if mine:
            paths.append(_path_figures(path, mine))
    mismatches = [
        f"{r.path}: {r.question!r} took route {r.route} via {r.answered_by}, "
        f"expected {r.expected_route} via {r.expected_node}"
        for r in rows
        if not r.matches
    ]
    sources = sorted({r.tokens_source for r in rows} - {"none"})
    usage_source = "+".join(sources) or "none"
    if any(r.model_calls for r in rows) and not any(r.stock_callback_models for r in rows):
        notes.append(
            "get_usage_metadata_callback recorded no call: the models set no "
            "response_metadata['model_name']; usage_metadata was collected by UsageCollector"
        )
    notes += [
        f"summaries for Path B: {summary['writer']} writer"
        + ("" if llm_summaries else " (fast setup; --llm-summaries for the chat model)"),
        "questions asked one after another, each in a fresh chat, book in scope",
        "TTFT: first streamed answer token; direct streams none (TTFT = answer ready)",
        "tokens: every model call of the turn; background conversation-summary update apart",
    ]
    return AnswersFigures(
        database=str(database),
        model=model,
        repeat=repeat,
        book=book,
        summary=summary,
        paths=paths,
        questions=rows,
        mismatches=mismatches,
        usage_source=usage_source,
        load_avg_before=[round(x, 2) for x in load_before],
        load_avg_after=[round(x, 2) for x in load_after],
        seconds=round(time.perf_counter() - began, 2),
        notes=notes,
    )


async def run_answers_bench(
    model: str = "local",
    repeat: int = 1,
    llm_summaries: bool = False,
    log: Log = _quiet,
    database: str = BENCH_DATABASE,
) -> tuple[AnswersFigures, Path]:
    """``quire bench answers``: the benchmark in its own database; figures and data folder."""
    settings = await asyncio.to_thread(bench_settings, None, database)
    services = await open_services(settings)
    try:
        figures = await bench_answers(
            services, model=model, repeat=repeat, llm_summaries=llm_summaries, log=log
        )
        return figures, services.settings.data_dir
    finally:
        await services.close()


def figures_json(figures: AnswersFigures) -> dict:
    """The figures as plain JSON-ready data."""
    return asdict(figures)
