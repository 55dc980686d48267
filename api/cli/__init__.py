"""The ``quire`` command line: users, ingestion, questions, interactive chat, servers.

One module per command group; this package assembles them into ``app`` (the ``quire``
console script) in the order ``quire --help`` lists them. Heavy modules are imported inside
the commands, so ``quire --help`` stays fast.
"""

from __future__ import annotations

import typer

from api.cli.ask import ask, chat
from api.cli.bench import bench_app
from api.cli.docs import docs_app, summarize
from api.cli.eval import eval_app
from api.cli.eval_contexts import eval_contexts
from api.cli.eval_routing import eval_routing
from api.cli.ingest import ingest
from api.cli.serve import init, serve
from api.cli.users import users_app

__all__ = ["app"]

app = typer.Typer(
    help="Quire: chat with your documents and books.",
    no_args_is_help=True,
    # docstrings are wrapped at 100 columns: markdown joins their lines into paragraphs
    rich_markup_mode="markdown",
)
app.add_typer(users_app, name="users")
app.command()(init)
app.command()(ingest)
app.add_typer(docs_app, name="docs")
app.command()(summarize)
app.command()(ask)
app.command()(chat)
app.add_typer(bench_app, name="bench")
eval_app.command("routing")(eval_routing)
eval_app.command("contexts")(eval_contexts)
app.add_typer(eval_app, name="eval")
app.command()(serve)
