"""Answer quality on a question set (``quire eval answers``), through the real chat graph.

The data set is JSONL, one question a line::

    {"question": "...", "answers": ["acceptable", "strings"], "document": ["path", ...],
     "expected_route": "hybrid", "unanswerable": false}

``document`` paths are resolved against the current directory first, then the data set's
folder. The documents are ingested for an eval user (reused when already there) in the
eval's own database, and every question is asked in a fresh chat, with no remembered turn
of earlier questions or runs (no "previous discussion" to copy), with its documents in
scope (``Context.document_ids``; all of the set's documents when it names none).

Per route (the route the graph took) the report gives:

* **match**: an acceptable answer occurs in the answer (case-insensitive); for an
  unanswerable question, a refusal counts as correct.
* **F1**: SQuAD token F1, best over the acceptable answers (answerable questions only).
* **citation validity**: cited ``#chk_`` ids that are keys of the turn's ``chunk_map``.
* **citation support**: cited chunks whose text contains an acceptable answer.
* **refusal rate** on unanswerable questions (:data:`REFUSAL_PHRASES` or the
  ``no_context_response`` model).
* latency and tokens.

A **baseline** answers the same questions with the same chat model and no retrieval
(:func:`agent.chat.answering.general_messages`), and is reported beside the graph's figures.

Here: ingesting the documents, asking the questions (graph and baseline) and the report's
files. The data set is read by :mod:`bench.eval_answers_data`, each answer scored by
:mod:`bench.eval_answers_scoring`, the figures and chart made by
:mod:`bench.eval_answers_figures`.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import replace
from pathlib import Path

from agent.services import Services
from bench.common import forget_earlier_turns
from bench.eval_answers_checkpoint import Checkpoint
from bench.eval_answers_data import Item, load_dataset
from bench.eval_answers_figures import (
    METRICS,
    NO_TOOLS,
    AnswersReport,
    RouteFigures,
    plot_report,
    route_figures,
    route_rows,
)
from bench.eval_answers_scoring import (
    CITATION,
    REFUSAL_PHRASES,
    QuestionResult,
    best_f1,
    cited_ids,
    contains_match,
    is_refusal,
    score,
    token_f1,
)
from bench.progress import Log, quiet

__all__ = [
    "CITATION",
    "EVAL_DATABASE",
    "EVAL_USER",
    "METRICS",
    "REFUSAL_PHRASES",
    "AnswersReport",
    "Item",
    "QuestionResult",
    "RouteFigures",
    "best_f1",
    "cited_ids",
    "contains_match",
    "evaluate_answers",
    "ingest_documents",
    "is_refusal",
    "load_dataset",
    "plot_report",
    "route_figures",
    "run_answers_eval",
    "score",
    "token_f1",
    "write_report",
]

EVAL_DATABASE = "quire_eval_answers"
EVAL_USER = "answers-eval"


def set_documents(items: list[Item]) -> list[Path]:
    """Every document the set's questions name, each once, in the order first named."""
    return list(dict.fromkeys(p for item in items for p in item.documents))


def question_documents(item: Item, ids: dict[Path, uuid.UUID]) -> list[uuid.UUID]:
    """The documents in scope for ``item``: those it names, else all of the set's."""
    return [ids[p] for p in item.documents] or list(ids.values())


async def ingest_documents(
    services: Services, user: str, paths: list[Path], log: Log = quiet
) -> tuple[dict[Path, uuid.UUID], list[dict]]:
    """Ingest every document for ``user`` (duplicates are reused); ids and setup figures.
    Raises ``FileNotFoundError`` naming every missing file before anything is ingested."""
    from agent.ingest.pipeline import ingest_file
    from agent.library.accounts import resolve_user

    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"documents not found: {', '.join(missing)}")

    owner = await resolve_user(services, user)
    ids: dict[Path, uuid.UUID] = {}
    info: list[dict] = []
    for path in paths:
        log(f"ingesting {path.name} for {user}...")
        result = await ingest_file(services, owner.id, path)
        ids[path] = result.document_id
        info.append(
            {
                "file": path.name,
                "title": result.title,
                "document_id": str(result.document_id),
                "status": result.status,
                "chunks": result.chunks,
                "seconds": round(result.seconds, 2),
            }
        )
    return ids, info


