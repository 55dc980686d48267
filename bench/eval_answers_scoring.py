"""Scoring one answer of ``quire eval answers``: match, SQuAD token F1, refusal, and the
validity and support of its ``#chk_`` citations (the definitions in
:mod:`bench.eval_answers`)."""

from __future__ import annotations

import re
import string
from collections import Counter
from dataclasses import dataclass

from bench.eval_answers_data import Item

REFUSAL_PHRASES = (
    "don't seem to cover",
    "do not cover",
    "don't cover",
    "does not cover",
    "doesn't cover",
    "not covered",
    "not enough information",
    "not contain",
    "no information",
    "cannot find",
    "can't find",
    "couldn't find",
    "could not find",
    "not mentioned",
    "does not mention",
    "doesn't mention",
    "not in your documents",
    "not in the documents",
    "does not come from their documents",
    "i don't know",
    "i do not know",
)
"""Lower-case phrases that mark an answer as saying the documents do not answer it."""

# "is not explicitly mentioned", "does not specifically state": a refusal with an adverb
_NOT_STATED = re.compile(
    r"\b(?:is|are|was|were|does|do|did) not (?:\w+ly )?"
    r"(?:mentioned|stated|specified|provided|mention|state|specify|provide|say)\b"
)

_CONTRACTED = re.compile(r"\b(do|does|did|is|are|was|were)n't\b")

CITATION = re.compile(r"#chk_[0-9a-f]{8}")


def _tokens(text: str) -> list[str]:
    text = CITATION.sub(" ", text.lower())
    text = "".join(" " if c in string.punctuation else c for c in text)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return text.split()


def token_f1(answer: str, gold: str) -> float:
    """SQuAD token F1 of ``answer`` against one acceptable answer."""
    got, want = _tokens(answer), _tokens(gold)
    if not got or not want:
        return 0.0
    common = sum((Counter(got) & Counter(want)).values())
    if not common:
        return 0.0
    precision, recall = common / len(got), common / len(want)
    return 2 * precision * recall / (precision + recall)


def best_f1(answer: str, golds: list[str]) -> float:
    """The best token F1 over the acceptable answers (0 when there are none)."""
    return max((token_f1(answer, g) for g in golds), default=0.0)


def contains_match(answer: str, golds: list[str]) -> bool:
    """An acceptable answer occurs in ``answer`` (case-insensitive)."""
    low = answer.lower()
    return any(g.lower() in low for g in golds if g)


def is_refusal(answer: str, model_used: str | None = None) -> bool:
    """The answer says the documents do not answer the question."""
    if model_used == "no_context_response":
        return True
    low = answer.lower().replace("’", "'")
    plain = _CONTRACTED.sub(r"\1 not", low)  # "don't contain", "doesn't say" as written out
    return any(p in low or p in plain for p in REFUSAL_PHRASES) or bool(_NOT_STATED.search(plain))


def cited_ids(answer: str) -> list[str]:
    """Distinct ``#chk_`` ids of an answer, in order."""
    return list(dict.fromkeys(CITATION.findall(answer)))


def _norm_id(cid: str) -> str:
    return "#" + cid.lstrip("#")


@dataclass
class QuestionResult:
    """One question, answered one way (graph or baseline)."""

    question: str
    system: str
    """``rag`` (the chat graph) or ``baseline`` (no retrieval)."""
    route: str
    expected_route: str | None
    unanswerable: bool
    answer: str
    model_used: str | None
    match: bool
    f1: float | None
    refused: bool
    cited: int
    cited_valid: int
    cited_supporting: int
    seconds: float
    tokens: int
    in_context: bool | None = None
    """Whether a passage the model read held an acceptable answer (answerable questions on
    a retrieval path; ``None`` otherwise): a miss with it is the model's, without it the
    retrieval's."""


def score(
    item: Item,
    *,
    system: str,
    route: str,
    answer: str,
    model_used: str | None,
    chunk_map: dict,
    citations: list[dict],
    seconds: float,
    tokens: int,
    shown: list[str] | None = None,
) -> QuestionResult:
    """Score one answer (see the module docs); ``shown`` is the text of each passage the
    model read (``None``: none was retrieved)."""
    refused = is_refusal(answer, model_used)
    ids = cited_ids(answer)
    keys = {_norm_id(k) for k in chunk_map}
    texts = {_norm_id(str(c.get("id", ""))): str(c.get("text") or "") for c in citations}
    valid = [i for i in ids if i in keys]
    supporting = [i for i in valid if contains_match(texts.get(i, ""), item.answers)]
    return QuestionResult(
        question=item.question,
        system=system,
        route=route,
        expected_route=item.expected_route,
        unanswerable=item.unanswerable,
        answer=answer[:600],
        model_used=model_used,
        match=refused if item.unanswerable else contains_match(answer, item.answers),
        f1=None if item.unanswerable else round(best_f1(answer, item.answers), 4),
        refused=refused,
        cited=len(ids),
        cited_valid=len(valid),
        cited_supporting=0 if item.unanswerable else len(supporting),
        seconds=round(seconds, 3),
        tokens=tokens,
        in_context=(
            None
            if item.unanswerable or shown is None
            else any(contains_match(t, item.answers) for t in shown)
        ),
    )
