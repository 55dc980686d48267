"""Capitalised words that name nothing, for the checks that look for the names a sentence
states (:mod:`agent.retrieval.anchors`: what a citation must hold; :mod:`agent.retrieval.
asked_names`: whether a name was given). A sentence, or what follows a colon or a dash,
opens with a capital, and a small model capitalises its labels."""

from __future__ import annotations

from agent.text import STOPWORDS

SENTENCE_WORDS = STOPWORDS | {
    "according",
    "after",
    "also",
    "based",
    "before",
    "both",
    "here",
    "him",
    "however",
    "if",
    "no",
    "one",
    "our",
    "sorry",
    "then",
    "these",
    "those",
    "unfortunately",
    "yes",
}
"""Pronouns, articles, question words and the words an answer's sentence opens with."""

TITLES = frozenset({"mr", "mrs", "ms", "miss", "dr", "sir", "lady", "lord", "st"})
"""Titles before a name: "Mr. Darcy" names Darcy."""

LABEL_WORDS = frozenset({"chapter", "part", "page", "book", "section"})
"""Words of a passage's label ("Chapter V", "Page 3"), which a model copies capitalised."""
