"""Context building (seed 002 section 1.3): hits in, labelled prompt blocks out.

For each chunk in rank order:

* the first time its parent appears, the parent's text truncated at word boundaries to
  ``parent_chars`` (the window around the child, so the child's paragraph stays in it) is
  added once, as broader context for that parent's children;
* the child's own paragraph follows as the reference paragraph (optionally compressed by an
  LLM beforehand, marked ``[Partial]`` / ``[Conflicting]``);
* sentences that repeat an earlier sentence (Jaccard word overlap >= ``overlap``) are dropped,
  so the child's paragraph already quoted inside its parent's window costs nothing twice.

Every block is labelled with its chunk's ``#chk_`` id and source (a source is not repeated
for the next block from the same place); blocks stop at
``max_chars``. The chunks in ``keep`` (both sides of a detected conflict) are never dropped:
room is reserved for them, others are trimmed first, and their sentences are never dropped
as repeats of another block's (a negation is a near-repeat). ``chunk_map`` maps citation ids
to chunk ids; ``sources`` are deduplicated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agent.db.chunks import ChunkRecord
from agent.ingest.sentences import split_sentences
from agent.retrieval.citations import format_source, unique
from agent.retrieval.types import RetrievedChunk
from agent.text import without_reference_marks

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class BuiltContext:
    """The prompt context and what it is made of."""

    text: str
    chunks: list[RetrievedChunk]
    chunk_map: dict[str, str]
    bodies: dict[str, str]
    """What the model saw under each citation id (parent window and/or paragraph)."""
    sources: list[str] = field(default_factory=list)
    dropped_sentences: int = 0


def truncate_words(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary (with an ellipsis)."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + "…"


def parent_window(parent: str, child: str, size: int) -> str:
    """At most ``size`` characters of ``parent`` around ``child``, cut at word boundaries."""
    if len(parent) <= size:
        return parent
    at = parent.find(child)
    if at < 0 or len(child) >= size:
        return truncate_words(parent, size)
    start = max(0, at - (size - len(child)) // 2)
    end = min(len(parent), start + size)
    start = max(0, end - size)
    if start > 0:
        start = parent.find(" ", start) + 1 or start
    if end < len(parent):
        cut = parent.rfind(" ", at + len(child), end)
        end = cut if cut > 0 else end
    return (
        ("…" if start > 0 else "") + parent[start:end].strip() + ("…" if end < len(parent) else "")
    )


def window_size(parent_chars: int, max_chars: int, chunks: int) -> int:
    """Characters of a parent shown around each child: the budget's share per chunk, at
    least a quarter and at most all of ``parent_chars``."""
    return max(parent_chars // 4, min(parent_chars, max_chars // max(chunks, 1)))


def surroundings(chunk: RetrievedChunk, window: int) -> str:
    """The child's paragraph within ``window`` characters of its parent (itself when it has
    no parent): what a question-focused passage picks its sentences from."""
    return record_surroundings(chunk.record, window)


def record_surroundings(record: ChunkRecord, window: int) -> str:
    """:func:`surroundings` of a chunk as stored (its ``parent_text`` read)."""
    if not record.parent_text:
        return record.text
    return parent_window(record.parent_text, record.text, max(window, len(record.text)))


def passage_block(citation_id: str, source: str | None, body: str) -> str:
    """A passage as a prompt shows it: its citation id and source (``None``: the same as the
    passage before it, not repeated), then what the model reads: its text without footnote
    marks (:func:`~agent.text.without_reference_marks`)."""
    body = without_reference_marks(body)
    return f"{citation_id} [{source}]\n{body}" if source else f"{citation_id}\n{body}"


def _label(chunk: RetrievedChunk, before: RetrievedChunk | None) -> str | None:
    """The source label a block shows, with what the block before already named left out
    (prompt tokens): ``None`` for the same place, no title for the same document."""
    if before is None or before.record.document_id != chunk.record.document_id:
        return chunk.source
    if before.source == chunk.source:
        return None
    r = chunk.record
    return format_source("", r.chapter_title, r.section_title, r.page) or None


def _words(sentence: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(sentence))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Word-set overlap of two sentences, 0..1."""
    return len(a & b) / len(a | b) if a and b else 0.0


