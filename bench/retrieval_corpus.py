"""The retrieval benchmark's synthetic corpus: its shape (:class:`CorpusSpec`) and its rows.

Chunk text is runs of consecutive book sentences; each chunk's vector mixes real embedder
vectors of a pool of book sentences (the module docs of :mod:`bench.retrieval`). One
user's documents, parents and children are generated here and COPYed in binary.

Two vocabularies (``CorpusSpec.vocabulary``):

* ``books``: every chunk is the two books' text, so every word is common at any size: the
  worst case for BM25 (a question's words have postings in a fixed share of the library).
* ``growing``: the library is made of *topics* of ``topic_chunks`` chunks (a long book
  each). The first topic is the books' text; in every other one, names and the rarer words
  are spelled as that topic's own words (``rabbit`` -> ``rabbitqb``), while the
  ``shared_words`` commonest lower-case words stay as they are. The vocabulary then grows
  with the library, as real libraries' does, and a question's names and rare words have
  postings in its own book only, while its common words still have them everywhere.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np

from agent.ingest.document import blocks, unwrap
from agent.ingest.sentences import split_sentences
from bench.paths import ALICE, PRIDE

BOOKS = [ALICE, PRIDE]
Vocabulary = Literal["books", "growing"]


@dataclass(frozen=True)
class CorpusSpec:
    """The synthetic corpus: one target user and ``users - 1`` others."""

    target_chunks: int = 100_000
    other_chunks: int = 10_000
    """Child chunks of each of the other users."""
    users: int = 10
    chunks_per_document: int = 100
    children_per_parent: int = 5
    pool_size: int = 2_000
    """Book sentences embedded with the real embedder; chunk vectors mix these."""
    user_prefix: str = "bench-retrieval"
    seed: int = 7
    vocabulary: Vocabulary = "books"
    """``growing``: names and rarer words spelled per topic (the module docs)."""
    topic_chunks: int = 2_000
    """Chunks of one topic (``growing``): about one long book."""
    shared_words: int = 2_000
    """The commonest lower-case words every topic shares (``growing``)."""

    @classmethod
    def scaled(cls, target_chunks: int, **kw) -> CorpusSpec:
        """A corpus whose other users own a tenth of the target user's chunks each."""
        return cls(target_chunks=target_chunks, other_chunks=max(target_chunks // 10, 1), **kw)

    def user_names(self) -> list[str]:
        """Names of the corpus users, the target first."""
        return [f"{self.user_prefix}-{i}" for i in range(self.users)]

    def chunks_of(self, user_index: int) -> int:
        """Child chunks the user at ``user_index`` owns."""
        return self.target_chunks if user_index == 0 else self.other_chunks

    @property
    def total_chunks(self) -> int:
        """Child chunks of all corpus users."""
        return self.target_chunks + (self.users - 1) * self.other_chunks


@dataclass(frozen=True)
class SentencePool:
    """The books' sentences, and the real vectors of the sample of them chunk vectors mix."""

    sentences: list[str]
    at: np.ndarray
    """Sorted indexes (into ``sentences``) of the embedded sentences."""
    vectors: np.ndarray
    """Their vectors (float32), in the order of ``at``."""


def book_sentences(paths: list[Path] | None = None) -> list[str]:
    """The books' sentences in reading order (headings and scraps dropped)."""
    out: list[str] = []
    for path in paths or BOOKS:
        for block in blocks(path.read_text(encoding="utf-8")):
            for sentence in split_sentences(unwrap(block)):
                if len(sentence) >= 20 and re.search(r"[a-z]", sentence):
                    out.append(sentence)
    return out


_WORD = re.compile(r"[A-Za-z]+")


@lru_cache(maxsize=4)
def shared_vocabulary(sentences: tuple[str, ...], size: int) -> frozenset[str]:
    """The ``size`` commonest words of ``sentences`` that are mostly written in lower case
    (so not names): the words every topic of a ``growing`` corpus shares."""
    lower, other = Counter(), Counter()
    for sentence in sentences:
        for word in _WORD.findall(sentence):
            (lower if word.islower() else other)[word.lower()] += 1
    common = [w for w, n in lower.most_common() if n > other[w]]
    return frozenset(common[:size])


def topic_suffix(topic: int) -> str:
    """Letters that make a word topic ``topic``'s own (``""`` for the first topic).

    Starts with ``q`` and is at least two letters, so a spelled word is no English word."""
    if topic <= 0:
        return ""
    letters = ""
    while topic:
        topic, digit = divmod(topic, 26)
        letters = "abcdefghijklmnopqrstuvwxyz"[digit] + letters
    return "q" + letters


def in_topic(text: str, topic: int, shared: frozenset[str]) -> str:
    """``text`` with every word outside ``shared`` spelled as topic ``topic``'s own."""
    suffix = topic_suffix(topic)
    if not suffix:
        return text
    return _WORD.sub(
        lambda m: m.group(0) if m.group(0).lower() in shared else m.group(0) + suffix, text
    )


def _chunk_texts(
    sentences: list[str], starts: np.ndarray, lengths: np.ndarray
) -> tuple[list[str], np.ndarray]:
    texts, ends = [], np.empty(len(starts), dtype=np.int64)
    for j, (start, target) in enumerate(zip(starts, lengths, strict=True)):
        parts, size, i = [], 0, int(start)
        while size < target and i < len(sentences):
            parts.append(sentences[i])
            size += len(sentences[i]) + 1
            i += 1
        texts.append(" ".join(parts))
        ends[j] = i
    return texts, ends


def _chunk_vectors(
    rng: np.random.Generator, pool: np.ndarray, pool_at: np.ndarray, starts: np.ndarray
) -> np.ndarray:
    """``normalize(anchor + 0.4 * random pool vector + noise)`` per chunk (float32)."""
    nearest = np.clip(np.searchsorted(pool_at, starts), 0, len(pool_at) - 1)
    anchor = pool[nearest]
    other = pool[rng.integers(0, len(pool), len(starts))]
    noise = rng.normal(0.0, 0.3 / np.sqrt(pool.shape[1]), anchor.shape).astype(np.float32)
    mixed = anchor + 0.4 * other + noise
    return (mixed / np.linalg.norm(mixed, axis=1, keepdims=True)).astype(np.float32)


def _sha(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


COPIES = (
    (
        "COPY documents (id, user_id, title, file_type, doc_type, content_hash, "
        "char_count, embedding_model, summary_status, filename) FROM STDIN (FORMAT BINARY)",
        ["uuid", "uuid", "text", "text", "text", "text", "int4"] + ["text"] * 3,
    ),
    (
        "COPY parent_chunks (id, document_id, chunk_index, text, chapter_title, "
        "content_hash) FROM STDIN (FORMAT BINARY)",
        ["uuid", "uuid", "int4", "text", "text", "text"],
    ),
    (
        "COPY child_chunks (id, document_id, parent_id, chunk_index, text, chapter_title, "
        "content_hash, embedding) FROM STDIN (FORMAT BINARY)",
        ["uuid", "uuid", "uuid", "int4", "text", "text", "text", "vector"],
    ),
)
"""The binary COPY of documents, parents and children, with each column's type."""


def _group_into_parents(
    spec: CorpusSpec,
    doc_id: uuid.UUID,
    texts: list[str],
    vectors: np.ndarray,
    parents: list[tuple],
    children: list[tuple],
) -> int:
    """Append one document's parent and child rows (every ``children_per_parent`` children
    form a parent); returns the document's characters."""
    chars = 0
    for p0 in range(0, len(texts), spec.children_per_parent):
        parent_id = uuid.uuid4()
        group = texts[p0 : p0 + spec.children_per_parent]
        chapter = f"Chapter {p0 // spec.children_per_parent + 1}"
        parent_text = " ".join(group)
        chars += len(parent_text)
        parents.append(
            (parent_id, doc_id, p0 // spec.children_per_parent, parent_text, chapter)
            + (_sha(parent_text),)
        )
        for j, child in enumerate(group, start=p0):
            children.append(
                (uuid.uuid4(), doc_id, parent_id, j, child, chapter, _sha(child), vectors[j])
            )
    return chars


def user_rows(
    spec: CorpusSpec,
    user_id: uuid.UUID,
    n_chunks: int,
    pool: SentencePool,
    model: str,
    rng: np.random.Generator,
    first_document: int = 0,
) -> tuple[list[tuple], list[tuple], list[tuple]]:
    """One user's document, parent and child rows (columns as in :data:`COPIES`);
    ``first_document``: how many of the user's documents earlier batches made."""
    per_doc = spec.chunks_per_document
    docs: list[tuple] = []
    parents: list[tuple] = []
    children: list[tuple] = []
    shared = None
    if spec.vocabulary == "growing":
        shared = shared_vocabulary(tuple(pool.sentences), spec.shared_words)
    for d in range(first_document, first_document + (n_chunks + per_doc - 1) // per_doc):
        doc_id = uuid.uuid4()
        count = min(per_doc, n_chunks - (d - first_document) * per_doc)
        starts = np.sort(rng.integers(0, len(pool.sentences) - 40, count))
        texts, _ = _chunk_texts(pool.sentences, starts, rng.integers(400, 700, count))
        if shared is not None:
            topic = d * per_doc // spec.topic_chunks
            texts = [in_topic(t, topic, shared) for t in texts]
        vectors = _chunk_vectors(rng, pool.vectors, pool.at, starts)
        chars = _group_into_parents(spec, doc_id, texts, vectors, parents, children)
        docs.append(
            (doc_id, user_id, f"Synthetic book {d + 1}", "txt", "BOOK", _sha(str(doc_id)))
            + (chars, model, "none", f"bench-{d + 1}.txt")
        )
    return docs, parents, children


async def copy_rows(
    copy_conn, docs: list[tuple], parents: list[tuple], children: list[tuple]
) -> None:
    """COPY one user's documents, parents and children (:func:`user_rows`) in one
    transaction on a psycopg connection with pgvector's types registered."""
    async with copy_conn.transaction():
        cur = copy_conn.cursor()
        for (statement, types), rows in zip(COPIES, (docs, parents, children), strict=True):
            async with cur.copy(statement) as copy:
                copy.set_types(types)
                for row in rows:
                    await copy.write_row(row)
