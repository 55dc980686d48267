"""Sentences the model copied from the worked examples instead of the passages.

A grounded prompt opens with worked exchanges on a made-up document
(:data:`agent.prompts.GROUNDED_EXAMPLES`). The 1.5B model sometimes answers from them: "Lady
Catherine's daughter … is Marta" (the examples' keeper's daughter), "Roberts paid for the
repairs." for a football manager, "the keeper will inherit Longbourn". Nothing in the
examples can answer a reader's question, so such a sentence is never right: it is dropped.
An example's ``#chk_`` id alone proves nothing: the model often ends a right answer with
one, and the citation guard drops it as unknown and cites the passage that holds the
sentence's words.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent.retrieval.anchors import answer_sentences
from agent.retrieval.citation_layout import CITATION_RE
from agent.text import content_terms

EXAMPLE_TERMS = frozenset(
    ["harbour", "lighthouse", "keeper", "lamp", "taper", "brass", "marta", "pier", "repair"]
)
"""The made-up document's own words (singular): a sentence holding one that neither the
passages nor the question hold took it from the examples. Words the examples share with
ordinary answers ("paid", "year", "father") are left out: measured on 881 stored answers,
they flag right answers."""

# as content_terms reads a text (crudely singular: "repairs" -> "repair", "brass" -> "bras")
_TERMS = frozenset(content_terms(" ".join(EXAMPLE_TERMS)))


def is_example_echo(sentence: str, known: set[str]) -> bool:
    """Whether ``sentence`` holds one of the worked examples' :data:`EXAMPLE_TERMS` that no
    ``known`` word (:func:`~agent.text.content_terms` of the passages, the question) is."""
    return bool(content_terms(CITATION_RE.sub(" ", sentence)) & (_TERMS - known))


def without_example_echoes(answer: str, known: Iterable[str]) -> str:
    """``answer`` without the sentences copied from the worked examples (see the module
    docstring); ``known`` are the texts the model was shown (passages, question). Returns
    ``""`` when every sentence was one: the caller says the documents do not answer."""
    vocabulary = set().union(*(content_terms(t) for t in known))
    sentences = answer_sentences(answer.strip())
    kept = [s for s in sentences if not is_example_echo(s, vocabulary)]
    return answer if len(kept) == len(sentences) else "".join(kept).strip()
