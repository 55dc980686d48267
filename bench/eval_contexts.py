"""Whether the passages a chat turn would show the model hold the answer (``quire eval
contexts``): the retrieval half of ``quire eval answers``, with no chat model called.

For each answerable question of a data set (the JSONL of :mod:`bench.eval_answers_data`)
on a retrieval path (no ``expected_route``, or ``hybrid``), the turn's context is built as
a fresh question's is (:func:`agent.chat.retrieval_step.retrieve_context`, with the
budgets, passage count and focus of the ``model`` named), and two things are read:

* **in context**: an acceptable answer occurs in the context text the model would read;
* **rank**: the place, among the first ``depth`` fused candidates of the same search, of
  the first whose parent passage holds an acceptable answer (``None``: none does). A
  question out of context with a rank of 3 is the ranking's or the focus's miss; one with
  no rank is the candidates'.

A lever on retrieval or focus (a setting, a change to ``agent/retrieval/``) is measured here
in seconds on a whole set before the model is asked anything; ``--set KEY=VALUE`` runs it
under other settings. The documents are ingested as ``quire eval answers`` does, in the
same database and for the same user, so both read the same chunks.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from langchain_core.language_models import BaseChatModel

from agent.db.scope import SearchScope
from agent.services import Services
from bench.eval_answers import (
    EVAL_DATABASE,
    EVAL_USER,
    ingest_documents,
    question_documents,
    set_documents,
)
from bench.eval_answers_data import Item, load_dataset
from bench.eval_answers_scoring import contains_match
from bench.progress import Log, quiet

RANK_BANDS = (1, 2, 3, 5, 10)
"""The rank bands the report counts (answer among the first N candidates)."""


@dataclass
class ContextCheck:
    """One question's context, as the model would read it."""

    question: str
    in_context: bool
    rank: int | None
    """1-based place of the first candidate whose parent holds an answer (``None``: none)."""
    context_chars: int
    passages: int


@dataclass
class ContextsReport:
    """Every checked question, and the counts over them."""

    dataset: str
    model: str
    depth: int
    checks: list[ContextCheck] = field(default_factory=list)
    skipped: int = 0
    """Questions not checked: unanswerable, or on a path that reads no passages."""

    @property
    def in_context(self) -> int:
        """Questions whose context holds an answer."""
        return sum(c.in_context for c in self.checks)

    @property
    def not_ranked(self) -> int:
        """Questions with no candidate holding an answer within the depth searched."""
        return sum(c.rank is None for c in self.checks)

    def within(self, band: int) -> int:
        """Questions with an answer among the first ``band`` candidates."""
        return sum(c.rank is not None and c.rank <= band for c in self.checks)

    def mean_chars(self) -> float:
        """Mean characters of context a question."""
        return sum(c.context_chars for c in self.checks) / len(self.checks) if self.checks else 0.0

    def as_dict(self) -> dict:
        """The report as JSON-ready data, with the counts."""
        return {
            "dataset": self.dataset,
            "model": self.model,
            "depth": self.depth,
            "checked": len(self.checks),
            "skipped": self.skipped,
            "in_context": self.in_context,
            "rank_within": {str(b): self.within(b) for b in RANK_BANDS},
            "not_ranked": self.not_ranked,
            "mean_context_chars": round(self.mean_chars(), 1),
            "questions": [asdict(c) for c in self.checks],
        }


def checked(item: Item) -> bool:
    """Whether the question is one this check reads: answerable, on a retrieval path."""
    return not item.unanswerable and item.expected_route in (None, "hybrid")


async def check_context(
    services: Services,
    item: Item,
    scope: SearchScope,
    *,
    model: str,
    depth: int,
    stand_in: BaseChatModel,
) -> ContextCheck:
    """The context a fresh question of ``item`` gets under ``scope`` for ``model``, and the
    rank of its first candidate holding an answer (see the module docs). ``stand_in`` is the
    chat model the search is handed; ``model`` only names the budgets, and is not called."""
    from agent.chat.retrieval_step import retrieve_context, search_options
    from agent.retrieval.search import search

    settings = services.settings
    state = {
        "route": "hybrid",
        "question": item.question,
        "chat_id": str(uuid.uuid4()),
        "memory": {},
        "search_mode": "specific",
    }
    turn = await retrieve_context(services, state, model=stand_in, spec=model, scope=scope)
    context = turn["context"] if turn["relevant"] else ""
    options = replace(search_options(settings, model, "specific", None), k=depth)
    found = await search(services, scope, turn["search_query"], options)
    rank = next(
        (
            n
            for n, chunk in enumerate(found.chunks, start=1)
            if contains_match(chunk.record.parent_text or chunk.record.text, item.answers)
        ),
        None,
    )
    return ContextCheck(
        question=item.question,
        in_context=contains_match(context, item.answers),
        rank=rank,
        context_chars=len(context),
        passages=len(turn["retrieved"]) if turn["relevant"] else 0,
    )


async def check_contexts(
    services: Services,
    items: list[Item],
    *,
    dataset: str = "",
    model: str = "local",
    user: str = EVAL_USER,
    depth: int = 20,
    log: Log = quiet,
) -> ContextsReport:
    """Ingest the set's documents for ``user`` and check each question's context."""
    from agent.library.accounts import resolve_user
    from agent.models import achat_model

    ids, _ = await ingest_documents(services, user, set_documents(items), log)
    owner = await resolve_user(services, user)
    # the spec sets the budgets; no model is asked (the local one does not rewrite questions)
    stand_in = await achat_model("extractive", services.settings, 0.0)
    report = ContextsReport(dataset=dataset, model=model, depth=depth)
    for n, item in enumerate(items, start=1):
        if not checked(item):
            report.skipped += 1
            continue
        scope = SearchScope(
            user_id=owner.id, document_ids=tuple(question_documents(item, ids)) or None
        )
        check = await check_context(
            services, item, scope, model=model, depth=depth, stand_in=stand_in
        )
        report.checks.append(check)
        mark = "in context" if check.in_context else "not in context"
        log(f"[{n}/{len(items)}] {mark}, rank {check.rank}: {item.question!r}")
    return report


async def run_contexts_eval(
    dataset: Path,
    *,
    model: str = "local",
    depth: int = 20,
    limit: int | None = None,
    database: str = EVAL_DATABASE,
    user: str = EVAL_USER,
    overrides: dict[str, str] | None = None,
    log: Log = quiet,
) -> ContextsReport:
    """``quire eval contexts``: the check in the answers eval's own database, under the
    settings with ``overrides`` (``KEY=VALUE`` strings, as the environment would give)."""
    from agent.config import Settings
    from bench.common import opened_services

    items = load_dataset(dataset, limit)
    settings = await asyncio.to_thread(Settings, database_name=database, **(overrides or {}))
    async with opened_services(settings) as services:
        return await check_contexts(
            services, items, dataset=str(dataset), model=model, user=user, depth=depth, log=log
        )
