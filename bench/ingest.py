"""Ingestion benchmark: ``python bench/ingest.py [FILES...]`` (same as ``quire bench ingest``)."""

import sys

from api.cli import app

if __name__ == "__main__":
    app(["bench", "ingest", *sys.argv[1:]])
