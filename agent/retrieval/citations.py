"""Persistent citation ids (``#chk_`` + md5(chunk id)[:8]), the citation guard and sources.

The guard runs after generation: it normalises the spellings small models produce
(``[chk_1a2b3c4d]``, ``chk_1A2B3C4D``), drops ids that were not in the context, moves a
citation to the chunk that actually supports its sentence, and cites uncited sentences that
clearly come from one chunk.
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agent.retrieval.anchors import anchor_vocabulary, anchors, answer_sentences, names_in
from agent.retrieval.citation_layout import (
    CITATION_RE,
    citations_in_place,
    cited_ids,
    once_in_a_row,
    with_citation,
)
from agent.text import content_terms, folded_words, listed

# "[8834b897]": an id written without its prefix (kept only when it is a context id)
BARE_ID_RE = re.compile(r"\[([0-9a-fA-F]{8})\]")
# "#chk_670" (a small model turning "Code 670" into an id), "#chk_12ab": no id at all
MALFORMED_RE = re.compile(r"\[?#chk_(?![0-9a-fA-F]{8}\b)\w*\]?")
# ids joined as a list ("in #chk_a and #chk_b", "#chk_a, #chk_b and #chk_c")
_ID_LIST = re.compile(
    r"#chk_[0-9a-fA-F]{8}\b(?:\s*(?:,\s*(?:and\s+)?|and\s+|&\s*)#chk_[0-9a-fA-F]{8}\b)+"
)


def _known_in_list(ids: str, known: set[str]) -> str:
    """A list of ids without those outside ``known``, joined again ("a, b and c"), so an
    unknown one leaves no stray "and" or comma behind."""
    return listed([i for i in re.findall(r"#chk_[0-9a-fA-F]{8}", ids) if i.lower() in known])


def tidy_spacing(text: str) -> str:
    """``text`` without the runs of spaces and the space before punctuation that taking
    ids out of it leaves."""
    return re.sub(r"[ \t]+([.,;:!?])", r"\1", re.sub(r"[ \t]{2,}", " ", text))


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


def unknown_citations(answer: str, known: Iterable[str]) -> int:
    """How many citations in ``answer`` name an id outside ``known`` (each occurrence counts):
    what the guard removes, recorded with the message."""
    allowed = set(known)
    unknown = sum(
        1 for m in CITATION_RE.finditer(answer) if "#chk_" + m.group(1).lower() not in allowed
    )
    return unknown + len(MALFORMED_RE.findall(answer))


@dataclass(frozen=True)
class _Passages:
    """The context chunks as the guard compares them: content words and anchor words."""

    chunks: Sequence[CitableChunk]
    terms: dict[str, set[str]]
    words: dict[str, set[str]]
    names: set[str]
    vocabulary: frozenset[str]
    """Every chunk's content words together."""

    @classmethod
    def of(cls, chunks: Sequence[CitableChunk]) -> _Passages:
        names: set[str] = set()
        for c in chunks:
            names |= names_in(c.text)
        terms = {c.citation_id: _terms(c.text) for c in chunks}
        return cls(
            chunks,
            terms,
            {c.citation_id: anchor_vocabulary(c.text) for c in chunks},
            names,
            frozenset().union(*terms.values()),
        )

    def best(self, terms: set[str], marks: set[str]) -> tuple[str, int, int]:
        """The chunk holding most of the sentence's names and numbers, then most of its
        words (ties go to the better-ranked chunk): its id, anchors and words in common."""
        best_id, best = self.chunks[0].citation_id, (-1, -1)
        for c in self.chunks:
            cid = c.citation_id
            score = (len(marks & self.words[cid]), len(terms & self.terms[cid]))
            if score > best:
                best_id, best = cid, score
        return best_id, *best


def _added(terms: set[str], asked: set[str]) -> set[str]:
    """The words a sentence adds to the question, forms of its words aside ("painted" for
    "paint")."""
    return {w for w in terms - asked if not any(_kin(w, a) for a in asked)}


