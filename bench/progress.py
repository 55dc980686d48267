"""How a benchmark or an evaluation reports progress: lines for a log, or counts of a stage."""

from __future__ import annotations

from collections.abc import Callable

Log = Callable[[str], None]
"""Where a benchmark writes its progress lines."""
Progress = Callable[[str, int, int], None]
"""Called as ``progress(stage, done, total)`` by a long evaluation (its stages in its docs)."""


def quiet(_: str) -> None:
    """A :data:`Log` that drops every line."""
