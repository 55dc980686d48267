"""``quire eval contexts``: whether the passages a chat turn would show the model hold the
answer, and where the first candidate holding it ranks; no chat model is called."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Column, Table

from api.cli.common import JsonOption, fail, out, progress_log, run_or_exit
from api.cli.eval import (
    AnswerSetOption,
    EvalDatabaseOption,
    EvalUserOption,
    _settings_overrides,
)


def _contexts_table(report: Any) -> Table:
    """The counts: in context, and answers within each rank band."""
    from bench.eval_contexts import RANK_BANDS

    table = Table(Column("questions", no_wrap=True), "in context", "mean chars")
    for band in RANK_BANDS:
        table.add_column(f"rank <= {band}")
    table.add_column(f"none in {report.depth}")
    n = len(report.checks)
    table.add_row(
        str(n),
        f"{report.in_context}/{n}",
        f"{report.mean_chars():.0f}",
        *(f"{report.within(b)}/{n}" for b in RANK_BANDS),
        str(report.not_ranked),
    )
    return table


def eval_contexts(
    dataset: AnswerSetOption,
    model: Annotated[
        str, typer.Option(help="Chat model whose budgets and passage count apply (not called).")
    ] = "local",
    depth: Annotated[
        int, typer.Option(min=1, help="Fused candidates searched for the answer's rank.")
    ] = 20,
    limit: Annotated[int | None, typer.Option(help="Only the first N questions.")] = None,
    database: EvalDatabaseOption = "quire_eval_answers",
    user: EvalUserOption = "answers-eval",
    overrides: Annotated[
        list[str] | None,
        typer.Option(
            "--set", help="Settings override KEY=VALUE (repeatable): --set local_top_k=3."
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Answer in the model's context, and the answer's rank among the fused candidates, for
    every answerable question on a retrieval path: a retrieval lever measured in seconds."""
    from bench.eval_contexts import run_contexts_eval

    if not dataset.is_file():
        raise fail(f"{dataset} is not a file", 2)
    extra = _settings_overrides(overrides)

    log = progress_log(as_json)

    report = run_or_exit(
        run_contexts_eval(
            dataset,
            model=model,
            depth=depth,
            limit=limit,
            database=database,
            user=user,
            overrides=extra,
            log=log,
        ),
        FileNotFoundError,
        ValueError,
    )
    if as_json:
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
        return
    out.print(_contexts_table(report))
    for check in report.checks:
        if not check.in_context:
            out.print(f"not in context (rank {check.rank}): {escape(check.question)}")
