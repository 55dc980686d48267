"""A figure asked for, answered with one a passage gives for something else.

"How much did Roberts weigh when he joined Wolves?" answered "Roberts weighed in at 15 stone
3 pounds (97 kg) #chk_…": the article gives his weight at Norwich, never at Wolves, and the
1.5B model dropped "Wolves" and gave the figure it found. "By what score did Leicester beat
Crystal Palace in the play-off final?" answered "Leicester won 2-1 against Derby in the
play-off final": another final's score. The figure is held, so
:func:`~agent.retrieval.held_figures.figures_unheld` lets it through, and the answer reads
as if it answered.

:func:`figure_for_something_else` tells such answers apart: the answer leaves out a name the
question gives (its qualifier: "Wolves", "Crystal Palace"), and no passage sentence stating
the figures it adds (all of them: a "1" alone is in every sentence) stands within a sentence
of a name it left out. A name most of the passages hold (the article's subject, "Roberts")
qualifies nothing: an answer leaving out only such names is not taken. An answer whose
figures no passage states plainly (a sum, a span) is left to the other checks.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent.ingest.sentences import split_sentences
from agent.retrieval.anchors import anchor_vocabulary, anchors, held_by_most
from agent.retrieval.asked_amounts import asks_for_a_figure
from agent.retrieval.citations import CITATION_RE
from agent.retrieval.held_figures import figure_values

NEAR = 1
"""Sentences either side of a figure's sentence that may hold the name it is about."""


def _windows(passage: str) -> list[tuple[set[float], set[str]]]:
    """Each sentence's figures, with the words of it and of its :data:`NEAR` neighbours."""
    sentences = split_sentences(" ".join(passage.split()))
    words = [anchor_vocabulary(s) for s in sentences]
    return [
        (
            figure_values(s),
            set().union(*words[max(0, i - NEAR) : i + NEAR + 1]),
        )
        for i, s in enumerate(sentences)
    ]


def figure_for_something_else(answer: str, question: str, passages: Iterable[str]) -> bool:
    """Whether ``answer`` gives the figure ``question`` asks for only as one that the
    ``passages`` (each with its label) state away from every question name the answer left
    out (see the module docs)."""
    if not asks_for_a_figure(question):
        return False
    plain = CITATION_RE.sub(" ", answer)
    new = figure_values(plain) - figure_values(question)
    if not new:
        return False
    texts = list(passages)
    said = anchor_vocabulary(plain)
    left_out = {a for a in anchors(question) if not a[0].isdigit() and a not in said}
    vocabularies = [anchor_vocabulary(t) for t in texts]
    # a name most passages hold is what they are all about, not the question's qualifier;
    # beside the figure, any name left out will do
    if all(held_by_most(a, vocabularies) for a in left_out):
        return False
    # the sentences stating every figure the answer adds ("2-1": a 1 alone is anywhere)
    stating = [near for t in texts for values, near in _windows(t) if new <= values]
    return bool(stating) and not any(left_out & near for near in stating)
