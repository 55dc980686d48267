"""``quire eval routing``: how often a labelled message takes the route a reader expects,
per class (traps included), through the chat graph with the default setup."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Column, Table

from api.cli.common import JsonOption, fail, out, progress_log, run_or_exit


def _routing_table(report: Any) -> Table:
    """One row per class, then ``all``."""
    table = Table(Column("class", no_wrap=True), "messages", "route", "route + mode", "accuracy")
    for row in report.classes:
        table.add_row(
            row.cls,
            str(row.messages),
            f"{row.routes_correct}/{row.messages}",
            f"{row.correct}/{row.messages}",
            f"{100 * row.accuracy:.1f}%",
        )
    return table


def eval_routing(
    dataset: Annotated[
        Path | None,
        typer.Option(help="JSONL: message, class, books, route, mode (default: the test set)."),
    ] = None,
    only: Annotated[
        list[str] | None,
        typer.Option("--class", help="Only this class (repeatable): --class trap."),
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N messages.")] = None,
    database: Annotated[
        str | None,
        typer.Option(help="Database to use and keep (default: a fresh one, dropped after)."),
    ] = None,
    keep_database: Annotated[
        bool, typer.Option("--keep-database", help="Keep the fresh eval database.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Routing accuracy per class and overall: every message through the chat graph with the
    extractive model and no web key, its books uploaded to a throw-away database."""
    from bench.eval_routing import ROUTING_SET, run_routing_eval

    path = dataset or ROUTING_SET
    if not path.is_file():
        raise fail(f"{path} is not a file", 2)

    log = progress_log(as_json)

    report = run_or_exit(
        run_routing_eval(
            path,
            limit=limit,
            classes=only,
            database=database,
            keep_database=keep_database,
            log=log,
        ),
        FileNotFoundError,
        ValueError,
    )
    if as_json:
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
        return
    out.print(_routing_table(report))
    for miss in report.misses:
        line = (
            f"{miss.cls}: {miss.message!r} -> {miss.route} ({miss.mode}), expected "
            f"{miss.expected} ({miss.expected_mode}); why: {miss.reason}"
        )
        out.print(f"[yellow]miss[/yellow] {escape(line)}", highlight=False)
    out.print(
        f"{report.row('all').correct}/{report.row('all').messages} messages routed as expected "
        f"in {report.seconds:.0f} s (database {report.database})"
    )