async def _baseline(services: Services, model: str, question: str) -> tuple[str, float, int]:
    """The chat model's answer from the question alone (no retrieval)."""
    from agent.chat.answering import general_messages
    from agent.models import achat_model
    from bench.answers_usage import collect_usage

    chat = await achat_model(model, services.settings, 0.0)
    with collect_usage() as usage:
        started = time.perf_counter()
        reply = await chat.ainvoke(general_messages(services.settings.assistant_name, question))
        seconds = time.perf_counter() - started
    content = reply.content if isinstance(reply.content, str) else str(reply.content)
    return content, seconds, usage.input_tokens + usage.output_tokens


async def _answer_rag(graph, context, item: Item, system: str = "rag") -> QuestionResult:
    """Ask ``item`` through the chat graph and score the answer (as ``system``)."""
    from bench.answers_turn import ask_once

    try:
        got = await ask_once(graph, item.question, context)
    except Exception as exc:  # one failed turn is a miss, not the end of the run
        return score(
            item,
            system=system,
            route="failed",
            answer=f"error: {type(exc).__name__}: {exc}"[:300],
            model_used=None,
            chunk_map={},
            citations=[],
            seconds=0.0,
            tokens=0,
        )
    state = got["state"]
    route = str(state.get("route") or "unknown")
    retrieved = list(state.get("retrieved") or []) if state.get("relevant") else []
    tokens = got["tokens_in"] + got["tokens_out"] or int(state.get("tokens_used") or 0)
    return score(
        item,
        system=system,
        route=route,
        answer=str(state.get("answer") or ""),
        model_used=state.get("model_used"),
        chunk_map=dict(state.get("chunk_map") or {}),
        citations=list(state.get("citations") or []),
        seconds=got["total"],
        tokens=tokens,
        shown=[str(p.get("context_text") or p.get("text") or "") for p in retrieved] or None,
    )


async def _answer_baseline(
    services: Services, model: str, item: Item, route: str
) -> QuestionResult:
    """Ask ``item`` without retrieval and score the answer (grouped under ``route``)."""
    answer, seconds, tokens = await _baseline(services, model, item.question)
    return score(
        item,
        system="baseline",
        route=route,
        answer=answer,
        model_used=model,
        chunk_map={},
        citations=[],
        seconds=seconds,
        tokens=tokens,
    )


