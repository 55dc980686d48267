"""Saved opening states (agent.model_server.saved_openings): what one model process warmed,
the next loads; only a process of the same model, build and context size uses a state."""

from __future__ import annotations

import time
from typing import Any

import pytest

from agent.model_server import saved_openings
from agent.model_server.saved_openings import (
    KEPT_FILES,
    SavedOpenings,
    keeping_cache,
    lean_state,
)

N_CTX = 64


def _state(tokens: list[int], kv: bytes) -> Any:
    return lean_state(tokens, kv, N_CTX, seed=7)


def test_a_saved_state_comes_back_with_its_tokens_and_kv_cells(tmp_path):
    store = SavedOpenings(tmp_path, "a" * 32)
    store.save((5, 6, 7), _state([5, 6, 7], b"\x01\x02\x03kv"))
    (back,) = store.load(N_CTX)
    assert back.n_tokens == 3 and back.llama_state == b"\x01\x02\x03kv"
    assert back.llama_state_size == 5
    assert back.input_ids.shape == (N_CTX,) and back.input_ids[:3].tolist() == [5, 6, 7]
    assert not list(tmp_path.glob("*.tmp"))  # written under another name, then renamed


def test_another_build_or_model_never_uses_a_state(tmp_path):
    SavedOpenings(tmp_path, "a" * 32).save((1, 2), _state([1, 2], b"kv"))
    assert SavedOpenings(tmp_path, "b" * 32).load(N_CTX) == []
    # same file-name prefix, other identity inside: still not used
    assert SavedOpenings(tmp_path, "a" * 12 + "c" * 20).load(N_CTX) == []
    # a state longer than this process's context is not loaded
    assert SavedOpenings(tmp_path, "a" * 32).load(2) == []


def test_an_unreadable_file_is_skipped(tmp_path):
    store = SavedOpenings(tmp_path, "a" * 32)
    store.save((1, 2), _state([1, 2], b"kv"))
    (tmp_path / f"{'a' * 12}-broken.npz").write_bytes(b"not a state")
    assert [s.n_tokens for s in store.load(N_CTX)] == [2]


def test_only_the_newest_files_are_kept(tmp_path):
    store = SavedOpenings(tmp_path, "a" * 32)
    for n in range(KEPT_FILES + 3):
        store.save((n, n + 1), _state([n, n + 1], b"kv"))
        time.sleep(0.02)  # file times move in steps of a few milliseconds
    assert len(list(tmp_path.glob("*.npz"))) == KEPT_FILES
    kept = {s.input_ids[0] for s in store.load(N_CTX)}
    assert 0 not in kept and KEPT_FILES + 2 in kept


def test_the_cache_starts_with_the_saved_states_and_saves_only_marked_calls(tmp_path):
    store = SavedOpenings(tmp_path, "a" * 32)
    store.save((1, 2, 3), _state([1, 2, 3], b"kv"))
    cache = keeping_cache(1 << 20, store, N_CTX)
    # a prompt opening with the saved tokens finds the state
    assert cache[(1, 2, 3, 9, 9)].n_tokens == 3
    cache[(4, 5)] = _state([4, 5], b"answer")  # an answer: stays in memory only
    assert len(list(tmp_path.glob("*.npz"))) == 1
    token = saved_openings._keeping.set(True)  # what KeepMiddleware does for a warm call
    try:
        cache[(6, 7)] = _state([6, 7], b"opening")
    finally:
        saved_openings._keeping.reset(token)
    assert sorted(s.llama_state for s in store.load(N_CTX)) == [b"kv", b"opening"]


@pytest.mark.parametrize("header", [b"opening", b"other", None])
async def test_the_middleware_marks_only_kept_openings(header):
    seen = []

    async def app(scope, receive, send):
        seen.append(saved_openings._keeping.get())

    headers = [(b"x-quire-keep", header)] if header else []
    middleware = saved_openings.KeepMiddleware(app)
    await middleware({"type": "http", "method": "POST", "headers": headers}, None, None)
    assert seen == [header == b"opening"]
    assert saved_openings._keeping.get() is False
