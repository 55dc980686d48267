"""The BEIR-format test set of ``quire eval retrieval``: reading a folder (corpus, queries,
qrels of one split) and writing a smaller one (a slice for short runs)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass
class BeirDataset:
    """A BEIR folder: corpus (id -> title, text), the split's queries and their qrels."""

    name: str
    corpus: dict[str, tuple[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]

    def document_text(self, doc_id: str) -> str:
        """What gets indexed for one document: title, blank line, text."""
        title, body = self.corpus[doc_id]
        return f"{title}\n\n{body}" if title.strip() else body


def _read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_beir(folder: Path, split: str = "test") -> BeirDataset:
    """Read ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv`` from ``folder``.

    Only queries judged in the split are kept, in the order the qrels list them.
    """
    folder = Path(folder)
    corpus = {
        str(d["_id"]): (str(d.get("title") or ""), str(d.get("text") or ""))
        for d in _read_jsonl(folder / "corpus.jsonl")
    }
    all_queries = {str(q["_id"]): str(q["text"]) for q in _read_jsonl(folder / "queries.jsonl")}
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels" / f"{split}.tsv").open(encoding="utf-8") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3 or parts[0] == "query-id":
                continue
            qid, did, score = parts[0], parts[1], int(float(parts[2]))
            qrels.setdefault(qid, {})[did] = score
    queries = {qid: all_queries[qid] for qid in qrels if qid in all_queries}
    return BeirDataset(folder.name, corpus, queries, {q: qrels[q] for q in queries})


def write_beir_subset(
    source: Path,
    out: Path,
    *,
    queries: int,
    distractors: int,
    split: str = "test",
    seed: int = 13,
) -> Path:
    """A smaller BEIR folder in ``out``: the split's first ``queries`` judged queries, every
    document judged for them, and ``distractors`` other documents drawn with ``seed``.

    Scores on it are higher than on the whole corpus (fewer competitors); it exists so a
    short run (CI, ``quire bench --quick``) can still catch a quality regression.
    """
    import random

    data = load_beir(source, split)
    chosen = list(data.queries)[:queries]
    judged = {d for q in chosen for d in data.qrels[q] if d in data.corpus}
    others = sorted(set(data.corpus) - judged)
    picked = judged | set(random.Random(seed).sample(others, min(distractors, len(others))))
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for doc_id in sorted(picked):
            title, body = data.corpus[doc_id]
            fh.write(json.dumps({"_id": doc_id, "title": title, "text": body}) + "\n")
    with (out / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for qid in chosen:
            fh.write(json.dumps({"_id": qid, "text": data.queries[qid]}) + "\n")
    with (out / "qrels" / f"{split}.tsv").open("w", encoding="utf-8") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for qid in chosen:
            for doc_id, grade in data.qrels[qid].items():
                fh.write(f"{qid}\t{doc_id}\t{grade}\n")
    return out
