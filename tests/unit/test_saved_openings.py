"""Saved opening states (agent.model_server.saved_openings): what one model process warmed,
the next loads; only a process of the same model, build and context size uses a state."""

from __future__ import annotations

import time
from typing import Any

import pytest

from agent.model_server import saved_openings
from agent.model_server.saved_openings import (
    KEEP_IN_MEMORY,
    KEEP_OPENING,
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
    _warmed(cache, (6, 7), b"opening")
    assert sorted(s.llama_state for s in store.load(N_CTX)) == [b"kv", b"opening"]
    _warmed(cache, (8, 9), b"a book", KEEP_IN_MEMORY)  # pinned, never written
    assert len(list(tmp_path.glob("*.npz"))) == 2


def _warmed(cache: Any, key: tuple[int, ...], kv: bytes, mode: str = KEEP_OPENING) -> None:
    token = saved_openings._keeping.set(mode)  # what KeepMiddleware does for a warm call
    try:
        cache[key] = _state(list(key), kv)
    finally:
        saved_openings._keeping.reset(token)


def test_warmed_openings_outlive_the_answers_that_fill_the_cache(tmp_path):
    store = SavedOpenings(tmp_path, "a" * 32)
    store.save((1, 2), _state([1, 2], b"s" * 10))  # a system prompt saved by another process
    cache = keeping_cache(100, store, N_CTX)
    _warmed(cache, (3, 4), b"d" * 10)  # the deep-reasoning opening
    _warmed(cache, (5, 6), b"b" * 10, KEEP_IN_MEMORY)  # a book's overview
    for n in range(20):  # answers, each 20 bytes: the cache holds 100
        cache[(1, 2, 100 + n)] = _state([1, 2, 100 + n], b"a" * 20)
    left = set(cache.cache_state)
    assert {(1, 2), (3, 4), (5, 6)} <= left  # every warmed opening
    assert (1, 2, 119) in left and (1, 2, 100) not in left  # the newest answers, not the oldest
    assert cache[(3, 4, 7, 7)].n_tokens == 2
    assert sum(s.llama_state_size for s in cache.cache_state.values()) <= 100


def test_pinned_openings_hold_at_most_half_the_cache(tmp_path):
    cache = keeping_cache(100, SavedOpenings(tmp_path, "a" * 32), N_CTX)
    for n in range(6):  # six openings of 20 bytes: only the newest two stay pinned
        _warmed(cache, (n, n), b"o" * 20, KEEP_IN_MEMORY)
    for n in range(5):
        cache[(9, 100 + n)] = _state([9, 100 + n], b"a" * 20)
    assert {(4, 4), (5, 5)} <= set(cache.cache_state)
    assert (0, 0) not in cache.cache_state


@pytest.mark.parametrize("header", [b"opening", b"memory", b"other", None])
async def test_the_middleware_marks_only_kept_openings(header):
    seen = []

    async def app(scope, receive, send):
        seen.append(saved_openings._keeping.get())

    headers = [(b"x-quire-keep", header)] if header else []
    middleware = saved_openings.KeepMiddleware(app)
    await middleware({"type": "http", "method": "POST", "headers": headers}, None, None)
    assert seen == [header.decode() if header in (b"opening", b"memory") else None]
    assert saved_openings._keeping.get() is None
