"""Chat and embedding model factories.

``QUIRE_CHAT_MODEL`` / ``QUIRE_REASONING_MODEL`` / ``QUIRE_EMBEDDING_MODEL`` take:

* ``local`` (default): the packaged offline models (see :mod:`agent.local_models`); the chat
  model runs in its own process (:mod:`agent.model_server`);
* ``extractive``: a deterministic, LLM-free answerer for plumbing tests and load runs;
* ``openai:<model>`` or any ``init_chat_model`` provider string; ``OPENAI_BASE_URL`` points
  the OpenAI client at vLLM, Ollama, a llama.cpp server or any compatible API.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

from agent.config import Settings
from agent.text import content_terms

log = logging.getLogger(__name__)

# Known output sizes of hosted embedding models (others are measured once with a probe).
_EMBEDDING_DIMS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class EmbedderUnavailable(RuntimeError):
    """The embedding model could not embed a text that needs vectors (a dense search, an ingest)."""


@dataclass(frozen=True)
class EmbeddingModel:
    """An embedder with the name and dimension recorded beside its vectors."""

    embedder: Embeddings
    name: str
    dimension: int


_cache: dict[tuple, Any] = {}
_cache_lock = threading.Lock()


def _cached(key: tuple, build):
    with _cache_lock:
        if key not in _cache:
            _cache[key] = build()
        return _cache[key]


def is_hosted(spec: str) -> bool:
    """Whether ``spec`` names a provider's model (``provider:model``), not a packaged one
    (``local``, the llama.cpp model; ``extractive``, the offline answerer)."""
    return spec not in ("local", "extractive")


def model_label(spec: str) -> str:
    """A short name for ``model_used``: the local model's name or the provider's model id."""
    if spec == "local":
        from agent.local_models import CHAT_LABEL

        return CHAT_LABEL
    return spec.split(":", 1)[-1]


def chat_model(
    spec: str, settings: Settings, temperature: float, *, background: bool = False
) -> BaseChatModel:
    """The chat model named by ``spec`` at ``temperature`` (instances are cached).

    ``local`` is the packaged model in its own supervised process (started on first use, see
    :mod:`agent.model_server`); when it cannot start, the extractive answerer stands in and
    every answer begins with a notice saying why. ``background``: for work nobody waits to
    read (summaries), whose local calls yield the model to answers (hosted models serve
    both at once, so it changes nothing there).
    """
    if spec == "local":
        return _local_chat_model(settings, temperature, background)

    def build() -> BaseChatModel:
        if spec == "extractive":
            return ExtractiveChatModel(assistant_name=settings.assistant_name)
        from langchain.chat_models import init_chat_model

        # a hung provider call ends as an error on every path (CLI, LangGraph server, API)
        extra = {"timeout": settings.chat_timeout_seconds} if spec.startswith("openai:") else {}
        return init_chat_model(spec, temperature=temperature, stream_usage=True, **extra)

    return _cached(("chat", spec, temperature, settings.chat_timeout_seconds), build)


def _local_chat_model(settings: Settings, temperature: float, background: bool) -> BaseChatModel:
    from agent.local_models import CHAT_LABEL
    from agent.model_server.client import local_chat_client
    from agent.model_server.endpoint import local_model

    found = local_model(settings)
    temperature = min(temperature, settings.local_chat_max_temperature)
    if found.url is None:
        notice = LOCAL_MODEL_NOTICE.format(reason=(found.failure or "").splitlines()[0])
        return _cached(
            ("chat", "fallback", notice),
            lambda: ExtractiveChatModel(assistant_name=settings.assistant_name, notice=notice),
        )
    return _cached(
        (
            "chat",
            "local",
            found.url,
            temperature,
            settings.local_chat_max_tokens,
            settings.local_chat_seed,
            settings.chat_timeout_seconds,
            background,
        ),
        lambda: local_chat_client(
            found.url,
            label=CHAT_LABEL,
            temperature=temperature,
            max_tokens=settings.local_chat_max_tokens,
            seed=settings.local_chat_seed,
            timeout=settings.chat_timeout_seconds,
            background=background,
        ),
    )


LOCAL_MODEL_NOTICE = (
    "Note: the local model is not available ({reason}), so this answer quotes your documents "
    "directly. Run `quire init` to see what failed."
)


async def achat_model(
    spec: str, settings: Settings, temperature: float, *, background: bool = False
) -> BaseChatModel:
    """:func:`chat_model` off the event loop (the first local call starts the model)."""
    return await asyncio.to_thread(
        functools.partial(chat_model, spec, settings, temperature, background=background)
    )


def embedding_model(spec: str, settings: Settings, stored: str | None = None) -> EmbeddingModel:
    """The embedder named by ``spec`` with its recorded name and dimension (cached).

    ``stored`` is the model a store's vectors come from, if it has any. For ``local`` it
    decides which MiniLM file embeds (the packaged one or the requantised one), so questions
    land in the space of the library's vectors; a new store takes ``settings.local_embedding``.
    """
    if spec == "local":
        from agent.local_models import EMBEDDING_LABEL, PACKAGED_EMBEDDING_LABEL

        if stored in (EMBEDDING_LABEL, PACKAGED_EMBEDDING_LABEL):
            packaged = stored == PACKAGED_EMBEDDING_LABEL
        else:
            packaged = settings.local_embedding == "packaged"
        return _cached(
            ("embedding", spec, packaged, settings.model_cache_dir, settings.embed_max_tokens),
            lambda: _local_embedding_model(settings, packaged),
        )

    def build() -> EmbeddingModel:
        provider, _, name = spec.partition(":")
        if provider != "openai" or not name:
            raise ValueError(
                f"unsupported QUIRE_EMBEDDING_MODEL {spec!r}: use 'local' or 'openai:<model>'"
            )
        from langchain_openai import OpenAIEmbeddings

        emb = OpenAIEmbeddings(model=name)
        dim = _EMBEDDING_DIMS.get(name) or len(emb.embed_query("dimension probe"))
        return EmbeddingModel(emb, spec, dim)

    return _cached(("embedding", spec), build)


def _local_embedding_model(settings: Settings, packaged: bool) -> EmbeddingModel:
    from agent.local_models import (
        EMBEDDING_LABEL,
        PACKAGED_EMBEDDING_LABEL,
        LocalMiniLMEmbeddings,
        ensure_embedding_model_file,
        packaged_embedding_model_file,
    )

    if not packaged:
        try:
            emb = LocalMiniLMEmbeddings(
                ensure_embedding_model_file(settings.model_cache_dir),
                name=EMBEDDING_LABEL,
                max_tokens=settings.embed_max_tokens,
            )
            return EmbeddingModel(emb, emb.name, emb.dimension)
        except Exception as exc:  # noqa: BLE001 - the packaged file still embeds
            log.warning(
                "could not requantise the local embedding model (%s); embedding with the "
                "packaged file, ~2x slower",
                exc,
            )
    emb = LocalMiniLMEmbeddings(
        packaged_embedding_model_file(),
        name=PACKAGED_EMBEDDING_LABEL,
        max_tokens=settings.embed_max_tokens,
    )
    return EmbeddingModel(emb, emb.name, emb.dimension)


# --- an LLM-free answerer -------------------------------------------------------------------

_BLOCK = re.compile(r"^(#chk_[0-9a-f]{8})\b[^\n]*\n(.*?)(?=^#chk_[0-9a-f]{8}\b|\Z)", re.S | re.M)


def _split_request(prompt: str) -> tuple[str, str]:
    """The material before the last ``Question:`` / ``Request:`` line, and the question."""
    cut = max(prompt.rfind("Question:"), prompt.rfind("Request:"))
    if cut < 0:
        return "", prompt
    return prompt[:cut], prompt[cut:].partition(":")[2]


def _sentences(body: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", " ".join(body.split())) if s]


def _gist(material: str, wanted: set[str], most: int = 3) -> str:
    """Up to ``most`` sentences of ``material`` that best overlap the question, in order
    (its opening sentences when none does); header lines ("Book: ...", "Summary:") apart."""
    lines = [
        line for line in material.splitlines() if line.strip() and not line.rstrip().endswith(":")
    ]
    sentences = [s for line in lines[1:] or lines for s in _sentences(line)]
    scored = sorted(range(len(sentences)), key=lambda i: -len(wanted & content_terms(sentences[i])))
    chosen = sorted(scored[:most]) if scored else []
    return " ".join(sentences[i] for i in chosen)


class ExtractiveChatModel(BaseChatModel):
    """Answers with the context sentence that best overlaps the question, cited by its id.

    No model weights, no randomness: used for plumbing tests, load runs and as a baseline.
    Without a context it gives a short fixed greeting.
    """

    assistant_name: str = "Quire"
    notice: str = ""
    """Put before every answer (the local model could not start, say)."""

    @property
    def _llm_type(self) -> str:
        return "quire-extractive"

    def _answer(self, messages: list[BaseMessage]) -> str:
        text = self._extract(messages)
        return f"{self.notice}\n\n{text}" if self.notice else text

    def _extract(self, messages: list[BaseMessage]) -> str:
        # the latest message first; a follow-up that continues an exchange has the earlier
        # passages in the earlier messages
        asked = [str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage)]
        prompt = asked[0] if asked else ""
        material, question = _split_request(prompt)
        wanted = content_terms(question)
        blocks = _BLOCK.findall(material or prompt)
        blocks += [
            b
            for earlier in asked[1:]
            for b in _BLOCK.findall(_split_request(earlier)[0] or earlier)
        ]
        if not blocks and material.strip():
            return _gist(material, wanted)  # an overview prompt: a summary or a ToC, no ids
        best: tuple[int, str, str] | None = None
        for cid, body in blocks:
            for sentence in _sentences(body):
                score = len(wanted & content_terms(sentence))
                if best is None or score > best[0]:
                    best = (score, sentence, cid)
        if best is None or best[0] == 0:
            if best is None:
                return f"Hello! I'm {self.assistant_name}. Ask me anything about your documents."
            return "The provided context does not contain enough information to answer this."
        return f"{best[1]} {best[2]}"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        text = self._answer(messages)
        usage = _usage(messages, text)
        return ChatResult(
            generations=[ChatGeneration(message=AIMessage(text, usage_metadata=usage))]
        )

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        text = self._answer(messages)
        for piece in re.findall(r"\S+\s*", text):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk
        yield ChatGenerationChunk(
            message=AIMessageChunk(content="", usage_metadata=_usage(messages, text))
        )


def _usage(messages: list[BaseMessage], answer: str) -> dict[str, int]:
    read = sum(len(str(m.content).split()) for m in messages)
    written = len(answer.split())
    return {"input_tokens": read, "output_tokens": written, "total_tokens": read + written}
