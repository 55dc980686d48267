"""Persistent citation ids (``#chk_`` + md5(chunk id)[:8]), the citation guard and sources.

The guard runs after generation: it normalises the spellings small models produce
(``[chk_1a2b3c4d]``, ``chk_1A2B3C4D``), drops ids that were not in the context, moves a
citation to the chunk that actually supports its sentence, and cites uncited sentences that
clearly come from one chunk.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agent.text import content_terms

CITATION_RE = re.compile(r"\[?#?\bchk_([0-9a-fA-F]{8})\b\]?")


def citation_id(chunk_id: uuid.UUID | str) -> str:
    """The persistent citation id of a chunk: ``#chk_`` + the first 8 hex of md5(id)."""
    return "#chk_" + hashlib.md5(str(chunk_id).encode("utf-8")).hexdigest()[:8]


@dataclass(frozen=True)
class CitableChunk:
    """What the guard needs to know about one context chunk."""

    citation_id: str
    text: str


def _terms(text: str) -> set[str]:
    return content_terms(CITATION_RE.sub(" ", text))


def cited_ids(answer: str) -> list[str]:
    """Normalised citation ids in order of first appearance."""
    seen: dict[str, None] = {}
    for m in CITATION_RE.finditer(answer):
        seen.setdefault("#chk_" + m.group(1).lower(), None)
    return list(seen)


def unknown_citations(answer: str, known: Iterable[str]) -> int:
    """How many citations in ``answer`` name an id outside ``known`` (each occurrence counts):
    what the guard removes, recorded with the message."""
    allowed = set(known)
    return sum(
        1 for m in CITATION_RE.finditer(answer) if "#chk_" + m.group(1).lower() not in allowed
    )


def _best_support(terms: set[str], chunks: Sequence[CitableChunk], vocab: dict) -> tuple[str, int]:
    best_id, best = chunks[0].citation_id, -1
    for c in chunks:  # ties go to the better-ranked chunk
        overlap = len(terms & vocab[c.citation_id])
        if overlap > best:
            best_id, best = c.citation_id, overlap
    return best_id, best


def _with_citation(sentence: str, cid: str) -> str:
    stripped = sentence.rstrip()
    trail = sentence[len(stripped) :]
    end = len(stripped)
    while end and stripped[end - 1] in ".!?\"'”’)":
        end -= 1
    return f"{stripped[:end]} {cid}{stripped[end:]}{trail}"


def guard_citations(answer: str, chunks: Sequence[CitableChunk], min_support: int = 3) -> str:
    """Return ``answer`` citing only ids from ``chunks``, each where it is supported.

    1. Normalise every spelling of an id to ``#chk_xxxxxxxx``; drop ids not in the context.
    2. Per sentence: if the cited chunk shares far fewer content words with the sentence
       than another context chunk (at least ``min_support`` words), cite that one instead;
       a sentence with no citation gets the chunk it clearly comes from, if any.
    """
    known = {c.citation_id for c in chunks}

    def fix(m: re.Match) -> str:
        cid = "#chk_" + m.group(1).lower()
        return cid if cid in known else ""

    cleaned = CITATION_RE.sub(fix, answer)
    cleaned = re.sub(r"[ \t]+([.,;:!?])", r"\1", re.sub(r"[ \t]{2,}", " ", cleaned)).strip()
    cleaned = re.sub(r"\(\s*[,;]?\s*\)", "", cleaned)
    if not chunks:
        return cleaned
    vocab = {c.citation_id: _terms(c.text) for c in chunks}
    out: list[str] = []
    # a citation right after the full stop still belongs to that sentence
    for sentence in re.split(r"(?<=[.!?])(?=\s(?!\s*#chk_))", cleaned):
        terms = _terms(sentence)
        ids = cited_ids(sentence)
        if len(terms) < min_support:
            out.append(sentence)
            continue
        best_id, best = _best_support(terms, chunks, vocab)
        if ids:
            supported = max(len(terms & vocab[i]) for i in ids)
            if best >= min_support and best_id not in ids and supported * 2 < best:
                for i in ids:
                    sentence = sentence.replace(i, best_id)
        elif best >= min_support:
            sentence = _with_citation(sentence, best_id)
        out.append(sentence)
    return "".join(out)


def format_source(title: str, chapter: str | None, section: str | None, page: int | None) -> str:
    """``Title, Chapter, Section (p. N)`` with missing parts left out."""
    label = ", ".join(x for x in (title, chapter, section) if x)
    return f"{label} (p. {page})" if page is not None else label


def unique(items: Iterable[str]) -> list[str]:
    """Items in first-seen order without repeats."""
    return list(dict.fromkeys(items))
