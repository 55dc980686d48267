"""``python -m api.cli``: the ``quire`` command line."""

from api.cli import app

app()
