"""An answer whose every word beyond the question's is in no passage.

"What colour is the White Rabbit's waistcoat?" answered "The White Rabbit's waistcoat was
bright green #chk_…" over passages that never give a colour for it: a small model fills the
word asked for from its own idea of rabbits and waistcoats. The answer names no person and
gives no figure, so the checks for unheld names and figures let it through.
:func:`words_unheld` tells such answers apart: the words the answer adds to the question
(content words, crudely stemmed; words about passages and connectives aside) hold at least
one word, and not one of them is in a passage the model read, its label or its whole chunk
(what the citation opens: "LayoutParser can be installed using pip" cites a chunk whose
"pip install" line the focused passage left out). Words count as one when they share a root
("asks" and "asked", "waistcoats" and "waistcoat"; "shrank" and "shrinking", an irregular
past made its base), on the question's side too.

An extractive answer copies at least one word from its passage, so only an answer made of
the model's own words is caught; a single copied word ("five", "Dinah", or "pink", said of
the Rabbit's eyes) lets it through. A yes-or-no question may be answered in other words
("wealthy" for "Is he rich?"), and a figure an answer adds has checks of its own
(:mod:`agent.retrieval.held_figures`): neither counts here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from agent.retrieval.citations import CITATION_RE
from agent.retrieval.pointers import added_numbers, added_stems, asks_yes_or_no, word_stems

ROOT_LETTERS = 5
"""Letters of a root two words must share to count as one ("waistcoats", "waistcoat")."""


def _root(word: str) -> str:
    """``word`` without a plural or verb ending, cut to :data:`ROOT_LETTERS` letters."""
    bare = re.sub(r"(?:ing|ed|es|s)$", "", word) if len(word) > 3 else word
    return bare[:ROOT_LETTERS]


def words_unheld(answer: str, question: str, passages: Iterable[str]) -> bool:
    """Whether every word ``answer`` adds to ``question`` is in none of ``passages`` (see the
    module docs); ``False`` when it adds none (a restated question is another check's)."""
    plain = CITATION_RE.sub(" ", answer)
    if asks_yes_or_no(question) or added_numbers(plain, question):
        return False  # a verdict in other words ("wealthy" for "rich"); a figure's own checks
    asked = {_root(w) for w in word_stems(question)}
    added = {_root(w) for w in added_stems(plain, question)} - asked
    if not added:
        return False
    held = {_root(w) for text in passages for w in word_stems(text)}
    return not added & held
