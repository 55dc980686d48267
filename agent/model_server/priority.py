"""Answers before background work, in the model process.

The model runs one request at a time. Work nobody is waiting to read (a chat's running
summary after each turn, a book's summaries, warming the prompt cache) is sent with the
header ``X-Quire-Priority: background``. While such a call holds the model and an answer's
request arrives, llama.cpp's abort callback stops the call at its next graph node (a few
milliseconds, even in the middle of reading a long prompt) and the server answers it
``429 yielded``; the client sends it again later (:class:`~agent.model_server.client.
LocalServerChat`). So a follow-up asked while the chat's summary is being written starts at
once instead of waiting seconds behind it.

A background call whose client has left (a summary rewrite overtaken by a newer turn's,
a ``quire ask`` that exited) stops the same way: llama.cpp does not notice a closed
connection before the reply is written, and would hold the model for seconds for nobody.

The abort callback is set only for the length of a background call: answers run without
it (each check takes the GIL, once per graph node).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
import time
from collections.abc import Iterator
from typing import Any

PRIORITY_HEADER = "x-quire-priority"
BACKGROUND = "background"
YIELDED_STATUS = 429
YIELDED = "yielded to an answer"
FIRST_PAUSE_S, LONGEST_PAUSE_S = 0.5, 4.0

_background_call: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "quire_background_call", default=False
)
_client_left: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar(
    "quire_client_left", default=None
)
"""Set, for a background call, once its client has disconnected."""


class Answers:
    """How many answer requests the process has in flight (queued or running)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0

    def started(self) -> None:
        """An answer's request arrived."""
        with self._lock:
            self._count += 1

    def ended(self) -> None:
        """An answer's request was answered (or its client left)."""
        with self._lock:
            self._count -= 1

    @property
    def waiting(self) -> bool:
        """Whether any answer's request is in flight."""
        return self._count > 0


class PriorityMiddleware:
    """ASGI middleware: marks a background request's call (a context variable the model
    call reads in its worker thread) and counts every other POST as an answer in flight."""

    def __init__(self, app: Any, answers: Answers) -> None:
        self.app = app
        self.answers = answers

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        """Handle one ASGI connection (see the class docs)."""
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        if headers.get(PRIORITY_HEADER.encode()) == BACKGROUND.encode():
            await self._background(scope, receive, send)
            return
        self.answers.started()
        try:
            await self.app(scope, receive, send)
        finally:
            self.answers.ended()

    async def _background(self, scope: dict, receive: Any, send: Any) -> None:
        """A background call: marked, and watched for its client leaving once its body is
        read (the app reads nothing more of a call that is not streamed)."""
        left = threading.Event()
        watcher: asyncio.Task | None = None

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            left.set()

        async def body() -> dict:
            nonlocal watcher
            message = await receive()
            if message["type"] == "http.disconnect":
                left.set()
            elif not message.get("more_body") and watcher is None:
                watcher = asyncio.create_task(watch())
            return message

        tokens = _background_call.set(True), _client_left.set(left)
        try:
            await self.app(scope, body, send)
        finally:
            _background_call.reset(tokens[0])
            _client_left.reset(tokens[1])
            if watcher is not None:
                watcher.cancel()


def pauses_until(deadline: float) -> Iterator[float]:
    """The pauses before a yielded background call is sent again (0.5 s, doubling up to
    4 s), while they end before ``deadline`` (``time.monotonic``)."""
    pause = FIRST_PAUSE_S
    while time.monotonic() + pause <= deadline:
        yield pause
        pause = min(2 * pause, LONGEST_PAUSE_S)


ANSWERS = Answers()
"""The process's answers in flight (one model process, one count)."""


def yielding(create_chat_completion, answers: Answers = ANSWERS):
    """``Llama.create_chat_completion`` whose background calls (not streamed) stop when an
    answer is waiting, raising an HTTP 429 ``yielded`` for the client to try again, or when
    their client has left."""
    from fastapi import HTTPException

    @functools.wraps(create_chat_completion)
    def wrapper(self, *args: Any, **kwargs: Any):
        if not _background_call.get() or kwargs.get("stream"):
            return create_chat_completion(self, *args, **kwargs)
        left = _client_left.get() or threading.Event()
        if answers.waiting or left.is_set():  # do not even start: it would be stopped at once
            raise HTTPException(YIELDED_STATUS, YIELDED)
        import llama_cpp

        @llama_cpp.ggml_abort_callback
        def abort(_data) -> bool:
            return answers.waiting or left.is_set()

        ctx = self._ctx.ctx
        llama_cpp.llama_set_abort_callback(ctx, abort, None)
        try:
            return create_chat_completion(self, *args, **kwargs)
        except RuntimeError as exc:
            # "llama_decode returned 2": aborted. The tokens read so far are not counted, and
            # the next call's eval clears the KV cells past them first
            if str(exc).endswith("returned 2"):
                raise HTTPException(YIELDED_STATUS, YIELDED) from exc
            raise
        finally:
            llama_cpp.llama_set_abort_callback(ctx, llama_cpp.ggml_abort_callback(), None)

    return wrapper
