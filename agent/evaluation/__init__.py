"""Retrieval quality evaluation on public test sets (``quire eval ...``)."""
