"""Warmed openings kept on disk, so a new model process starts with them already read.

Every grounded prompt opens with the same system prompt and worked examples (~560 tokens),
and every other path with one of a few fixed system prompts. A model process warms them at
start (:mod:`agent.model_server.warm`), but on 2 cores that is ~12 s of reading, and a
question asked meanwhile reads its whole prompt: a ``quire ask``, which starts its own model
process, waited 15.6 s for its first word. The KV state of each fixed opening is the same in
every process of the same model and build, so the first process to warm one saves it
(``$QUIRE_HOME/models/prompt-states/``: ~28 KB a token, ~50 MB for all of them) and the
next loads it into its prompt cache in milliseconds.

Only the fixed openings are kept (the warm call marks them with ``x-quire-keep: opening``):
no chat's or document's text is written. A state is used only by a process of the same
model file, llama.cpp build and context size (:func:`state_identity`); the newest
:data:`KEPT_FILES` files are kept.
"""

from __future__ import annotations

import contextvars
import hashlib
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

KEEP_HEADER = "x-quire-keep"
KEEP_OPENING = "opening"
KEEP_IN_MEMORY = "memory"
"""``x-quire-keep`` values: a fixed opening (pinned in the prompt cache and saved to disk)
and a user's opening, a book's overview (pinned in memory only: no user's text is written)."""
KEPT_FILES = 16
"""Files kept: two builds' (AVX-512 and portable) worth of the six fixed openings, and more."""
FORMAT = "lean-kv-1"
"""Changes when the saved state's layout does (:mod:`agent.model_server.prompt_cache`)."""

_keeping: contextvars.ContextVar[str | None] = contextvars.ContextVar("quire_keep", default=None)


