"""What one ``quire bench`` run measures, and how big: the benchmarks in the order they run
and the plan (full, or ``--quick``: minutes, not an hour)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.common import QUICK_SUFFIX
from bench.paths import ALICE

BENCHMARKS = ("ingest", "retrieval", "answers", "load", "eval-retrieval", "eval-answers")


@dataclass
class BenchPlan:
    """What one ``quire bench`` run measures, and how big."""

    model: str = "local"
    """Chat model of the answer benchmarks (``extractive``: no model, plumbing only)."""
    quick: bool = False
    skip: frozenset[str] = frozenset()
    ingest_files: list[Path] | None = None
    """``None``: the ingest benchmark's defaults (Pride and Prejudice and a PDF textbook)."""
    retrieval_chunks: int = 100_000
    retrieval_queries: int = 200
    retrieval_pool: int | None = None
    """Sentences embedded for the synthetic corpus (``None``: its default)."""
    load_clients: int = 50
    load_seconds: float = 60.0
    load_model: str = "extractive"
    eval_slice: tuple[int, int] | None = None
    """``(queries, distractors)``: a SciFact slice instead of the whole corpus."""
    eval_modes: tuple[str, ...] = ("bm25", "dense", "hybrid", "hybrid-mmr")
    answers_stride: int = 1
    """Ask every n-th question of the answers dataset (1: all)."""

    @classmethod
    def quick_plan(cls, model: str = "extractive", **changes: Any) -> BenchPlan:
        """Minutes, not an hour: small corpora, a short load, a SciFact slice, 9 questions."""
        values: dict[str, Any] = {
            "model": model,
            "quick": True,
            "ingest_files": [ALICE],
            "retrieval_chunks": 10_000,
            "retrieval_queries": 50,
            "load_clients": 10,
            "load_seconds": 10.0,
            "eval_slice": (30, 200),
            "eval_modes": ("bm25", "dense", "hybrid"),
            "answers_stride": 8,
        }
        values.update(changes)
        return cls(**values)

    def database(self, name: str) -> str:
        """A benchmark's database name, ``_quick`` for quick runs."""
        return name + (QUICK_SUFFIX if self.quick else "")

    def result_name(self, name: str) -> str:
        """A results file stem: quick runs never overwrite a full run's figures."""
        return name + ("-quick" if self.quick else "")

    def as_dict(self) -> dict:
        """The plan as JSON-ready data."""
        data = asdict(self)
        data["skip"] = sorted(self.skip)
        data["ingest_files"] = [p.name for p in self.ingest_files or []] or "default"
        return data
