"""Answers kept as they come (``quire eval answers --resume``).

A run over many questions with the CPU model takes hours (tool selection on and off: ~3
minutes a question on 2 cores). Each question's rows are appended to
``<eval folder>/<name>.partial.jsonl`` once answered, after a header naming what was run, so
a run that is stopped can go on later from where it was: ``--resume`` keeps the rows of
every question already answered in full and asks only the others. A header that differs
(another data set, model or set of systems) refuses the resume instead of mixing runs.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from bench.eval_answers_scoring import QuestionResult


class Checkpoint:
    """The rows of one run, on disk as they come."""

    def __init__(self, path: Path, header: dict, resume: bool) -> None:
        self.path = path
        self.header = header
        self.kept: dict[str, list[QuestionResult]] = {}
        if resume and path.is_file():
            self.kept = _read(path, header)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"header": header}) + "\n", encoding="utf-8")

    def answered(self, question: str, systems: set[str]) -> list[QuestionResult] | None:
        """The kept rows of ``question`` if every one of ``systems`` answered it."""
        rows = self.kept.get(question, [])
        return rows if {r.system for r in rows} >= systems else None

    def add(self, rows: list[QuestionResult]) -> None:
        """Append one question's rows (flushed at once)."""
        with self.path.open("a", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps(asdict(row)) + "\n")


def _read(path: Path, header: dict) -> dict[str, list[QuestionResult]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0]).get("header") if lines else None
    if first != header:
        raise ValueError(
            f"{path} holds another run ({first}); run without --resume to start afresh, "
            "or give another --name"
        )
    kept: dict[str, list[QuestionResult]] = {}
    for line in lines[1:]:
        try:
            row = QuestionResult(**json.loads(line))
        except (json.JSONDecodeError, TypeError):
            continue  # a line cut short when the run was stopped
        kept.setdefault(row.question, []).append(row)
    return kept