def _answer_words_elsewhere(
    ids: list[str], added: set[str], asked: set[str], passages: _Passages
) -> str | None:
    """The passage holding more of the words a sentence ``added`` to the question than any
    it cites, if one does ("turns into a pig" cites where "pig" is, not where "baby" is)."""
    if not ids or not asked or not added:
        return None

    def holds(cid: str) -> int:
        return len(added & passages.terms[cid])

    # max keeps the first of equals: ties go to the better-ranked passage
    best = max((c.citation_id for c in passages.chunks), key=holds)
    return best if holds(best) > max(holds(i) for i in ids) else None


def _kin(a: str, b: str) -> bool:
    """Whether two content words are one word's forms ("pig", "pigs"; "flamingo",
    "flamingoes"; "amiable", "amiably"): equal but for a plural "s", or sharing all but the
    shorter one's last two letters (four at least)."""
    if a.rstrip("s") == b.rstrip("s"):
        return True
    return len(os.path.commonprefix([a, b])) >= max(4, min(len(a), len(b)) - 2)


_SPACED_CITATION = re.compile(rf"[ \t]*(?:{CITATION_RE.pattern})")
# the words of a noun phrase: what follows "a", "the", "his"… ("turns into a pig")
_NOUN_PHRASE = re.compile(
    r"\b(?:a|an|the|his|her|its|their|some|this|that)\s+([\w'-]+(?:\s+[\w'-]+)?)", re.I
)


def _held_nowhere(sentence: str, terms: set[str], asked: set[str], passages: _Passages) -> bool:
    """Whether a sentence adds to the question a thing it names (a noun phrase's word) and
    no passage holds any word it adds, nor a form of one: what it states comes from the
    model, not from the documents ("The Duchess's baby turns into a pig" when no passage
    says "pig"). A sentence that adds only a verb ("She shrank") is left to the other
    checks: a model retells a passage in its own verbs."""
    added = {w for w in terms - asked if w.rstrip("s") not in asked}
    if not asked or not added:
        return False
    named = set().union(*(_terms(m) for m in _NOUN_PHRASE.findall(sentence))) & added
    if not named:
        return False
    return not any(_kin(a, h) for a in added for h in passages.vocabulary)


def _recite(
    sentence: str,
    passages: _Passages,
    min_support: int,
    asked: set[str],
    asked_marks: frozenset[str],
) -> str:
    """One sentence with its citation moved to, or given, the chunk that supports it; the
    names and numbers it repeats from the question (``asked_marks``) do not decide where."""
    plain = CITATION_RE.sub(" ", sentence)
    terms, marks = _terms(plain), anchors(plain, passages.names) - asked_marks
    added = _added(terms, asked)
    ids = cited_ids(sentence)
    if ids and _held_nowhere(plain, terms, asked, passages):  # no passage supports it: cite none
        return tidy_spacing(_SPACED_CITATION.sub("", sentence))
    if len(terms) < min_support and not marks:
        return _move(sentence, ids, _answer_words_elsewhere(ids, added, asked, passages))
    best_id, best_marks, best_terms = passages.best(terms, marks)
    if not ids:
        # from one passage: most of its words, or every name and figure it states with more
        # of its words, or with every word it adds to the question ("Dinah.", "Iwan Roberts
        # is 1.91 m tall." from the passage giving "Height 6 ft 3 in (1.91 m)")
        named = bool(marks) and best_marks == len(marks)
        rest_held = not (terms - asked) - passages.terms[best_id]
        clear = best_terms >= min_support or (
            named and (len(marks) >= 2 and best_terms >= 2 or rest_held)
        )
        return with_citation(sentence, best_id) if clear else sentence
    covered = set().union(*(passages.words[i] for i in ids)) & marks
    supported = max(len(terms & passages.terms[i]) for i in ids)
    # the name or figure the sentence states is in another passage than the one it cites;
    # or, names alike, another passage shares far more of its words, and as many of those
    # it adds to the question (the question's own words, "the lantern room was painted
    # ochre", are in the passages that do not say "ochre")
    moved = best_marks > len(covered) and best_terms > 0
    moved = moved or (
        best_marks >= len(covered)
        and best_terms >= min_support
        and best_id not in ids
        and supported * 2 < best_terms
        and len(added & passages.terms[best_id]) >= max(len(added & passages.terms[i]) for i in ids)
    )
    if moved:
        return _move(sentence, ids, best_id)
    return _move(sentence, ids, _answer_words_elsewhere(ids, added, asked, passages))


