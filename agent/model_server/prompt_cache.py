"""The model process's prompt cache: the KV state of recent prompts kept in memory, so a
request continues from the longest prefix any of them shares with it.

llama.cpp holds one sequence in its KV cache: the last prompt and its reply. A chat's
follow-up continues its last exchange (:mod:`agent.chat.follow_up`), but a call in between
(the chat's summary update after every turn, another chat) replaces that state, and the
follow-up would read its whole prompt again. llama-cpp-python's ``LlamaRAMCache`` saves the
state after every completion and restores the best one before the next, but its states hold
the logits of every batch position as well (``n_batch`` x 151,936 floats: 311 MB for this
model) and restore them for nothing: sampling reads the live context, and
``logits_all=False`` needs no stored logits. :func:`use_lean_states` makes a state the
sequence's KV cells alone (about 28 KB a token for Qwen2.5-1.5B at f16) and its token ids.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np


def _save_state(self: Any) -> Any:
    """The KV cells of sequence 0 and the token ids, without logits."""
    import llama_cpp
    from llama_cpp.llama import LlamaState

    ctx = self._ctx.ctx
    size = int(llama_cpp.llama_state_seq_get_size(ctx, 0))
    buffer = (ctypes.c_uint8 * size)()
    written = int(llama_cpp.llama_state_seq_get_data(ctx, buffer, size, 0))
    return LlamaState(
        input_ids=self.input_ids.copy(),
        scores=np.empty((0, 0), dtype=np.single),
        n_tokens=self.n_tokens,
        llama_state=bytes(buffer)[:written],
        llama_state_size=written,
        seed=self._seed,
    )


def _load_state(self: Any, state: Any) -> None:
    """Replace the context's KV cells with ``state``'s (the next decode refreshes logits)."""
    import llama_cpp

    ctx = self._ctx.ctx
    llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx), True)
    buffer = (ctypes.c_uint8 * state.llama_state_size).from_buffer_copy(state.llama_state)
    if int(llama_cpp.llama_state_seq_set_data(ctx, buffer, state.llama_state_size, 0)) == 0:
        # nothing restored (the context cleared): the prompt is read in full, not failed
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx), True)
        self.n_tokens = 0
        return
    self.input_ids = state.input_ids.copy()
    self.n_tokens = state.n_tokens
    self._requires_eval = True  # the restored state has no live logits
    self._seed = state.seed


def use_lean_states() -> None:
    """Make ``llama_cpp.Llama``'s saved states KV cells and token ids only (module docs)."""
    import llama_cpp

    llama_cpp.Llama.save_state = _save_state
    llama_cpp.Llama.load_state = _load_state
