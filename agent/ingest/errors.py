"""Stable error codes for every way a source can be refused (API bodies, graph output, CLI)."""

from __future__ import annotations

from agent.ingest.document import DocumentTooLarge, UnreadableDocument, UnsupportedDocument
from agent.ingest.fetch import FetchError, UnsafeURL
from agent.ingest.sources import InvalidSource

_CODES: list[tuple[type[Exception], str]] = [
    (UnsupportedDocument, "unsupported_type"),
    (DocumentTooLarge, "too_large"),  # before UnreadableDocument, its base
    (UnreadableDocument, "unreadable"),
    (UnsafeURL, "unsafe_url"),
    (FetchError, "fetch_failed"),
    (InvalidSource, "invalid_source"),
]

INGEST_ERRORS: tuple[type[Exception], ...] = tuple(cls for cls, _ in _CODES)
"""Exceptions that mean bad input, not a fault of Quire's."""


def ingest_error_code(exc: BaseException) -> str | None:
    """The error code for a known bad-input exception, ``None`` for anything else."""
    for cls, code in _CODES:
        if isinstance(exc, cls):
            return code
    return None