class SentenceDeduper:
    """Remembers kept sentences; drops later ones that overlap one of them too much."""

    def __init__(self, overlap: float) -> None:
        self.overlap = overlap
        self.kept: list[frozenset[str]] = []
        self.dropped = 0
        self.protected: frozenset[str] = frozenset()
        """Citation ids whose sentences are only checked against their own block."""

    def filter(
        self, parts: list[str], protect: bool = False
    ) -> tuple[list[str], list[frozenset[str]], int]:
        """``parts`` without sentences already said (nothing is remembered until
        :meth:`commit`); returns the texts, their sentences' word sets and the drop count.

        ``protect``: only repeats within ``parts`` are dropped, not those of earlier blocks."""
        if not 0.0 < self.overlap < 1.0:
            return parts, [], 0
        seen = [] if protect else list(self.kept)
        texts, fresh, dropped = [], [], 0
        for text in parts:
            out = []
            for sentence in split_sentences(text):
                words = _words(sentence)
                if words and any(jaccard(words, old) >= self.overlap for old in seen):
                    dropped += 1
                    continue
                seen.append(words)
                fresh.append(words)
                out.append(sentence)
            texts.append(" ".join(out))
        return texts, fresh, dropped

    def commit(self, fresh: list[frozenset[str]], dropped: int) -> None:
        """Remember sentences returned by :meth:`filter` for a block that was kept."""
        self.kept.extend(fresh)
        self.dropped += dropped


def _block_options(chunk: RetrievedChunk, paragraph: str, window: int, used_parents: set | None):
    """The texts a chunk's block may hold: with its parent's window first (once per parent),
    then its paragraph alone."""
    record = chunk.record
    options = [[paragraph]]
    if used_parents is None:  # no parent windows
        return options
    if record.parent_id and record.parent_text and record.parent_id not in used_parents:
        context = parent_window(record.parent_text, record.text, max(window, len(record.text)))
        if context.strip() != record.text.strip():
            options.insert(0, [context, paragraph])  # with the parent window if it fits
    return options


def _fitting_block(
    chunk: RetrievedChunk,
    options: list[list[str]],
    dedupe: SentenceDeduper,
    room: int,
    first: bool,
    must: bool,
    source: str | None,
):
    """The first option whose block fits in ``room`` characters (any for the ``first`` block;
    ``must``: the last option at least), as ``(body, block, fresh, dropped)``; ``None`` when
    none does. ``source``: the label shown (``None`` repeats the block before's)."""
    protect = chunk.citation_id in dedupe.protected
    for i, parts in enumerate(options):
        texts, fresh, dropped = dedupe.filter(parts, protect=protect)
        body = "\n".join(t for t in texts if t.strip())
        block = passage_block(chunk.citation_id, source, body)
        if body and (len(block) <= room or first or (must and i == len(options) - 1)):
            return body, block, fresh, dropped
    return None


def build_context(
    chunks: list[RetrievedChunk],
    max_chars: int,
    parent_chars: int,
    *,
    overlap: float = 0.8,
    paragraphs: dict[str, str] | None = None,
    keep: frozenset[str] | set[str] = frozenset(),
    parents: bool = True,
) -> BuiltContext:
    """Blocks for ``chunks`` within ``max_chars`` (see the module docs).

    ``paragraphs`` replaces a chunk's paragraph by citation id (compressed text); an empty
    replacement means the chunk had nothing relevant and only its parent window is kept.
    ``keep``: citation ids whose blocks are never dropped (both sides of a conflict).
    ``parents``: False leaves the parent windows out (the paragraphs were focused on the
    question, :mod:`agent.retrieval.focus`).
    """
    paragraphs = paragraphs or {}
    window = window_size(parent_chars, max_chars, len(chunks))
    dedupe = SentenceDeduper(overlap)
    dedupe.protected = frozenset(keep)
    # room held back for the kept chunks still to come (their paragraph and label)
    reserved = {
        c.citation_id: len(c.record.text) + len(c.source) + 16
        for c in chunks
        if c.citation_id in keep
    }
    used_parents: set = set()
    blocks: list[str] = []
    bodies: dict[str, str] = {}
    included: list[RetrievedChunk] = []
    total = 0
    for chunk in chunks:
        record = chunk.record
        must = reserved.pop(chunk.citation_id, None) is not None
        paragraph = paragraphs.get(chunk.citation_id, record.text)
        options = _block_options(chunk, paragraph, window, used_parents if parents else None)
        room = max_chars - total - sum(reserved.values())
        source = _label(chunk, included[-1] if included else None)
        chosen = _fitting_block(chunk, options, dedupe, room, not blocks, must, source)
        if chosen is None:
            if total >= max_chars and not reserved:
                break
            continue  # repeats earlier blocks, or no room for it
        body, block, fresh, dropped = chosen
        dedupe.commit(fresh, dropped)
        if record.parent_id:
            used_parents.add(record.parent_id)
        blocks.append(block)
        bodies[chunk.citation_id] = body
        included.append(chunk)
        total += len(block) + 2
    return BuiltContext(
        text="\n\n".join(blocks),
        chunks=included,
        chunk_map={c.citation_id: str(c.record.id) for c in included},
        bodies=bodies,
        sources=unique(c.source for c in included),
        dropped_sentences=dedupe.dropped,
    )
