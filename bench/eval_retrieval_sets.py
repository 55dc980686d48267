"""Two more BEIR-format sets built here, of other shapes than SciFact, so that no single set
drives the fusion's tuning (``quire eval retrieval --dataset books`` / ``--dataset pydoc``).

* **books**: the chapters of the two books in ``shared/data/books`` (73 long documents,
  10-40k characters each) and the answerable questions of ``tests/data/answers.jsonl``
  (short factoid questions written by us). A question's relevant chapters are those that
  hold one of its accepted answers and the most of its rarer words (grade 2 for the best,
  1 for the others holding the answer): silver labels, made once, by rule.
* **pydoc**: the Python language reference shipped with Python (``pydoc_data.topics``: 79
  technical articles) with known-item queries: from two sentences of each article, the
  first content words (no stopwords) of each, so that every query has exactly one relevant
  article. Keyword queries, the shape where BM25 is strongest.

Both are written as ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/test.tsv`` under the
folder given (``$QUIRE_HOME/eval/sets/<name>`` by default) and evaluated like SciFact.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter
from pathlib import Path

from agent.ingest.parse import parse_text
from agent.ingest.sentences import split_sentences
from bench.paths import ALICE, PRIDE

SETS = ("books", "pydoc")
ANSWERS = Path(__file__).resolve().parents[1] / "tests" / "data" / "answers.jsonl"
_WORD = re.compile(r"[a-z][a-z'-]+")
_STOPWORD_TEXT = (
    "a an the and or but if of to in on at by for with from as is are was were be been being "
    "it its this that these those what which who whom whose when where why how does do did "
    "has have had not no can could would should will shall may might must into onto than then "
    "there their they them he she his her him you your we our i me my so such any all each "
    "about after before over under between also only very more most other some"
)
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def _words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 2]


def _write(folder: Path, corpus: dict[str, dict], queries: dict[str, str], qrels: list) -> Path:
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for doc_id, doc in corpus.items():
            out.write(json.dumps({"_id": doc_id, **doc}) + "\n")
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as out:
        for qid, text in queries.items():
            out.write(json.dumps({"_id": qid, "text": text}) + "\n")
    with (folder / "qrels" / "test.tsv").open("w", encoding="utf-8") as out:
        out.write("query-id\tcorpus-id\tscore\n")
        for qid, doc_id, grade in qrels:
            out.write(f"{qid}\t{doc_id}\t{grade}\n")
    return folder


def _chapters() -> dict[str, dict]:
    """Every chapter of the two books as one document (title: book and chapter)."""
    corpus: dict[str, dict] = {}
    for path in (ALICE, PRIDE):
        parsed = parse_text(path.read_text(encoding="utf-8"), path.stem)
        chapters: dict[str, list[str]] = {}
        for p in parsed.paragraphs:
            if p.chapter:
                chapters.setdefault(p.chapter, []).append(p.text)
        for i, (chapter, texts) in enumerate(chapters.items(), start=1):
            corpus[f"{path.stem}-{i:02d}"] = {
                "title": f"{parsed.title}, {chapter}",
                "text": "\n\n".join(texts),
            }
    return corpus


def build_books_set(folder: Path) -> Path:
    """The books set (module docs) under ``folder``."""
    corpus = _chapters()
    lowered = {d: (c["title"] + " " + c["text"]).lower() for d, c in corpus.items()}
    df = Counter(w for text in lowered.values() for w in set(_words(text)))
    queries: dict[str, str] = {}
    qrels: list[tuple[str, str, int]] = []
    for n, line in enumerate(ANSWERS.read_text(encoding="utf-8").splitlines(), start=1):
        row = json.loads(line)
        if row.get("unanswerable") or not row.get("answers"):
            continue
        answers = [a.lower() for a in row["answers"]]
        holding = [d for d, text in lowered.items() if any(a in text for a in answers)]
        if not holding or len(holding) > 12:  # an answer everywhere marks nothing
            continue
        terms = set(_words(row["question"]))

        def weight(doc: str, terms: set[str] = terms) -> float:
            return sum(math.log(len(corpus) / df[t]) for t in terms if df[t] and t in lowered[doc])

        ranked = sorted(holding, key=weight, reverse=True)
        qid = f"q{n}"
        queries[qid] = row["question"]
        qrels.append((qid, ranked[0], 2))
        qrels.extend((qid, d, 1) for d in ranked[1:3] if weight(d) >= 0.5 * weight(ranked[0]))
    return _write(folder, corpus, queries, qrels)


def build_pydoc_set(folder: Path, per_article: int = 2, seed: int = 11) -> Path:
    """The pydoc set (module docs) under ``folder``."""
    from pydoc_data.topics import topics

    rng = random.Random(seed)
    corpus = {
        name: {"title": name.replace("-", " "), "text": text.strip()}
        for name, text in sorted(topics.items())
        if len(text) > 400
    }
    queries: dict[str, str] = {}
    qrels: list[tuple[str, str, int]] = []
    for name, doc in corpus.items():
        sentences = [
            s for s in split_sentences(" ".join(doc["text"].split())) if len(_words(s)) >= 6
        ]
        for j, sentence in enumerate(rng.sample(sentences, min(per_article, len(sentences)))):
            words = _words(sentence)
            start = rng.randrange(0, max(len(words) - 5, 1))
            qid = f"{name}-{j}"
            queries[qid] = " ".join(words[start : start + 5])
            qrels.append((qid, name, 1))
    return _write(folder, corpus, queries, qrels)


BUILDERS = {"books": build_books_set, "pydoc": build_pydoc_set}


def built_set(name: str, folder: Path) -> Path:
    """The named set written under ``folder / name`` (rebuilt each time: it is cheap)."""
    if name not in BUILDERS:
        raise ValueError(f"unknown set {name!r}: use {', '.join(SETS)}")
    return BUILDERS[name](folder / name)
