"""A question about one year, answered with what the passages say about another.

"Who was Huddersfield Town's manager when Roberts joined them in 1990?" answered "Neil
Warnock, Huddersfield's manager, needed to sell players…": the article names Warnock beside
Roberts' sale in 1993, never as the manager of 1990, and the 1.5B model copied the sentence
that has "Huddersfield" and "manager". "Which crew won the rowing race in 2019?" answered
with 2022's winner is the same miss. The year is in some passage, so
:func:`~agent.retrieval.pinned_figures.unheld_pins` lets the question through.

:func:`answer_of_another_year` tells such answers apart: the answer leaves the asked year
out, and every passage sentence it was drawn from (those holding the most of what it adds:
the names the question lacks that most passages do not hold, and all of its new figures)
is about another year and none asked (its own years, or its neighbours' when it names
none). An answer no passage sentence holds any of, or one drawn from a sentence with no year
near, is left to the other checks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from agent.ingest.sentences import split_sentences
from agent.retrieval.anchors import anchor_vocabulary, anchors, held_by_most
from agent.retrieval.citations import CITATION_RE
from agent.retrieval.held_figures import figure_values

_YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b")

NEAR = 1
"""Sentences either side of a sentence naming no year that may hold the year it is about."""


def _years(text: str) -> set[str]:
    return set(_YEAR.findall(text))


def _windows(passage: str) -> list[tuple[set[str], set[float], set[str]]]:
    """Each sentence's words and figures, with the years it is about: its own, or when it
    names none, those of its :data:`NEAR` neighbours."""
    sentences = split_sentences(" ".join(passage.split()))
    years = [_years(s) for s in sentences]
    return [
        (
            anchor_vocabulary(s),
            figure_values(s),
            years[i] or set().union(*years[max(0, i - NEAR) : i + NEAR + 1]),
        )
        for i, s in enumerate(sentences)
    ]


def answer_of_another_year(answer: str, question: str, passages: Iterable[str]) -> bool:
    """Whether ``answer`` to a question about a year says only what the ``passages`` (each
    with its label) state beside another year (see the module docs)."""
    asked = _years(question)
    plain = CITATION_RE.sub(" ", answer)
    if not asked or asked & _years(plain):
        return False
    texts = list(passages)
    vocabularies = [anchor_vocabulary(t) for t in texts]
    known = anchor_vocabulary(question)
    names = {
        a
        for a in anchors(plain)
        if not a[0].isdigit() and a not in known and not held_by_most(a, vocabularies)
    }
    figures = figure_values(plain) - figure_values(question)
    if not names and not figures:
        return False  # nothing added that a sentence could be drawn from
    # the sentences the answer was drawn from: those holding the most of what it adds
    scored = [
        (len(names & words) + (len(figures) if figures and figures <= values else 0), near)
        for t in texts
        for words, values, near in _windows(t)
    ]
    best = max((score for score, _ in scored), default=0)
    stating = [near for score, near in scored if best and score == best]
    return bool(stating) and all(near and not near & asked for near in stating)