async def evaluate_answers(
    services: Services,
    items: list[Item],
    *,
    dataset: str = "",
    model: str = "extractive",
    user: str = EVAL_USER,
    baseline: bool = True,
    summaries: str | None = "extractive",
    compare_tools: bool = False,
    checkpoint: Checkpoint | None = None,
    log: Log = quiet,
) -> AnswersReport:
    """Ingest the documents, ask every question through the graph and the baseline, score.

    ``checkpoint`` keeps each question's rows as they come and supplies those of questions
    answered by an earlier, stopped run (:mod:`bench.eval_answers_checkpoint`).

    ``compare_tools`` asks each question twice through the graph, with tool selection
    (seed 003) on (``rag``) and off (``rag_no_tools``), in the same run.

    ``summaries`` names the writer of each document's global summary (``extractive``: lead
    sentences in seconds; a model spec: that model) so overview questions take Path B as
    they would once the summary worker is done; ``None`` leaves them to the ToC fallback.
    ``services`` becomes what the graph's nodes get from ``get_services()`` (see
    :func:`agent.services.serving`).
    """
    from sqlalchemy import text as sql

    from agent.services import serving
    from bench.answers_book import ensure_global_summary
    from graphs.chat import graph
    from graphs.context import Context

    began = time.perf_counter()
    paths = set_documents(items)
    results: list[QuestionResult] = []
    async with serving(services):
        ids, documents = await ingest_documents(services, user, paths, log)
        if summaries:
            for info, document_id in zip(documents, ids.values(), strict=True):
                info["summary"] = await ensure_global_summary(services, document_id, summaries, log)
        systems = (
            {"rag"}
            | ({NO_TOOLS} if compare_tools else set())
            | ({"baseline"} if baseline else set())
        )
        resumed = 0
        for n, item in enumerate(items, start=1):
            kept = checkpoint.answered(item.question, systems) if checkpoint else None
            if kept is not None:
                results.extend(kept)
                resumed += 1
                log(f"[{n}/{len(items)}] kept from the earlier run: {item.question!r}")
                continue
            asked = len(results)
            scope = [str(i) for i in question_documents(item, ids)]
            context = Context(
                user=user,
                chat_model=model,
                document_ids=scope or None,
                tool_selection=True if compare_tools else None,
            )
            await forget_earlier_turns(services, user)  # each question asked as a first one
            row = await _answer_rag(graph, context, item)
            results.append(row)
            log(f"[{n}/{len(items)}] {row.route}: {item.question!r} match={row.match}")
            if compare_tools:
                context = replace(context, tool_selection=False)
                off = await _answer_rag(graph, context, item, system=NO_TOOLS)
                results.append(off)
                log(f"  tool selection off: {off.route} match={off.match}")
            if baseline:
                results.append(await _answer_baseline(services, model, item, row.route))
            if checkpoint:
                checkpoint.add(results[asked:])
        async with services.engine.connect() as conn:
            database = (await conn.execute(sql("SELECT current_database()"))).scalar()

    return AnswersReport(
        dataset=dataset,
        model=model,
        user=user,
        database=str(database),
        documents=documents,
        routes=route_rows(results, baseline),
        questions=results,
        seconds=round(time.perf_counter() - began, 2),
        notes=[
            "baseline rows are grouped by the route the graph took for the same question",
            "match: acceptable answer contained (case-insensitive); unanswerable: refusal",
            *(
                [f"{resumed} of {len(items)} questions' rows kept from an earlier, stopped run"]
                if resumed
                else []
            ),
        ],
    )


async def run_answers_eval(
    dataset: Path,
    *,
    model: str = "extractive",
    limit: int | None = None,
    database: str = EVAL_DATABASE,
    user: str = EVAL_USER,
    summaries: str | None = "extractive",
    compare_tools: bool = False,
    baseline: bool = True,
    name: str = "answers",
    resume: bool = False,
    log: Log = quiet,
) -> tuple[AnswersReport, Path]:
    """``quire eval answers``: the eval in its own database; the report and the eval folder.

    Rows are kept as they come in ``<eval folder>/<name>.partial.jsonl``; ``resume`` reuses
    those of an earlier run of the same set, model and systems."""
    from agent.config import Settings
    from bench.common import opened_services

    items = load_dataset(dataset, limit)
    settings = await asyncio.to_thread(Settings, database_name=database)
    async with opened_services(settings) as services:
        folder = services.settings.data_dir / "eval"
        header = {
            "dataset": str(dataset),
            "questions": len(items),
            "model": model,
            "summaries": summaries,
            "compare_tools": compare_tools,
            "baseline": baseline,
        }
        checkpoint = Checkpoint(folder / f"{name}.partial.jsonl", header, resume)
        report = await evaluate_answers(
            services,
            items,
            dataset=str(dataset),
            model=model,
            user=user,
            summaries=summaries,
            compare_tools=compare_tools,
            baseline=baseline,
            checkpoint=checkpoint,
            log=log,
        )
        return report, folder


def write_report(report: AnswersReport, folder: Path, name: str = "answers") -> tuple[Path, Path]:
    """``<folder>/<name>.json`` and ``<folder>/<name>.png``."""
    from bench.charts import write_figures_and_chart

    return write_figures_and_chart(
        name, report.as_dict(), folder, lambda path: plot_report(report, path)
    )