def _move(sentence: str, ids: list[str], to: str | None) -> str:
    """``sentence`` citing ``to`` instead of ``ids`` (unchanged when ``to`` is None); ids
    that all move to ``to`` leave it written once."""
    if to is None:
        return sentence
    for i in ids:
        sentence = sentence.replace(i, to)
    return once_in_a_row(sentence)


def guard_citations(
    answer: str, chunks: Sequence[CitableChunk], min_support: int = 3, question: str = ""
) -> str:
    """Return ``answer`` citing only ids from ``chunks``, each where it is supported.

    1. Normalise every spelling of an id to ``#chk_xxxxxxxx`` (a context id's bare hex in
       brackets too); drop ids not in the context and ``#chk_`` marks that are no id.
    2. Ids go to the end of the sentence they belong to: ids on a line of their own join
       the sentence above, ids opening a line or the answer its first sentence
       (:func:`agent.retrieval.citation_layout.citations_in_place`).
    3. Per sentence: a citation whose chunk lacks a name or number the sentence states moves
       to the chunk that has more of them (:mod:`agent.retrieval.anchors`); one whose chunk
       shares far fewer content words with the sentence than another context chunk (at
       least ``min_support`` words) moves to that one; a sentence with no citation gets the
       chunk it clearly comes from, if any.
    4. With the ``question``: a citation moves to the chunk holding more of the words the
       sentence adds to the question (its answer) than the chunks it cites; a sentence
       that names a thing and whose added words no chunk holds (in any form) cites none.
    """
    known = {c.citation_id for c in chunks}

    def fix(m: re.Match) -> str:
        cid = "#chk_" + m.group(1).lower()
        return cid if cid in known else ""

    def bare(m: re.Match) -> str:
        cid = "#chk_" + m.group(1).lower()
        return cid if cid in known else m.group(0)

    answer = _ID_LIST.sub(lambda m: _known_in_list(m.group(0), known), answer)
    cleaned = MALFORMED_RE.sub("", CITATION_RE.sub(fix, BARE_ID_RE.sub(bare, answer)))
    cleaned = tidy_spacing(cleaned).strip()
    cleaned = re.sub(r"\(\s*[,;]?\s*\)", "", cleaned)
    cleaned = re.sub(r"^[:;,]\s*", "", cleaned)  # what an id opening the answer left
    cleaned = citations_in_place(cleaned)
    if not chunks:
        return cleaned
    passages = _Passages.of(chunks)
    # a citation right after the full stop still belongs to that sentence
    sentences = answer_sentences(cleaned)
    asked = _terms(question)
    asked_marks = frozenset(anchors(question, passages.names))
    return "".join(_recite(s, passages, min_support, asked, asked_marks) for s in sentences)


def format_source(title: str, chapter: str | None, section: str | None, page: int | None) -> str:
    """``Title, Chapter, Section (p. N)`` with missing parts left out, and a part that only
    repeats the one before it (a paper whose outline opens with its own title)."""
    parts: list[str] = []
    for part in (title, chapter, section):
        if part and (not parts or folded_words(part) != folded_words(parts[-1])):
            parts.append(part)
    label = ", ".join(parts)
    page_part = f"(p. {page})" if page is not None else ""
    return " ".join(x for x in (label, page_part) if x)


def unique(items: Iterable[str]) -> list[str]:
    """Items in first-seen order without repeats."""
    return list(dict.fromkeys(items))
