"""One search's stage timings and the time left of its budget."""

from __future__ import annotations

import time

from agent.retrieval.types import RetrievalMetrics


class SearchClock:
    """Stage timings (into ``metrics.stages_ms``) and the remaining time budget."""

    def __init__(self, budget: float, metrics: RetrievalMetrics) -> None:
        self.started = time.perf_counter()
        self.deadline = self.started + budget
        self.metrics = metrics
        self._mark = self.started

    def lap(self, stage: str) -> None:
        """Add the time since the last lap (or the start) to ``stage``."""
        now = time.perf_counter()
        self.metrics.stages_ms[stage] = round(
            self.metrics.stages_ms.get(stage, 0.0) + (now - self._mark) * 1000, 2
        )
        self._mark = now

    def left(self) -> float:
        """Seconds left before the deadline, never below 0."""
        return max(self.deadline - time.perf_counter(), 0.0)

    def total(self) -> None:
        """Record the time since the start as the ``total`` stage."""
        self.metrics.stages_ms["total"] = round((time.perf_counter() - self.started) * 1000, 2)
