"""Answer quality on a question set (``quire eval answers``), through the real chat graph.

The data set is JSONL, one question a line::

    {"question": "...", "answers": ["acceptable", "strings"], "document": ["path", ...],
     "expected_route": "hybrid", "unanswerable": false}

``document`` paths are resolved against the current directory first, then the data set's
folder. The documents are ingested for an eval user (reused when already there) in the
eval's own database, and every question is asked in a fresh chat with its documents in
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
"""

from __future__ import annotations

import asyncio
import json
import re
import string
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from agent.services import Services
from bench.metrics import mean, percentile

EVAL_DATABASE = "quire_eval_answers"
EVAL_USER = "answers-eval"

REFUSAL_PHRASES = (
    "don't seem to cover",
    "do not cover",
    "don't cover",
    "does not cover",
    "doesn't cover",
    "not covered",
    "not enough information",
    "not contain",
    "no information",
    "cannot find",
    "can't find",
    "couldn't find",
    "could not find",
    "not mentioned",
    "does not mention",
    "doesn't mention",
    "not in your documents",
    "not in the documents",
    "does not come from their documents",
    "i don't know",
    "i do not know",
)
"""Lower-case phrases that mark an answer as saying the documents do not answer it."""

CITATION = re.compile(r"#chk_[0-9a-f]{8}")

Log = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


# --- the data set -----------------------------------------------------------------------------


@dataclass
class Item:
    """One question of the data set."""

    question: str
    answers: list[str]
    documents: list[Path] = field(default_factory=list)
    expected_route: str | None = None
    unanswerable: bool = False


def _resolve(raw: str, base: Path) -> Path:
    path = Path(raw).expanduser()
    if path.is_absolute():
        return path
    here = Path.cwd() / path
    return here if here.exists() else base / path


def load_dataset(path: Path, limit: int | None = None) -> list[Item]:
    """The questions of a JSONL file (first ``limit`` only when given)."""
    items: list[Item] = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        if not row.get("question"):
            raise ValueError(f"{path}:{number}: no question")
        docs = row.get("document") or []
        docs = [docs] if isinstance(docs, str) else docs
        items.append(
            Item(
                question=row["question"],
                answers=[str(a) for a in row.get("answers") or []],
                documents=[_resolve(d, path.parent) for d in docs],
                expected_route=row.get("expected_route"),
                unanswerable=bool(row.get("unanswerable", False)),
            )
        )
    return items[:limit] if limit else items


# --- metrics ----------------------------------------------------------------------------------


def _tokens(text: str) -> list[str]:
    text = CITATION.sub(" ", text.lower())
    text = "".join(" " if c in string.punctuation else c for c in text)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return text.split()


def token_f1(answer: str, gold: str) -> float:
    """SQuAD token F1 of ``answer`` against one acceptable answer."""
    got, want = _tokens(answer), _tokens(gold)
    if not got or not want:
        return 0.0
    common = sum((Counter(got) & Counter(want)).values())
    if not common:
        return 0.0
    precision, recall = common / len(got), common / len(want)
    return 2 * precision * recall / (precision + recall)


def best_f1(answer: str, golds: list[str]) -> float:
    """The best token F1 over the acceptable answers (0 when there are none)."""
    return max((token_f1(answer, g) for g in golds), default=0.0)


def contains_match(answer: str, golds: list[str]) -> bool:
    """An acceptable answer occurs in ``answer`` (case-insensitive)."""
    low = answer.lower()
    return any(g.lower() in low for g in golds if g)


def is_refusal(answer: str, model_used: str | None = None) -> bool:
    """The answer says the documents do not answer the question."""
    if model_used == "no_context_response":
        return True
    low = answer.lower().replace("’", "'")
    return any(p in low for p in REFUSAL_PHRASES)


def cited_ids(answer: str) -> list[str]:
    """Distinct ``#chk_`` ids of an answer, in order."""
    return list(dict.fromkeys(CITATION.findall(answer)))


def _norm_id(cid: str) -> str:
    return "#" + cid.lstrip("#")


# --- figures ----------------------------------------------------------------------------------


@dataclass
class QuestionResult:
    """One question, answered one way (graph or baseline)."""

    question: str
    system: str
    """``rag`` (the chat graph) or ``baseline`` (no retrieval)."""
    route: str
    expected_route: str | None
    unanswerable: bool
    answer: str
    model_used: str | None
    match: bool
    f1: float | None
    refused: bool
    cited: int
    cited_valid: int
    cited_supporting: int
    seconds: float
    tokens: int


@dataclass
class RouteFigures:
    """One route's (or ``all``) figures for one system."""

    system: str
    route: str
    questions: int
    answerable: int
    unanswerable: int
    accuracy: float | None
    f1: float | None
    citation_validity: float | None
    citation_support: float | None
    refusal_rate: float | None
    latency_p50_s: float | None
    latency_mean_s: float | None
    tokens_mean: float | None
    route_matches: int | None = None
    """Of the ``expected_routes`` questions that name a route, how many the graph took."""
    expected_routes: int = 0


