"""The question's words as evidence when no chunk is similar enough (steps of
:func:`agent.retrieval.ranking.rank`): keyword hits that hold most of the question's
weight, and documents that know the words of a question none of their chunks is near."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from agent.db.keyword_sql import question_words_known, term_shares
from agent.db.scope import SearchScope
from agent.retrieval.anchors import anchors
from agent.retrieval.candidates import Found
from agent.retrieval.reads import Reads
from agent.retrieval.types import Layer

Scored = list[tuple[uuid.UUID, float]]

WORDS_HELD_SHARE = 0.7
"""The share of a question's IDF weight (:func:`~agent.db.keyword_sql.term_shares`) a
keyword hit must hold to be about the question when no chunk is similar enough. Measured
with each question's own documents in scope: the unanswerable questions of our two eval
sets share at most 0.43 with a chunk (0.69 with every document of the set in scope)."""
WORDS_HELD_CANDIDATES = 3

KNOWN_WORDS_SHARE = 0.4
"""The share of a question's IDF weight the documents in scope must hold, when no chunk is
near it, for it to be about them (:attr:`QuestionWords.about_the_documents`). Measured on
the questions of our three eval sets that no chunk is near: general questions share 0-0.58
("the speed of light in a vacuum" with a novel), questions about the documents 0.46-0.63
("the name of the volunteer lock-keeper's dog": "dog" and "name" are what the podcast
lacks)."""

KNOWN_NEAREST = 0.2
"""The cosine the chunk nearest such a question must reach: "What is the speed of light in a
vacuum?" shares 0.58 of its weight with Pride and Prejudice ("speed", "light") but is 0.17
from its nearest chunk, and read from the fused ranking the model answered with "The good
news quickly spread … with proportionate speed"; the questions about the files' own jargon
were 0.26-0.29 from theirs."""

_ACRONYM = re.compile(r"\b[A-Z][A-Z0-9]{1,}\b")


async def held_words(
    reads: Reads, scope: SearchScope, query: str, found: Found, scored: Scored
) -> Scored:
    """The best keyword hits among ``scored`` that hold most of the question's IDF weight,
    in keyword order, with their fused scores.

    The small embedder can miss a passage that names exactly what is asked (0.2 cosine for
    "Who plays Sauron in the example about the Lord of the Rings?" against the paragraph
    that says "Sala Baker ... the villain Sauron in the Lord of the Rings"): no similarity
    floor let it in, and the question was answered as not covered. Its words show that the
    documents do cover it. They also join a ``low_threshold`` layer (a price list at 0.39
    was preferred to "curated the exhibition" at 0.26), not chunks clearing the threshold:
    there they were new passages for follow-ups (418 tokens instead of 67), no answer."""
    fused = dict(scored)
    top = [h.chunk_id for h in found.keyword[0] if h.chunk_id in fused][:WORDS_HELD_CANDIDATES]
    pairs = [(found.records[cid].document_id, cid) for cid in top]
    shares = await reads.read(lambda conn: term_shares(conn, scope, query, pairs))
    return [(cid, fused[cid]) for cid in top if shares.get(cid, 0.0) >= WORDS_HELD_SHARE]


async def with_held_words(
    reads: Reads,
    scope: SearchScope,
    query: str,
    found: Found,
    scored: Scored,
    layer: Layer,
    picked: Scored,
) -> tuple[Layer, Scored]:
    """``layer`` and its ``picked`` chunks, with :func:`held_words` when nothing or only
    loosely similar chunks were found: those alone (the ``keyword`` layer) after
    ``any_embedded``, joining the loosely similar ones in fused order after
    ``low_threshold``."""
    if layer not in ("any_embedded", "low_threshold") or not found.keyword:
        return layer, picked
    held = await held_words(reads, scope, query, found, scored)
    if not held:
        return layer, picked
    if layer == "any_embedded":
        return "keyword", held
    joined = {c for c, _ in picked + held}
    return layer, [(c, s) for c, s in scored if c in joined]


@dataclass(frozen=True)
class QuestionWords:
    """What the documents in scope know of a question no chunk is near: the share of its
    IDF weight their terms hold, its names (figures and acronyms among them) they never
    use, and the names it shares with the chunks found for it, as written there."""

    share: float
    unknown_names: tuple[str, ...]
    known_names: tuple[str, ...]
    nearest: float
    """The cosine of the chunk nearest the question."""

    @property
    def about_the_documents(self) -> bool:
        """Most of its words and every name it uses are theirs (:data:`KNOWN_WORDS_SHARE`),
        and their nearest chunk is at least loosely on its topic (:data:`KNOWN_NEAREST`)."""
        return (
            self.share >= KNOWN_WORDS_SHARE
            and not self.unknown_names
            and self.nearest >= KNOWN_NEAREST
        )


def question_names(query: str) -> list[str]:
    """The names, figures and acronyms of ``query`` as written (its first word only when
    it is an acronym): what the documents must know for the question to be about them."""
    return sorted({w for run in _name_runs(query) for w in run.split()})


def _name_runs(query: str) -> list[str]:
    """:func:`question_names` in the question's order, a run of them one name ("World Cup")."""
    lowered = anchors(query) | {a.lower() for a in _ACRONYM.findall(query)}
    runs: list[list[str]] = []
    last = -2
    for i, m in enumerate(re.finditer(r"[A-Za-z0-9]+(?:[.,:]\d+)*", query)):
        word = m.group(0)
        if len(word) > 1 and word.replace(",", "").lower() in lowered:
            if i == last + 1 and not word[0].isdigit() and not runs[-1][-1][0].isdigit():
                runs[-1].append(word)
            else:
                runs.append([word])
            last = i
    return [" ".join(run) for run in runs]


def names_used(query: str, texts: Iterable[str]) -> tuple[str, ...]:
    """The names of ``query`` (capitalised runs, no figures) that one of ``texts`` writes as
    the question does: "Ewan" in "kept by Ewan Lutterworth", not "World Cup" in a novel that
    has a cup and the world."""
    texts = list(texts)
    return tuple(
        name
        for name in _name_runs(query)
        if not name[0].isdigit()
        and any(re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", t) for t in texts)
    )


async def question_words(
    reads: Reads, scope: SearchScope, query: str, found: Found, nearest: float
) -> QuestionWords:
    """What the documents in scope know of ``query`` (see :class:`QuestionWords`), the
    chunks ``found`` for it read for its names; ``nearest``: the best chunk's cosine.

    MiniLM puts a question about a notebook's own jargon far from every chunk ("the serial
    number of the multiprobe kept as the main instrument": 0.26 against the header that
    lists "multiprobe #2 (serial MP2-0448)"), and it was answered as not covered, from
    "general knowledge" that the 1.5B model makes up ("serial number 12345", "the
    lock-keeper's dog is Max"). A question :attr:`~QuestionWords.about_the_documents` is
    answered from the passages, which say "not found" when they do not hold it; one naming
    what the documents never do ("the capital of Peru", "the 2018 World Cup") stays a
    general one, unless it names what they do (``known_names``)."""
    share, unknown = await reads.read(
        lambda conn: question_words_known(conn, scope, query, question_names(query))
    )
    known = names_used(query, (r.text for r in found.records.values()))
    return QuestionWords(share, tuple(unknown), known, nearest)
