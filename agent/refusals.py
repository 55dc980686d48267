"""The one exception the request-facing services raise for input they refuse.

Each carries a stable code; the HTTP layer maps codes to statuses (``not_found`` 404,
``too_large`` 413, ``unsupported_type`` 415, ...), other entry points show the message.
"""

from __future__ import annotations

from agent.ingest.errors import ingest_error_code


class Refused(ValueError):
    """A request refused with a stable ``code`` and a human ``message``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def refusal_for(exc: BaseException) -> Refused | None:
    """The :class:`Refused` for a known bad-input ingestion error, ``None`` for others."""
    if isinstance(exc, Refused):
        return exc
    code = ingest_error_code(exc)
    return Refused(code, str(exc)) if code else None