@dataclass
class AnswersReport:
    """Everything ``quire eval answers`` prints and stores."""

    dataset: str
    model: str
    user: str
    database: str
    documents: list[dict]
    routes: list[RouteFigures]
    questions: list[QuestionResult]
    seconds: float
    notes: list[str] = field(default_factory=list)

    def rows(self, system: str) -> list[RouteFigures]:
        """One system's rows (per route, then ``all``)."""
        return [r for r in self.routes if r.system == system]

    def row(self, system: str, route: str) -> RouteFigures | None:
        """One system's row for one route (``all``: every question)."""
        return next((r for r in self.rows(system) if r.route == route), None)

    def as_dict(self) -> dict:
        """The report as plain JSON-ready data."""
        return asdict(self)


def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def route_figures(system: str, route: str, rows: list[QuestionResult]) -> RouteFigures:
    """The figures of one system over ``rows`` (one route's questions, or all)."""
    answerable = [r for r in rows if not r.unanswerable]
    unanswerable = [r for r in rows if r.unanswerable]
    cited = sum(r.cited for r in rows)
    seconds = [r.seconds for r in rows]
    expected = [r for r in rows if r.expected_route]
    return RouteFigures(
        system=system,
        route=route,
        questions=len(rows),
        answerable=len(answerable),
        unanswerable=len(unanswerable),
        accuracy=_ratio(sum(r.match for r in rows), len(rows)),
        f1=round(mean([r.f1 or 0.0 for r in answerable]), 4) if answerable else None,
        citation_validity=_ratio(sum(r.cited_valid for r in rows), cited),
        citation_support=_ratio(
            sum(r.cited_supporting for r in answerable), sum(r.cited for r in answerable)
        ),
        refusal_rate=_ratio(sum(r.refused for r in unanswerable), len(unanswerable)),
        latency_p50_s=round(percentile(seconds, 50), 3) if seconds else None,
        latency_mean_s=round(mean(seconds), 3) if seconds else None,
        tokens_mean=round(mean([float(r.tokens) for r in rows]), 1) if rows else None,
        route_matches=(
            sum(r.route == r.expected_route for r in expected)
            if expected and system == "rag"
            else None
        ),
        expected_routes=len(expected),
    )


def score(
    item: Item,
    *,
    system: str,
    route: str,
    answer: str,
    model_used: str | None,
    chunk_map: dict,
    citations: list[dict],
    seconds: float,
    tokens: int,
) -> QuestionResult:
    """Score one answer (see the module docs)."""
    refused = is_refusal(answer, model_used)
    ids = cited_ids(answer)
    keys = {_norm_id(k) for k in chunk_map}
    texts = {_norm_id(str(c.get("id", ""))): str(c.get("text") or "") for c in citations}
    valid = [i for i in ids if i in keys]
    supporting = [i for i in valid if contains_match(texts.get(i, ""), item.answers)]
    return QuestionResult(
        question=item.question,
        system=system,
        route=route,
        expected_route=item.expected_route,
        unanswerable=item.unanswerable,
        answer=answer[:600],
        model_used=model_used,
        match=refused if item.unanswerable else contains_match(answer, item.answers),
        f1=None if item.unanswerable else round(best_f1(answer, item.answers), 4),
        refused=refused,
        cited=len(ids),
        cited_valid=len(valid),
        cited_supporting=0 if item.unanswerable else len(supporting),
        seconds=round(seconds, 3),
        tokens=tokens,
    )


# --- running ----------------------------------------------------------------------------------


async def ingest_documents(
    services: Services, user: str, paths: list[Path], log: Log = _quiet
) -> tuple[dict[Path, uuid.UUID], list[dict]]:
    """Ingest every document for ``user`` (duplicates are reused); ids and setup figures."""
    from agent.ingest.pipeline import ingest_file
    from agent.library.accounts import resolve_user

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
    from bench.answers import collect_usage

    chat = await achat_model(model, services.settings, 0.0)
    with collect_usage() as usage:
        started = time.perf_counter()
        reply = await chat.ainvoke(general_messages(services.settings.assistant_name, question))
        seconds = time.perf_counter() - started
    content = reply.content if isinstance(reply.content, str) else str(reply.content)
    return content, seconds, usage.input_tokens + usage.output_tokens


