"""Routing accuracy on a labelled message set (``quire eval routing``), through the real chat
graph with the default setup: the extractive model and no web-search key.

The set is JSONL, one message a line (``tests/data/routing.jsonl``)::

    {"message": "Who won the Caucus-race?", "class": "trap",
     "books": ["alice-in-wonderland.txt"], "route": "hybrid", "mode": "specific",
     "route_with_web": "hybrid"}

* ``books``: the documents in scope (file names under the shared ``books`` folder, or
  paths); one book makes it the book in scope (summaries take Path B), several are searched
  together.
* ``route``: the route the finished turn must report with the default setup (no web key:
  Quire never leaves the documents); ``mode`` (optional): the retrieval settings it must
  use (``specific``, ``general``, ``deep``); ``route_with_web`` (optional): the route
  chosen when a web key is configured (checked by the unit tests of
  :func:`agent.chat.routing.classify_route`, not here: no web search runs in this eval).
* ``class``: the kind of message, for the figures per class; ``trap`` marks document
  questions that contain news, weather, score, "who won", "currently", "today" or a year.

Every message is asked in a fresh chat. The report gives, per class and overall, how many
messages took the expected route (and, where labelled, the expected mode), and lists the
misses with the reason each turn recorded.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from agent.services import Services
from bench.paths import ROOT, SHARED_DATA
from bench.progress import Log, quiet

ROUTING_SET = ROOT / "tests" / "data" / "routing.jsonl"
EVAL_DATABASE = "quire_eval_routing"
EVAL_USER = "routing-eval"


@dataclass(frozen=True)
class RoutingItem:
    """One labelled message."""

    message: str
    cls: str
    books: tuple[Path, ...]
    route: str
    mode: str | None = None
    route_with_web: str | None = None


@dataclass
class RoutingResult:
    """What the graph did with one message."""

    message: str
    cls: str
    expected: str
    route: str
    reason: str
    expected_mode: str | None
    mode: str | None
    confidence: str | None

    @property
    def correct(self) -> bool:
        """The expected route (and the expected mode, where labelled)."""
        mode_ok = self.expected_mode is None or self.expected_mode == self.mode
        return self.route == self.expected and mode_ok


@dataclass
class ClassFigures:
    """Accuracy of one class (``all``: every message)."""

    cls: str
    messages: int
    correct: int
    routes_correct: int

    @property
    def accuracy(self) -> float:
        """Share of messages with the expected route (and mode, where labelled)."""
        return self.correct / self.messages if self.messages else 0.0


@dataclass
class RoutingReport:
    """The figures per class and overall, every message's outcome, and the setup."""

    dataset: str
    database: str
    classes: list[ClassFigures]
    results: list[RoutingResult]
    documents: list[dict] = field(default_factory=list)
    seconds: float = 0.0

    def row(self, cls: str) -> ClassFigures:
        """The figures of ``cls`` (``all`` for the overall row)."""
        return next(c for c in self.classes if c.cls == cls)

    @property
    def misses(self) -> list[RoutingResult]:
        """The messages that did not take the expected route (or mode)."""
        return [r for r in self.results if not r.correct]

    def as_dict(self) -> dict:
        """JSON-ready form (``quire eval routing --json``)."""
        return {
            "dataset": self.dataset,
            "database": self.database,
            "seconds": self.seconds,
            "documents": self.documents,
            "classes": [{**asdict(c), "accuracy": round(c.accuracy, 4)} for c in self.classes],
            "misses": [asdict(r) for r in self.misses],
            "results": [{**asdict(r), "correct": r.correct} for r in self.results],
        }


def _book_path(raw: str, base: Path) -> Path:
    """A book named in the set: a path (absolute, from here or the set's folder), else a
    file of the shared ``books`` folder."""
    path = Path(raw).expanduser()
    for candidate in (path, Path.cwd() / path, base / path):
        if candidate.is_file():
            return candidate
    return SHARED_DATA / "books" / raw


def load_routing_set(path: Path = ROUTING_SET, limit: int | None = None) -> list[RoutingItem]:
    """The labelled messages of a JSONL file (the first ``limit`` only when given)."""
    items: list[RoutingItem] = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        if not row.get("message") or not row.get("route") or not row.get("class"):
            raise ValueError(f"{path}:{number}: message, class and route are required")
        items.append(
            RoutingItem(
                message=row["message"],
                cls=row["class"],
                books=tuple(_book_path(b, path.parent) for b in row.get("books") or []),
                route=row["route"],
                mode=row.get("mode"),
                route_with_web=row.get("route_with_web"),
            )
        )
    return items[:limit] if limit else items


