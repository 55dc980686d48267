"""A focused passage that answers "who" names someone: when the sentences kept for a question
asking for a person or a name name no one the question does not, the nearest sentence left
out beside them that does is kept too.

A novel's sentences often say "he" for a man named two lines before or after: "Who pays
Wickham's debts…?" kept "…it only remained, he thought, to secure and expedite a marriage…
He confessed himself obliged to leave the regiment on account of some debts…" and cut
"Mr. Darcy asked why he did not marry your sister at once.", the next sentence, so the answer
was in no passage the model read. Used by :mod:`agent.retrieval.focus`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.retrieval.anchors import anchor_vocabulary, anchors, names_in
from agent.retrieval.asked_names import ASKS_FOR_SOMEONE, asks_for_a_name

# "Who is Dinah?" names the one asked about and wants what she is ("Alice's cat"), no name
_WHO_IS_NAMED = re.compile(r"^\W*(?i:who\s+(?:is|was|are|were))\s+(?:[A-Z][\w'’.-]*\s*)+\W*$")

NAME_REACH = 2
"""How far (in sentences) from a kept one a naming sentence may be: the next sentence, or
the one after it (the sentence between stays left out, shown as a gap)."""


def asks_for_someone(question: str) -> bool:
    """Whether ``question`` asks who ("Who…", "Whom…", "Whose…") or for a name; "Who is
    Dinah?" (only names after "who is") asks what someone named is, not for a name."""
    if _WHO_IS_NAMED.search(question.strip()):
        return False
    return bool(ASKS_FOR_SOMEONE.search(question)) or asks_for_a_name(question)


def with_a_naming_sentence(
    question: str,
    sentences: Sequence[str],
    keep: list[int],
    lengths: Sequence[int],
    limit: int | None,
) -> list[int]:
    """``keep`` (indexes of ``sentences``, in order) with the nearest sentence within
    :data:`NAME_REACH` of a kept one that names someone the question does not, when the
    question asks for someone (:func:`asks_for_someone`), no kept sentence names anyone new
    and it fits within ``limit`` characters (``lengths``: of each sentence)."""
    if not keep or not asks_for_someone(question):
        return keep
    asked = anchor_vocabulary(question)
    known = names_in(" ".join(sentences))  # a name opening a sentence counts (see anchors)

    def names_someone(i: int) -> bool:
        return any(not a[0].isdigit() and a not in asked for a in anchors(sentences[i], known))

    if any(names_someone(i) for i in keep):
        return keep
    kept = set(keep)
    near = sorted(
        {
            (abs(j - i), j)
            for i in keep
            for j in range(i - NAME_REACH, i + NAME_REACH + 1)
            if 0 <= j < len(sentences) and j not in kept
        }
    )
    total = sum(lengths[i] + 1 for i in keep)
    for _, j in near:
        if names_someone(j) and (limit is None or total + lengths[j] + 1 <= limit):
            return sorted(kept | {j})
    return keep
