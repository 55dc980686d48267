"""Retrieval latency benchmark: ``python bench/retrieval.py [--queries N] [--chunks N] [--rebuild]``."""

import sys

from api.cli import app

if __name__ == "__main__":
    app(["bench", "retrieval", *sys.argv[1:]])
