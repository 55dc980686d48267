"""An answer that ties what it says to a name of the question no passage holds.

"What is the population of Italy?" over a table of Indonesia, Germany, Austria, France and
the Vatican, answered "The population of Italy is 67,413,000 #chk_…": the 1.5B model put
France's figure under the country asked about. "Whose name is used for Sir William's home
near Longbourn?" answered "…near Longbourn is called the Pemberley estate" over passages
that never say Longbourn. The figure or the name is held, so the other checks let it
through, yet no passage says it of the name the answer gives it to.

:func:`ties_to_an_unheld_name` tells such answers apart: the answer repeats a name of the
question (a capitalised word after its first, not a title such as "Mr") that none of the
passages, labels included, holds, nor a word spelled nearly alike (a user's typo, "Darcey"),
and adds a name or a figure of its own. An answer saying only that the passages do not
mention it adds nothing, and is left as written.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from agent.retrieval.anchors import anchor_vocabulary, anchors, vocabulary_of
from agent.retrieval.citations import CITATION_RE
from agent.retrieval.name_words import TITLES

TYPO_CUTOFF = 0.8
"""Similarity (difflib's ratio) at which a passage word is the question's name misspelt."""
TYPO_MIN_LENGTH = 4
"""Names this long or longer may be misspelt; a shorter one must be held as written."""


def _held(name: str, vocabulary: set[str]) -> bool:
    """Whether ``vocabulary`` holds ``name``, or (a long enough one) nearly its spelling."""
    if name in vocabulary:
        return True
    if len(name) < TYPO_MIN_LENGTH:
        return False
    return bool(difflib.get_close_matches(name, vocabulary, n=1, cutoff=TYPO_CUTOFF))


def ties_to_an_unheld_name(answer: str, question: str, passages: Iterable[str]) -> bool:
    """Whether ``answer`` states a name or a figure of its own about a name of ``question``
    that none of ``passages`` (each with its label) holds (see the module docs)."""
    plain = CITATION_RE.sub(" ", answer)
    asked = {a for a in anchors(question) if not a[0].isdigit() and a not in TITLES}
    repeated = asked & anchor_vocabulary(plain)
    if not repeated:
        return False
    added = anchors(plain) - TITLES - anchor_vocabulary(question)
    if not added:
        return False  # "Your documents do not mention Italy": a refusal in its own words
    vocabulary = vocabulary_of(passages)
    return any(not _held(name, vocabulary) for name in repeated)
