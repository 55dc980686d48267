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

A question may end on what it is about in lower case: "Which fluorescent proteins were
used to tag proteins in zebrafish?" over an abstract about C. elegans was answered "Citrine
and tdEos were used to tag proteins in zebrafish #chk_…". A bare noun after a preposition,
the question's last word, that no passage holds (nor a word sharing its first
:data:`SETTING_PREFIX` letters: "mice" for "mouse" is not), repeated in a cited answer,
counts as such a name.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from agent.retrieval.anchors import anchor_vocabulary, anchors, vocabulary_of
from agent.retrieval.citations import CITATION_RE
from agent.retrieval.name_words import TITLES

TYPO_CUTOFF = 0.8
"""Similarity (difflib's ratio) at which a passage word is the question's name misspelt."""
TYPO_MIN_LENGTH = 4
"""Names this long or longer may be misspelt; a shorter one must be held as written."""
SETTING_PREFIX = 5
"""Letters a passage word must share with a question's closing noun to hold it."""
# "… in zebrafish?": a preposition, then one lower-case word ending the question
_CLOSING_SETTING = re.compile(
    r"\b(?:in|among|for|from|on|at|with|by|during|under|across|within)\s+([a-z][a-z-]{3,})\W*$"
)


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
    passages = list(passages)
    if _ties_to_an_unheld_setting(answer, plain, question, passages):
        return True
    asked = {a for a in anchors(question) if not a[0].isdigit() and a not in TITLES}
    repeated = asked & anchor_vocabulary(plain)
    if not repeated:
        return False
    added = anchors(plain) - TITLES - anchor_vocabulary(question)
    if not added:
        return False  # "Your documents do not mention Italy": a refusal in its own words
    vocabulary = vocabulary_of(passages)
    return any(not _held(name, vocabulary) for name in repeated)


def _ties_to_an_unheld_setting(
    answer: str, plain: str, question: str, passages: Iterable[str]
) -> bool:
    """Whether the cited ``answer`` repeats the noun closing ``question`` ("… in zebrafish?")
    that no passage holds (see the module docs)."""
    closing = _CLOSING_SETTING.search(question)
    if closing is None or not CITATION_RE.search(answer):
        return False
    noun = closing.group(1)
    if noun not in anchor_vocabulary(plain):
        return False
    prefix = noun[:SETTING_PREFIX]
    return not any(w.startswith(prefix) for w in vocabulary_of(passages))
