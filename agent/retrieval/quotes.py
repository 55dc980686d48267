"""An answer made of citation ids alone, turned into the sentence those ids point at.

A small model sometimes answers with nothing but "#chk_4654e6e4": it found the passage
and said nothing. The passage it named usually holds the answer, so the reader is shown
that passage's sentence sharing the most words with the question, quoted and cited,
rather than being told nothing was found.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from agent.ingest.sentences import split_sentences
from agent.retrieval.citations import CITATION_RE, cited_ids
from agent.retrieval.focus import GAP
from agent.text import content_terms

_GAP = re.compile(rf"\s*{re.escape(GAP)}\s*")  # where a focused passage left sentences out


def is_bare_citation(answer: str) -> bool:
    """Whether ``answer`` holds citation ids and nothing else but punctuation."""
    return bool(cited_ids(answer)) and not re.search(r"\w", CITATION_RE.sub(" ", answer))


def pointed_sentence(
    answer: str, passages: Mapping[str, str], question: str
) -> tuple[str, str] | None:
    """The sentence, and its citation id, that a bare-citation ``answer`` points at.

    ``passages`` maps a ``#chk_…`` id to the text the model read under it. Of the cited
    passages' sentences, the one sharing the most question words wins (the earlier on a
    tie); it must share two (one, for a one-word question). ``None`` when ``answer`` is
    more than ids or no sentence qualifies."""
    if not is_bare_citation(answer):
        return None
    wanted = content_terms(question)
    best: tuple[int, str, str] | None = None
    for cid in cited_ids(answer):
        pieces = [p for line in passages.get(cid, "").splitlines() for p in _GAP.split(line)]
        for piece in pieces:  # a line ("Author: …") or a gap ends a sentence
            for sentence in split_sentences(" ".join(piece.split())):
                score = len(wanted & content_terms(sentence))
                if best is None or score > best[0]:
                    best = (score, sentence, cid)
    if best is None or best[0] < min(2, len(wanted)) or not wanted:
        return None
    return best[1], best[2]
