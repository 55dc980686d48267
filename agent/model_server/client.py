"""The app's side of the local model: an OpenAI-compatible chat client and the rerank call.

:class:`LocalServerChat` is LangChain's ``ChatOpenAI`` pointed at the model process, so the
local model is reached exactly like a hosted OpenAI-compatible one. It adds one thing: a
call that cannot reach the process, or loses it mid-stream, raises
:class:`~agent.model_server.endpoint.ModelUnavailable` (the API answers 503
``model_unavailable``) and makes the next call look for the server again. A client made for
background work (``background=True``: summaries) sends its calls at background priority:
the model process stops such a call when an answer arrives (:mod:`agent.model_server.
priority`), and the client sends it again after a pause, until its timeout has passed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import httpx
import openai
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.messages import BaseMessage, convert_to_openai_messages
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_openai import ChatOpenAI

from agent.model_server import CONTINUE_PATH, LIKELIHOOD_PATH
from agent.model_server.endpoint import ModelUnavailable, forget
from agent.model_server.priority import BACKGROUND, PRIORITY_HEADER, pauses_until

UNAVAILABLE = (
    "The local model stopped while answering; it is being restarted. Your question was "
    "saved: ask again in a moment."
)

# what a dead or restarting model process looks like from here (a timeout is not one)
_LOST = (openai.APIConnectionError, openai.InternalServerError, httpx.TransportError)


def _lost(exc: BaseException) -> bool:
    return isinstance(exc, _LOST) and not isinstance(
        exc, openai.APITimeoutError | httpx.TimeoutException
    )


def _yielded(exc: BaseException) -> bool:
    # the model process answers 429 for nothing else (it has no rate limit)
    return isinstance(exc, openai.RateLimitError)


class LocalServerChat(ChatOpenAI):
    """``ChatOpenAI`` on Quire's local model process (see the module docstring)."""

    server_url: str
    """The server's root URL (the OpenAI API is under ``/v1``)."""
    background: bool = False
    """Background priority: calls yield to answers and are sent again (module docs)."""

    def _get_request_payload(self, input_: Any, *, stop: list[str] | None = None, **kwargs: Any):
        """OpenAI's payload with the reply limit named as llama-cpp-python's server reads it:
        langchain-openai sends ``max_completion_tokens``, which that server ignores, so
        ``max_tokens`` never applied and a looping reply ran to the context's end."""
        payload = super()._get_request_payload(input_, stop=stop, **kwargs)
        if "max_completion_tokens" in payload:
            payload["max_tokens"] = payload.pop("max_completion_tokens")
        return payload

    def _unavailable(self, exc: BaseException) -> ModelUnavailable:
        forget(self.server_url)
        return ModelUnavailable(UNAVAILABLE)

    def _pauses(self) -> Iterator[float]:
        """The pauses before a yielded call is sent again, within the request timeout."""
        timeout = self.request_timeout
        return pauses_until(
            time.monotonic() + (timeout if isinstance(timeout, int | float) else 600.0)
        )

    def _pause_or_raise(self, exc: Exception, pauses: Iterator[float]) -> float:
        """The pause before a call that raised ``exc`` is sent again (a yielded background
        call with time left); otherwise raises: :class:`ModelUnavailable` for a lost
        server, else ``exc`` itself."""
        if _lost(exc):
            raise self._unavailable(exc) from exc
        pause = next(pauses, None) if self.background and _yielded(exc) else None
        if pause is None:
            raise exc
        return pause

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        pauses = self._pauses()
        while True:
            try:
                return super()._generate(messages, stop, run_manager, **kwargs)
            except Exception as exc:
                pause = self._pause_or_raise(exc, pauses)
            time.sleep(pause)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        pauses = self._pauses()
        while True:
            try:
                return await super()._agenerate(messages, stop, run_manager, **kwargs)
            except Exception as exc:
                pause = self._pause_or_raise(exc, pauses)
            await asyncio.sleep(pause)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        try:
            yield from super()._stream(messages, stop, run_manager, **kwargs)
        except Exception as exc:
            if _lost(exc):
                raise self._unavailable(exc) from exc
            raise

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        try:
            async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
                yield chunk
        except Exception as exc:
            if _lost(exc):
                raise self._unavailable(exc) from exc
            raise


def local_chat_client(
    url: str,
    *,
    label: str,
    temperature: float,
    max_tokens: int,
    seed: int,
    timeout: float,
    background: bool = False,
) -> LocalServerChat:
    """The chat client for the local model server at ``url`` (``background``: for work
    nobody waits to read, which yields the model to answers)."""
    return LocalServerChat(
        server_url=url,
        background=background,
        default_headers={PRIORITY_HEADER: BACKGROUND} if background else None,
        # a background call is never streamed: only whole calls can yield and be sent again
        disable_streaming=background,
        base_url=f"{url}/v1",
        api_key="local",
        model=label,
        temperature=temperature,
        max_tokens=max_tokens,
        seed=None if seed == -1 else seed,
        timeout=timeout,
        # requests queue in the model process: waiting behind other turns is not a stall, so
        # the first chunk may take as long as the request may (langchain-openai's own 120 s
        # chunk timeout cut off queued turns on a busy machine)
        stream_chunk_timeout=timeout,
        max_retries=0,  # a lost stream cannot be resumed: the turn reports it instead
        stream_usage=True,
    )


async def likelihood_scores(
    model: LocalServerChat,
    question: str,
    passages: Sequence[str],
    passage_chars: int,
    *,
    reuse: bool = True,
) -> list[float]:
    """Query-likelihood relevance 0..1 of each passage, computed in the model process
    (:func:`agent.model_server.scoring.likelihood_scores_sync`; ``reuse``: start from what
    the KV cache holds). Cancelling the call disconnects, which stops the scoring between
    passages."""
    if not passages:
        return []
    body = {
        "question": question,
        "passages": list(passages),
        "passage_chars": passage_chars,
        "reuse": reuse,
    }
    reply = await _post(model, LIKELIHOOD_PATH, body)
    return [float(s) for s in reply.json()["scores"]]


async def continue_reply(
    model: LocalServerChat,
    messages: Sequence[BaseMessage],
    prefix: str,
    *,
    max_tokens: int = 64,
    temperature: float = 0.0,
) -> tuple[str, int]:
    """What the model writes on after ``prefix`` as its reply to ``messages`` (up to the end
    of the line), and the tokens that took (:mod:`agent.model_server.continuation`)."""
    body = {
        "messages": convert_to_openai_messages(list(messages)),
        "prefix": prefix,
        "max_tokens": max_tokens,
        "temperature": temperature,
    }
    reply = (await _post(model, CONTINUE_PATH, body)).json()
    return str(reply["text"]), int((reply.get("usage") or {}).get("total_tokens") or 0)


async def _post(model: LocalServerChat, path: str, body: dict) -> httpx.Response:
    """POST ``body`` to one of Quire's routes of the model process; a lost process (or
    its 5xx) raises :class:`ModelUnavailable`, a timeout stays a timeout."""
    try:
        async with httpx.AsyncClient(timeout=model.request_timeout) as client:
            reply = await client.post(f"{model.server_url}{path}", json=body)
            reply.raise_for_status()
    except httpx.HTTPStatusError as exc:
        if exc.response.status_code >= 500:
            raise model._unavailable(exc) from exc
        raise
    except httpx.TransportError as exc:
        if isinstance(exc, httpx.TimeoutException):
            raise
        raise model._unavailable(exc) from exc
    return reply
