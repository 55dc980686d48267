"""The search cache: one finished search per (scope, query, options), reused while the
library's fingerprint is unchanged and its time to live lasts, least recently used first out."""

from __future__ import annotations

import time
from collections import OrderedDict

from agent.db.scope import SearchScope
from agent.retrieval.types import SearchOptions, SearchResult

_cache: OrderedDict[tuple, tuple[str, float, SearchResult]] = OrderedDict()
"""(scope, query, options) -> (library fingerprint, expiry, result): one entry per search,
replaced when the library changed."""


def cache_key(scope: SearchScope, query: str, options: SearchOptions, ttl: float) -> tuple | None:
    """The key of this search in the cache, or ``None`` if it is not to be cached."""
    if options.use_cache and ttl > 0:
        return (scope, query, options)
    return None


def in_cache(key: tuple) -> bool:
    """Whether a result is kept under ``key`` (fresh or not)."""
    return key in _cache


def cache_get(key: tuple, fingerprint: str) -> SearchResult | None:
    """The result kept under ``key`` if the library is still at ``fingerprint`` and it has not
    expired (else it is dropped)."""
    hit = _cache.get(key)
    if hit is None:
        return None
    seen, expires, result = hit
    if seen != fingerprint or expires < time.monotonic():
        _cache.pop(key, None)
        return None
    _cache.move_to_end(key)
    return result


def cache_put(key: tuple, fingerprint: str, result: SearchResult, ttl: float, size: int) -> None:
    """Keep ``result`` for ``ttl`` seconds, dropping the least recently used beyond ``size``."""
    _cache[key] = (fingerprint, time.monotonic() + ttl, result)
    _cache.move_to_end(key)
    while len(_cache) > size:
        _cache.popitem(last=False)


def clear_search_cache() -> None:
    """Forget every cached search (tests, settings changes)."""
    _cache.clear()
