"""Context building: citation-labelled blocks, parent text once per parent, within a budget."""

from __future__ import annotations

from dataclasses import dataclass

from agent.retrieval.hybrid import RetrievedChunk


@dataclass(frozen=True)
class BuiltContext:
    """The prompt context and what it is made of."""

    text: str
    chunks: list[RetrievedChunk]
    chunk_map: dict[str, str]
    bodies: dict[str, str]
    """What the model saw under each citation id (the parent window or the child)."""


def _window(parent: str, child: str, size: int) -> str:
    """About ``size`` characters of ``parent`` centred on ``child``, cut at word boundaries."""
    if len(parent) <= size:
        return parent
    at = parent.find(child)
    if at < 0 or len(child) >= size:
        return child
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


def build_context(chunks: list[RetrievedChunk], max_chars: int, parent_chars: int) -> BuiltContext:
    """Label each chunk with its ``#chk_`` id and source; widen to parent text when it fits.

    A parent's text is used once (for its best-ranked child); later children of the same
    parent contribute only their own paragraph. Blocks stop at ``max_chars``.
    """
    per_chunk = max(parent_chars // 4, min(parent_chars, max_chars // max(len(chunks), 1)))
    used_parents: set = set()
    blocks: list[str] = []
    bodies: dict[str, str] = {}
    included: list[RetrievedChunk] = []
    total = 0
    for chunk in chunks:
        record = chunk.record
        body = record.text
        if record.parent_id and record.parent_text and record.parent_id not in used_parents:
            body = _window(record.parent_text, record.text, max(per_chunk, len(record.text)))
            used_parents.add(record.parent_id)
        block = f"{chunk.citation_id} [{chunk.source}]\n{body}"
        if total + len(block) > max_chars:
            body = record.text
            block = f"{chunk.citation_id} [{chunk.source}]\n{body}"
            if total + len(block) > max_chars and blocks:
                break
        blocks.append(block)
        bodies[chunk.citation_id] = body
        included.append(chunk)
        total += len(block) + 2
    return BuiltContext(
        text="\n\n".join(blocks),
        chunks=included,
        chunk_map={c.citation_id: str(c.record.id) for c in included},
        bodies=bodies,
    )
