"""One error shape for every API failure: ``{"error": {"code": ..., "message": ...}}``.

Stable, machine-readable codes; never a stack trace (unexpected errors are logged and
answered with a generic 500).
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

log = logging.getLogger(__name__)


class ApiError(HTTPException):
    """An HTTP error with a stable code, e.g. ``ApiError(404, "not_found", "No such chat")``."""

    def __init__(self, status: int, code: str, message: str, headers: dict | None = None):
        super().__init__(status_code=status, detail=message, headers=headers)
        self.code = code


_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_type",
    422: "invalid_request",
    429: "too_many_requests",
}


def error_body(code: str, message: str) -> dict:
    """The JSON body of an error response."""
    return {"error": {"code": code, "message": message}}


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error in the one shape, without internals."""

    @app.exception_handler(StarletteHTTPException)  # FastAPI's and Starlette's own (404s)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = getattr(exc, "code", None) or _CODES.get(exc.status_code, "error")
        message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
        return JSONResponse(
            error_body(code, message), status_code=exc.status_code, headers=exc.headers
        )

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()) if p != 'body') or 'body'}: {e.get('msg')}"
            for e in exc.errors()
        )
        return JSONResponse(error_body("invalid_request", problems[:500]), status_code=422)

    from agent.models import EmbedderUnavailable

    @app.exception_handler(EmbedderUnavailable)
    async def no_embedder(request: Request, exc: EmbedderUnavailable) -> JSONResponse:
        log.warning("embedder unavailable on %s: %s", request.url.path, exc.__cause__)
        return JSONResponse(error_body("embedder_unavailable", str(exc)), status_code=503)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse(error_body("internal", "Internal server error."), status_code=500)