def class_figures(results: list[RoutingResult]) -> list[ClassFigures]:
    """One row per class, in the set's order, then ``all``."""
    order = list(dict.fromkeys(r.cls for r in results))
    rows = []
    for cls in [*order, "all"]:
        chosen = [r for r in results if cls in ("all", r.cls)]
        rows.append(
            ClassFigures(
                cls=cls,
                messages=len(chosen),
                correct=sum(r.correct for r in chosen),
                routes_correct=sum(r.route == r.expected for r in chosen),
            )
        )
    return rows


async def _ask(graph, context, item: RoutingItem) -> RoutingResult:
    """Ask ``item`` in a fresh chat and record the route the turn reported."""
    from bench.answers_turn import ask_once

    state = (await ask_once(graph, item.message, context))["state"]
    routing = state.get("routing") or {}
    return RoutingResult(
        message=item.message,
        cls=item.cls,
        expected=item.route,
        route=str(state.get("route") or "unknown"),
        reason=str(routing.get("reason") or state.get("route_reason") or ""),
        expected_mode=item.mode,
        mode=routing.get("mode"),
        confidence=routing.get("confidence"),
    )


async def evaluate_routing(
    services: Services,
    items: list[RoutingItem],
    *,
    dataset: str = "",
    user: str = EVAL_USER,
    log: Log = quiet,
) -> RoutingReport:
    """Ingest the set's books for ``user`` and ask every message through the chat graph
    with the extractive model; ``services`` becomes what the graph's nodes get from
    ``get_services()`` (:func:`agent.services.serving`). Its settings decide the web: the
    default setup has no key."""
    from sqlalchemy import text as sql

    from agent.services import serving
    from bench.eval_answers import ingest_documents
    from graphs.chat import graph
    from graphs.context import Context

    began = time.perf_counter()
    paths = list(dict.fromkeys(p for item in items for p in item.books))
    results: list[RoutingResult] = []
    async with serving(services):
        ids, documents = await ingest_documents(services, user, paths, log)
        every = [str(i) for i in ids.values()]
        for n, item in enumerate(items, start=1):
            scope = [str(ids[p]) for p in item.books] or every
            context = Context(user=user, chat_model="extractive", document_ids=scope or None)
            result = await _ask(graph, context, item)
            results.append(result)
            verdict = "ok" if result.correct else f"MISS (expected {item.route})"
            log(f"[{n}/{len(items)}] {result.route} {verdict}: {item.message!r}")
        async with services.engine.connect() as conn:
            database = (await conn.execute(sql("SELECT current_database()"))).scalar()
    return RoutingReport(
        dataset=dataset,
        database=str(database),
        classes=class_figures(results),
        results=results,
        documents=documents,
        seconds=round(time.perf_counter() - began, 2),
    )


def _drop_database(settings, database: str) -> None:
    """Remove the throw-away eval database (on the embedded or configured server)."""
    import psycopg
    from psycopg import sql

    from agent.db.server import server_url, with_database

    admin = with_database(server_url(settings), "postgres").libpq
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database))
        )


async def run_routing_eval(
    dataset: Path = ROUTING_SET,
    *,
    limit: int | None = None,
    classes: list[str] | None = None,
    database: str | None = None,
    keep_database: bool = False,
    log: Log = quiet,
) -> RoutingReport:
    """``quire eval routing``: the set (or its ``classes``) in a throw-away database, with no
    web key whatever the environment says. The fresh database is dropped afterwards unless
    ``keep_database``; one named by ``database`` is kept (it may be reused)."""
    from agent.config import Settings
    from bench.common import database_settings, opened_services

    items = load_routing_set(dataset, limit)
    if classes:
        items = [i for i in items if i.cls in classes]
    if not items:
        raise ValueError("no messages to evaluate")
    name = database or f"{EVAL_DATABASE}_{uuid.uuid4().hex[:8]}"
    base = await asyncio.to_thread(Settings)
    settings = database_settings(name, base).model_copy(update={"serpapi_api_key": None})
    try:
        async with opened_services(settings) as services:
            return await evaluate_routing(services, items, dataset=str(dataset), log=log)
    finally:
        if not keep_database and database is None:
            await asyncio.to_thread(_drop_database, settings, name)
