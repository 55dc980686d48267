"""The chat graph's model calls: the model the run asks for (``Context.chat_model``) or the
default, and answers streamed with the chat's persona and their tokens counted.

Tokens streamed here reach LangGraph's ``messages`` stream under the calling node's name
(see :mod:`graphs.streaming`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, SystemMessage
from langgraph.runtime import Runtime

from agent.chat.answering import with_persona
from agent.config import Settings
from agent.model_server.client import LocalServerChat
from agent.model_server.client import continue_reply as written_on
from agent.model_server.endpoint import ModelUnavailable
from agent.models import achat_model, model_label
from agent.services import get_services
from graphs.context import Context

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reply:
    """A streamed answer, the tokens it took, and the model's label for ``model_used``."""

    text: str
    tokens: int
    model: str


def model_spec(runtime: Runtime[Context], default: str) -> str:
    """The run's ``chat_model`` when it names one, else ``default``."""
    ctx = runtime.context
    return (ctx.chat_model if ctx and ctx.chat_model else None) or default


async def load_model(
    runtime: Runtime[Context],
    settings: Settings,
    temperature: float,
    default: str | None = None,
    *,
    background: bool = False,
) -> tuple[BaseChatModel, str]:
    """The run's chat model at ``temperature`` (``default``: the configured chat model) and
    its spec; ``background``: for work after the answer, which yields to answers."""
    spec = model_spec(runtime, default or settings.chat_model)
    return await achat_model(spec, settings, temperature, background=background), spec


def _personalised(messages: list[BaseMessage], persona: str | None) -> list[BaseMessage]:
    """``messages`` with the chat's persona added to the system message."""
    if not persona or not messages or not isinstance(messages[0], SystemMessage):
        return messages
    return [SystemMessage(with_persona(str(messages[0].content), persona)), *messages[1:]]


async def stream_reply(
    runtime: Runtime[Context],
    state: Mapping[str, Any],
    messages: list[BaseMessage],
    temperature: float,
    *,
    default: str | None = None,
) -> Reply:
    """Answer ``messages`` (with the chat's persona from ``state``) on the run's model
    (``default``: the configured chat model), streaming the tokens, and count them."""
    settings = (await get_services()).settings
    model, spec = await load_model(runtime, settings, temperature, default)
    text, tokens = "", 0
    async for chunk in model.astream(_personalised(messages, state.get("persona"))):
        text += chunk.content if isinstance(chunk.content, str) else ""
        if chunk.usage_metadata:
            tokens += chunk.usage_metadata.get("total_tokens", 0)
    return Reply(text.strip(), tokens, model_label(spec))


async def continue_reply(
    runtime: Runtime[Context],
    state: Mapping[str, Any],
    messages: list[BaseMessage],
    prefix: str,
    temperature: float,
    default: str | None = None,
) -> Reply | None:
    """What the run's model writes on after ``prefix`` as its reply to ``messages`` (with
    the chat's persona), not streamed; ``None`` for a model that cannot be given the start
    of its reply (hosted chat APIs: only the local model process can), or when the call
    fails: the turn already has its answer (a model process of an older Quire, without the
    route, answers 404)."""
    settings = (await get_services()).settings
    model, spec = await load_model(runtime, settings, temperature, default)
    if not isinstance(model, LocalServerChat):
        return None
    personalised = _personalised(messages, state.get("persona"))
    try:
        text, tokens = await written_on(model, personalised, prefix, temperature=temperature)
    except (httpx.HTTPError, ModelUnavailable):
        log.warning("the model could not write on from the answer's words", exc_info=True)
        return None
    return Reply(text, tokens, model_label(spec))