async def evaluate_answers(
    services: Services,
    items: list[Item],
    *,
    dataset: str = "",
    model: str = "extractive",
    user: str = EVAL_USER,
    baseline: bool = True,
    summaries: str | None = "extractive",
    log: Log = _quiet,
) -> AnswersReport:
    """Ingest the documents, ask every question through the graph and the baseline, score.

    ``summaries`` names the writer of each document's global summary (``extractive``: lead
    sentences in seconds; a model spec: that model) so overview questions take Path B as
    they would once the summary worker is done; ``None`` leaves them to the ToC fallback.
    ``services`` becomes what the graph's nodes get from ``get_services()`` (see
    :func:`agent.services.serving`).
    """
    from sqlalchemy import text as sql

    from agent.services import serving
    from bench.answers import ask_once, ensure_global_summary
    from graphs.chat import graph
    from graphs.context import Context

    began = time.perf_counter()
    paths = list(dict.fromkeys(p for item in items for p in item.documents))
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"documents not found: {', '.join(missing)}")
    results: list[QuestionResult] = []
    async with serving(services):
        ids, documents = await ingest_documents(services, user, paths, log)
        if summaries:
            for info, document_id in zip(documents, ids.values(), strict=True):
                info["summary"] = await ensure_global_summary(services, document_id, summaries, log)
        every = [str(i) for i in ids.values()]
        for n, item in enumerate(items, start=1):
            scope = [str(ids[p]) for p in item.documents] or every
            context = Context(user=user, chat_model=model, document_ids=scope or None)
            got = await ask_once(graph, item.question, context)
            state = got["state"]
            route = str(state.get("route") or "unknown")
            tokens = got["tokens_in"] + got["tokens_out"] or int(state.get("tokens_used") or 0)
            row = score(
                item,
                system="rag",
                route=route,
                answer=str(state.get("answer") or ""),
                model_used=state.get("model_used"),
                chunk_map=dict(state.get("chunk_map") or {}),
                citations=list(state.get("citations") or []),
                seconds=got["total"],
                tokens=tokens,
            )
            results.append(row)
            log(f"[{n}/{len(items)}] {route}: {item.question!r} match={row.match}")
            if baseline:
                answer, seconds, tokens = await _baseline(services, model, item.question)
                results.append(
                    score(
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
                )
        async with services.engine.connect() as conn:
            database = (await conn.execute(sql("SELECT current_database()"))).scalar()

    routes: list[RouteFigures] = []
    for system in ("rag", "baseline") if baseline else ("rag",):
        mine = [r for r in results if r.system == system]
        for route in sorted({r.route for r in mine}):
            routes.append(route_figures(system, route, [r for r in mine if r.route == route]))
        routes.append(route_figures(system, "all", mine))
    return AnswersReport(
        dataset=dataset,
        model=model,
        user=user,
        database=str(database),
        documents=documents,
        routes=routes,
        questions=results,
        seconds=round(time.perf_counter() - began, 2),
        notes=[
            "baseline rows are grouped by the route the graph took for the same question",
            "match: acceptable answer contained (case-insensitive); unanswerable: refusal",
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
    log: Log = _quiet,
) -> tuple[AnswersReport, Path]:
    """``quire eval answers``: the eval in its own database; the report and the eval folder."""
    from agent.config import Settings
    from agent.services import open_services

    items = load_dataset(dataset, limit)
    settings = await asyncio.to_thread(Settings, database_name=database)
    services = await open_services(settings)
    try:
        report = await evaluate_answers(
            services,
            items,
            dataset=str(dataset),
            model=model,
            user=user,
            summaries=summaries,
            log=log,
        )
        return report, services.settings.data_dir / "eval"
    finally:
        await services.close()


# --- output -----------------------------------------------------------------------------------

METRICS = (
    ("accuracy", "match"),
    ("f1", "token F1"),
    ("citation_validity", "cit. valid"),
    ("citation_support", "cit. support"),
    ("refusal_rate", "refusal (unans.)"),
)


def plot_report(report: AnswersReport, path: Path) -> Path:
    """Grouped bars: every metric of the ``all`` row, graph vs baseline."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4.5))
    systems = [s for s in ("rag", "baseline") if report.row(s, "all")]
    width = 0.8 / max(len(systems), 1)
    colors = {"rag": "#55a868", "baseline": "#8c8c8c"}
    for i, system in enumerate(systems):
        row = report.row(system, "all")
        values = [getattr(row, key) for key, _ in METRICS]
        xs = [j + (i - (len(systems) - 1) / 2) * width for j in range(len(METRICS))]
        bars = ax.bar(
            xs,
            [v or 0.0 for v in values],
            width=width,
            color=colors[system],
            label="Quire (retrieval)" if system == "rag" else "baseline (no retrieval)",
            zorder=2,
        )
        for bar, value in zip(bars, values, strict=True):
            ax.annotate(
                "n/a" if value is None else f"{value:.2f}",
                (bar.get_x() + bar.get_width() / 2, (value or 0.0) + 0.01),
                ha="center",
                va="bottom",
                fontsize=8,
            )
    ax.set_xticks(range(len(METRICS)), [label for _, label in METRICS])
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("share")
    n = report.row("rag", "all").questions if report.row("rag", "all") else 0
    ax.set_title(f"Answer quality, model {report.model}, {n} questions")
    ax.grid(axis="y", alpha=0.3, zorder=0)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_report(report: AnswersReport, folder: Path, name: str = "answers") -> tuple[Path, Path]:
    """``<folder>/<name>.json`` and ``<folder>/<name>.png``."""
    from bench.common import write_results

    json_path = write_results(name, report.as_dict(), folder)
    png_path = plot_report(report, folder / f"{name}.png")
    return json_path, png_path
