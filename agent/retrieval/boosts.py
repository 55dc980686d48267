"""Score adjustments after fusion (seed 002 steps 5-7): time decay, transcript tag boost,
and documents before transcripts on near-ties."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TypeVar

T = TypeVar("T")
_TOKEN = re.compile(r"[a-z0-9]+")


def time_decay(created_at: datetime, half_life_days: float, floor: float, now: datetime) -> float:
    """``exp(-age / half_life)`` in days, never below ``floor``."""
    age_days = max((now - created_at).total_seconds() / 86400, 0.0)
    return max(floor, math.exp(-age_days / half_life_days))


def tag_overlap(query: str, tags: Sequence[str]) -> float:
    """Share of the query's words (3+ letters) that appear in the tags, 0..1."""
    words = {w for w in _TOKEN.findall(query.lower()) if len(w) > 2}
    tag_words = {w for tag in tags for w in _TOKEN.findall(tag.lower())}
    return len(words & tag_words) / len(words) if words else 0.0


def tag_boost(query: str, tags: Sequence[str], factor: float) -> float:
    """Multiplier ``1 + factor * overlap`` (overlap capped at 1) for a transcript's chunks."""
    return 1.0 + factor * min(tag_overlap(query, tags), 1.0)


def prefer_authoritative(
    ranked: Sequence[T],
    score: Callable[[T], float],
    is_transcript: Callable[[T], bool],
    ratio: float,
) -> list[T]:
    """Sort by score; within runs of scores closer than ``ratio`` (relative), documents
    come before transcripts. Stable otherwise."""
    items = sorted(ranked, key=score, reverse=True)
    out: list[T] = []
    i = 0
    while i < len(items):
        top = score(items[i])
        j = i
        while j < len(items) and top - score(items[j]) <= abs(top) * ratio:
            j += 1
        tie = items[i:j]
        out.extend([t for t in tie if not is_transcript(t)] + [t for t in tie if is_transcript(t)])
        i = j
    return out


def utcnow() -> datetime:
    """The current time, timezone-aware."""
    return datetime.now(UTC)
