"""The question set of ``quire eval answers``: JSONL, one question a line, with its
acceptable answers, its documents, the route it should take and whether it is answerable
(the format in :mod:`bench.eval_answers`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Item:
    """One question of the data set."""

    question: str
    answers: list[str]
    documents: list[Path] = field(default_factory=list)
    expected_route: str | None = None
    unanswerable: bool = False


def _resolve(raw: str, base: Path) -> Path:
    path = Path(raw).expanduser()
    if path.is_absolute():
        return path
    here = Path.cwd() / path
    return here if here.exists() else base / path


def load_dataset(path: Path, limit: int | None = None) -> list[Item]:
    """The questions of a JSONL file (first ``limit`` only when given)."""
    items: list[Item] = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        if not row.get("question"):
            raise ValueError(f"{path}:{number}: no question")
        docs = row.get("document") or []
        docs = [docs] if isinstance(docs, str) else docs
        items.append(
            Item(
                question=row["question"],
                answers=[str(a) for a in row.get("answers") or []],
                documents=[_resolve(d, path.parent) for d in docs],
                expected_route=row.get("expected_route"),
                unanswerable=bool(row.get("unanswerable", False)),
            )
        )
    return items[:limit] if limit else items
