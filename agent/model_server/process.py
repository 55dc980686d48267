"""The local model process: llama-cpp-python's OpenAI-compatible server plus two routes.

Run as ``python -m agent.model_server.process --model FILE --port P`` by the supervisor
(:mod:`agent.model_server.supervisor`), never imported by the app. It serves:

* ``/v1/chat/completions`` and the rest of llama-cpp-python's OpenAI API, with one change:
  a streamed completion ends with a ``usage`` chunk (``stream_options.include_usage`` in
  OpenAI's API), so streamed turns still count their tokens;
* ``GET /quire/health``: answers without waiting for a generation in progress (llama-cpp's
  own routes queue behind the model's lock), with the build's CPU features;
* ``POST /quire/likelihood``: query-likelihood rerank scores
  (:mod:`agent.model_server.scoring`), which need the model's logits at every position;
* ``POST /quire/continue``: a reply written on from given words
  (:mod:`agent.model_server.continuation`), which OpenAI's chat API cannot ask for.

Requests queue for the model one at a time (``interrupt_requests=False``: a new request
never cuts off the one streaming), and a client that disconnects stops its generation.
Background work (a chat's summary, a book's summaries, warming) yields the model to any
answer that arrives while it runs (:mod:`agent.model_server.priority`).
The KV cache stays in this process between requests, so a follow-up sharing a prompt prefix
only reads its new tokens.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import functools
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from agent.model_server import CONTINUE_PATH, HEALTH_PATH, LIKELIHOOD_PATH

# at module level: FastAPI reads the route's body type from this module's names
from agent.model_server.continuation import ContinueRequest, continue_reply_sync


class LikelihoodRequest(BaseModel):
    """Passages to score against one question."""

    question: str
    passages: list[str] = Field(max_length=200)
    passage_chars: int = Field(default=500, ge=1)
    reuse: bool = True
    """Start from the prompt prefix the KV cache already holds."""


UNSET_REPLY_TOKENS = 1024
"""The reply limit of a request that sets none. llama.cpp's is the context's end: a reply
caught in a loop (the 1.5B model repeating a passage) held the one model process for three
minutes (4,095 tokens), every other question waiting behind it."""


def _with_stream_usage(create_chat_completion):
    """``Llama.create_chat_completion`` whose streams end with a ``usage`` chunk, and whose
    replies stop at ``UNSET_REPLY_TOKENS`` when the request set no limit."""

    @functools.wraps(create_chat_completion)
    def wrapper(self, *args: Any, **kwargs: Any):
        import llama_cpp

        if (kwargs.get("max_tokens") or 0) <= 0:
            kwargs["max_tokens"] = UNSET_REPLY_TOKENS
        # llama.cpp's counters then tell the prompt tokens this request read (the rest came
        # from the KV cache or the prompt cache)
        llama_cpp.llama_perf_context_reset(self._ctx.ctx)
        result = create_chat_completion(self, *args, **kwargs)
        if not kwargs.get("stream"):
            return result
        return _counted(self, result)

    return wrapper


def _prompt_tokens_read(llama) -> int:
    import llama_cpp

    return int(llama_cpp.llama_perf_context(llama._ctx.ctx).n_p_eval)


def _counted(llama, chunks: Iterator[dict]) -> Iterator[dict]:
    written, last = 0, None
    for chunk in chunks:
        last = chunk
        if any((c.get("delta") or {}).get("content") for c in chunk.get("choices", [])):
            written += 1  # llama-cpp streams one token a chunk
        yield chunk
    if last is None:
        return
    # the context after the turn holds the prompt and the reply
    read = max(int(llama.n_tokens) - written, 0)
    cached = max(read - _prompt_tokens_read(llama), 0)
    yield {
        "id": last.get("id"),
        "object": "chat.completion.chunk",
        "created": last.get("created", int(time.time())),
        "model": last.get("model"),
        "choices": [],
        "usage": {
            "prompt_tokens": read,
            "completion_tokens": written,
            "total_tokens": read + written,
            # OpenAI's field: langchain-openai reports it as input_token_details.cache_read
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def build_app(
    model: str,
    alias: str,
    *,
    n_ctx: int,
    n_threads: int,
    n_batch: int,
    host: str,
    port: int,
    prompt_cache_mb: int = 0,
):
    """llama-cpp-python's server app for ``model`` with Quire's routes added (loads it).

    ``prompt_cache_mb`` > 0 keeps the KV state of recent prompts (and their replies) in
    memory: a request continues from the longest cached prefix, even after other prompts
    (a chat summary, another chat) ran in between."""
    import llama_cpp
    from llama_cpp.server.app import create_app, get_llama_proxy
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    from agent.model_server.priority import ANSWERS, PriorityMiddleware, yielding
    from agent.model_server.prompt_cache import use_lean_states
    from agent.model_server.scoring import likelihood_scores_sync

    if not getattr(llama_cpp.Llama.create_chat_completion, "__wrapped__", None):
        llama_cpp.Llama.create_chat_completion = yielding(
            _with_stream_usage(llama_cpp.Llama.create_chat_completion)
        )
    use_lean_states()
    model_settings = ModelSettings(
        model=model,
        model_alias=alias,
        n_ctx=n_ctx,
        n_threads=n_threads,
        n_threads_batch=n_threads,
        n_batch=n_batch,
        # the server's default (True) keeps logits for every prompt token: 2.5 GB at 4,096
        # tokens and slower prompt reading; rerank asks for the positions it needs itself
        logits_all=False,
        cache=prompt_cache_mb > 0,
        cache_type="ram",
        cache_size=max(prompt_cache_mb, 1) << 20,
        verbose=False,
    )
    server_settings = ServerSettings(host=host, port=port, interrupt_requests=False)
    app = create_app(server_settings=server_settings, model_settings=[model_settings])
    if prompt_cache_mb > 0:
        _keep_openings(app, model, alias, n_ctx, prompt_cache_mb << 20)
    router = APIRouter()
    system_info = llama_cpp.llama_print_system_info().decode(errors="replace").strip()

    @router.get(HEALTH_PATH)
    async def health() -> dict:
        return {"status": "ok", "pid": os.getpid(), "model": alias, "system_info": system_info}

    @router.post(LIKELIHOOD_PATH)
    async def likelihood(body: LikelihoodRequest, request: Request) -> dict:
        cancel = threading.Event()

        async def watch() -> None:  # an abandoned search stops between passages
            while not await request.is_disconnected():
                await asyncio.sleep(0.1)
            cancel.set()

        async with contextlib.asynccontextmanager(get_llama_proxy)() as proxy:
            watcher = asyncio.create_task(watch())
            try:
                scores = await run_in_threadpool(
                    likelihood_scores_sync,
                    proxy(alias),
                    body.question,
                    body.passages,
                    body.passage_chars,
                    reuse=body.reuse,
                    cancel=cancel,
                )
            finally:
                watcher.cancel()
        return {"scores": scores}

    @router.post(CONTINUE_PATH)
    async def continue_reply(body: ContinueRequest) -> dict:
        async with contextlib.asynccontextmanager(get_llama_proxy)() as proxy:
            return await run_in_threadpool(continue_reply_sync, proxy(alias), body)

    app.include_router(router)
    app.add_middleware(PriorityMiddleware, answers=ANSWERS)
    return app


def _keep_openings(app: Any, model: str, alias: str, n_ctx: int, capacity_bytes: int) -> None:
    """Give the loaded model a prompt cache that starts with the fixed openings saved by
    an earlier process and saves those it warms (:mod:`agent.model_server.saved_openings`)."""
    from llama_cpp.server import app as server_app

    from agent.model_server.saved_openings import (
        KeepMiddleware,
        SavedOpenings,
        keeping_cache,
        state_identity,
    )

    saved = SavedOpenings(Path(model).parent / "prompt-states", state_identity(model, n_ctx))
    # create_app has loaded the one model; llama-cpp-python keeps it in this module global
    server_app._llama_proxy(alias).set_cache(keeping_cache(capacity_bytes, saved, n_ctx))
    app.add_middleware(KeepMiddleware)


def _die_with_parent() -> None:
    """End with the supervising thread that started this process (Linux), even when it is
    killed without a chance to stop us."""
    parent = int(os.environ.get("QUIRE_MODEL_PARENT_PID") or 0)
    if not parent or not sys.platform.startswith("linux"):
        return
    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(0)


def main(argv: list[str] | None = None) -> None:
    """Load the model and serve it until terminated."""
    import uvicorn

    _die_with_parent()

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="GGUF file")
    parser.add_argument("--alias", default="local")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--n-batch", type=int, default=512)
    parser.add_argument("--prompt-cache-mb", type=int, default=0)
    args = parser.parse_args(argv)
    app = build_app(
        args.model,
        args.alias,
        n_ctx=args.n_ctx,
        n_threads=args.n_threads,
        n_batch=args.n_batch,
        prompt_cache_mb=args.prompt_cache_mb,
        host=args.host,
        port=args.port,
    )
    # SIGTERM (the owner stopping or dying) must not wait for a generation or a queue of
    # them: uvicorn's default graceful shutdown waits for every request in flight
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=2,
    )


if __name__ == "__main__":
    main()