def state_identity(model: str, n_ctx: int) -> str:
    """What a saved state depends on: the model file, the llama.cpp build and its CPU
    kernels, the context size and the state format."""
    import llama_cpp

    size = Path(model).stat().st_size
    parts = [
        FORMAT,
        Path(model).name,
        str(size),
        llama_cpp.__version__,
        str(Path(llama_cpp.__file__).parent),
        llama_cpp.llama_print_system_info().decode(errors="replace"),
        str(n_ctx),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def lean_state(tokens: list[int], kv: bytes, n_ctx: int, seed: int = 0) -> Any:
    """A llama-cpp-python ``LlamaState`` of ``tokens`` and their KV cells, no logits (the
    shape :mod:`agent.model_server.prompt_cache` saves): its ids span the ``n_ctx`` context."""
    from llama_cpp.llama import LlamaState

    ids = np.zeros(n_ctx, dtype=np.intc)
    ids[: len(tokens)] = tokens
    return LlamaState(
        input_ids=ids,
        scores=np.empty((0, 0), dtype=np.single),
        n_tokens=len(tokens),
        llama_state=kv,
        llama_state_size=len(kv),
        seed=seed,
    )


class SavedOpenings:
    """The folder of saved opening states for one :func:`state_identity`."""

    def __init__(self, folder: Path, identity: str) -> None:
        self.folder = folder
        self.identity = identity

    def _path(self, tokens: tuple[int, ...]) -> Path:
        digest = hashlib.sha256(np.asarray(tokens, dtype=np.int32).tobytes()).hexdigest()
        return self.folder / f"{self.identity[:12]}-{digest[:24]}.npz"

    def load(self, n_ctx: int) -> list[Any]:
        """The saved states of this identity, for a context of ``n_ctx`` tokens (a file that
        cannot be read is skipped)."""
        states = []
        for path in sorted(self.folder.glob(f"{self.identity[:12]}-*.npz")):
            try:
                with np.load(path, allow_pickle=False) as saved:
                    if str(saved["identity"]) != self.identity:
                        continue
                    read = saved["input_ids"].astype(np.intc)
                    kv = saved["kv"].tobytes()
            except (OSError, ValueError, KeyError) as exc:
                log.warning("skipping saved prompt state %s: %s", path.name, exc)
                continue
            if len(read) < n_ctx:
                states.append(lean_state(read.tolist(), kv, n_ctx))
        return states

    def save(self, tokens: tuple[int, ...], state: Any) -> None:
        """Write ``state`` (read for ``tokens``) atomically; keep the newest files only."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._path(tokens)
        if path.exists():  # loaded at start and warmed again: the same state
            path.touch()
            return
        partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(partial, "wb") as out:
            np.savez(
                out,
                identity=np.array(self.identity),
                input_ids=np.asarray(state.input_ids[: state.n_tokens], dtype=np.int32),
                kv=np.frombuffer(state.llama_state[: state.llama_state_size], dtype=np.uint8),
            )
        os.replace(partial, path)
        newest_first = sorted(self.folder.glob("*.npz"), key=lambda p: p.stat().st_mtime_ns)[::-1]
        for old in newest_first[KEPT_FILES:]:
            old.unlink(missing_ok=True)


PINNED_SHARE = 0.5
"""The most of the prompt cache's capacity that pinned states (warmed openings) may hold."""


def keeping_cache(capacity_bytes: int, saved: SavedOpenings, n_ctx: int) -> Any:
    """A llama-cpp-python RAM prompt cache that starts with ``saved``'s states, writes each
    state a request marked ``x-quire-keep: opening`` leaves, and pins the states of warmed
    openings (``opening`` or ``memory``).

    llama-cpp-python's cache drops its least recently used state when full, and a warmed
    opening is never the one a later prompt is matched to once a longer state shares it:
    after some forty turns the deep-reasoning and not-covered system prompts were gone, and
    their next question read 529 tokens instead of 326 (8.3 s to its first word, not 4.0).
    Pinned states go last, and only while they hold more than :data:`PINNED_SHARE` of the
    capacity (the oldest pinned first)."""
    from llama_cpp import LlamaRAMCache

    class KeepingCache(LlamaRAMCache):
        def __init__(self, capacity: int) -> None:
            super().__init__(capacity_bytes=capacity)
            self.pinned: dict[tuple[int, ...], None] = {}  # oldest first

        def __setitem__(self, key: Any, value: Any) -> None:
            key = tuple(key)
            mode = _keeping.get()
            self.cache_state.pop(key, None)
            self.cache_state[key] = value
            if mode:
                self.pinned.pop(key, None)
                self.pinned[key] = None
            self._evict()
            if mode == KEEP_OPENING:
                try:
                    saved.save(key, value)
                except OSError as exc:  # a read-only or full disk costs the next start only
                    log.warning("could not save a prompt state: %s", exc)

        def _size(self, keys: Any) -> int:
            return sum(self.cache_state[k].llama_state_size for k in keys if k in self.cache_state)

        def _evict(self) -> None:
            while self.pinned and self._size(self.pinned) > self.capacity_bytes * PINNED_SHARE:
                del self.pinned[next(iter(self.pinned))]  # the oldest pinned may go again
            size = self._size(self.cache_state)
            while size > self.capacity_bytes and self.cache_state:
                victim = next((k for k in self.cache_state if k not in self.pinned), None)
                if victim is None:
                    victim = next(iter(self.cache_state))
                    self.pinned.pop(victim, None)
                size -= self.cache_state.pop(victim).llama_state_size

    cache = KeepingCache(capacity_bytes)
    for state in saved.load(n_ctx):
        key = tuple(state.input_ids[: state.n_tokens].tolist())
        cache.cache_state[key] = state
        cache.pinned[key] = None
    return cache


class KeepMiddleware:
    """ASGI middleware: marks a request sent with ``x-quire-keep: opening`` or ``memory`` (a
    context variable the prompt cache reads in the model call's worker thread)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        """Handle one ASGI connection (see the class docs)."""
        headers = dict(scope.get("headers") or []) if scope["type"] == "http" else {}
        mode = headers.get(KEEP_HEADER.encode(), b"").decode(errors="replace")
        if mode not in (KEEP_OPENING, KEEP_IN_MEMORY):
            await self.app(scope, receive, send)
            return
        token = _keeping.set(mode)
        try:
            await self.app(scope, receive, send)
        finally:
            _keeping.reset(token)
