"""Sentences an answer says twice.

A small model caught in a loop writes the same sentence again, often with the same
citation ("They were both described as large … #chk_423e7bd9. They were both described as
large … #chk_423e7bd9."). Repeating it adds nothing, so every copy after the first goes.
Only a sentence of :data:`MIN_WORDS` words or more counts: "Yes." twice may be two answers.
"""

from __future__ import annotations

import re

from agent.retrieval.anchors import answer_sentences
from agent.retrieval.citation_layout import CITATION_RE

MIN_WORDS = 4
"""Fewest words a sentence needs for its repeat to be dropped."""

_WORD = re.compile(r"\w+")


def _said(sentence: str) -> tuple[str, ...]:
    """The words of ``sentence`` without its citations, lower-cased."""
    return tuple(_WORD.findall(CITATION_RE.sub(" ", sentence).lower()))


def without_repeated_sentences(answer: str) -> str:
    """``answer`` with each sentence that repeats an earlier one word for word (its
    citations, case and punctuation aside) left out; unchanged when none does."""
    sentences = answer_sentences(answer)
    seen: set[tuple[str, ...]] = set()
    kept: list[str] = []
    for sentence in sentences:
        words = _said(sentence)
        if len(words) >= MIN_WORDS and words in seen:
            continue
        seen.add(words)
        kept.append(sentence)
    return "".join(kept).rstrip() if len(kept) < len(sentences) else answer
