"""LLM rerank of the first-stage candidates (seed 002 step 8).

No packaged cross-encoder exists offline (see MODELS.md), so the chat model judges relevance:

* the local llama.cpp model scores each passage by query likelihood (UPR, Sachan et al.
  2022): shown the passage and asked to write the query it answers, how likely is the user's
  actual query, token by token (mean log-probability)? The scores of one query's candidates
  are scaled to 0..1 (min-max). No text is generated; the system prompt stays in llama.cpp's
  KV cache. On SciFact it beat asking the same model "is this passage relevant? Yes/No"
  (relevance alone 0.775 vs 0.649 nDCG@10, which the first stage beats at 0.76-0.79). It
  runs next to the model, in its process (:mod:`agent.model_server.scoring`).
* any other chat model (hosted: no cheap log-probabilities here) scores every passage 0-10
  in one batch call.

Either way the relevance is blended with the first-stage rank (:func:`combine_scores`): a
small model's judgement nudges a good hybrid ranking rather than replacing it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from agent import prompts
from agent.model_server.client import LocalServerChat, likelihood_scores
from agent.model_server.scoring import MAX_PASSAGE_CHARS, truncate_passage

_SCORE = re.compile(r"^\s*\[?(\d+)\]?\s*[:=\-]\s*(\d+(?:\.\d+)?)", re.M)
PASSAGE_CHARS = 500
"""Characters of each passage shown to the batch scorer."""
RANK_OFFSET = 2.0
"""Prior of first-stage rank ``i`` (0-based): ``RANK_OFFSET / (RANK_OFFSET + i)``. Measured
on SciFact with the local model, 2 was at the middle of the best region (1 to 3)."""


# --- shared pieces ----------------------------------------------------------------------------


def with_title(title: str | None, text: str) -> str:
    """The passage as the reranker reads it: ``title. text``, unless the text already starts
    with its document's title (a first chunk) or there is none."""
    title = " ".join((title or "").split())
    if not title or " ".join(text.split()).startswith(title[:40]):
        return text
    return f"{title}. {text}"


def rank_prior(count: int, offset: float = RANK_OFFSET) -> list[float]:
    """Reciprocal-rank prior of ``count`` first-stage positions: 1 for the first, falling as
    ``offset / (offset + rank)``."""
    return [offset / (offset + i) for i in range(count)]


def combine_scores(relevance: Sequence[float], weight: float) -> list[float]:
    """Final scores of candidates given best first: ``weight * relevance`` (0..1) plus
    ``(1 - weight) *`` their reciprocal-rank prior. ``weight`` 1 ranks by relevance alone,
    0 keeps the first-stage order."""
    w = min(max(float(weight), 0.0), 1.0)
    prior = rank_prior(len(relevance))
    return [w * float(r) + (1.0 - w) * p for r, p in zip(relevance, prior, strict=True)]


def rerank_order(relevance: Sequence[float], weight: float) -> list[int]:
    """Indices of the candidates (given best first) by combined score; ties keep their order."""
    final = combine_scores(relevance, weight)
    return sorted(range(len(final)), key=lambda i: (-final[i], i))


# --- batch 0-10 scoring (hosted and other chat models) ----------------------------------------


def parse_scores(reply: str, count: int) -> list[float]:
    """Scores by passage number (1-based) from ``n: score`` lines; missing ones are 0."""
    scores = [0.0] * count
    for number, value in _SCORE.findall(reply):
        index = int(number) - 1
        if 0 <= index < count:
            scores[index] = min(max(float(value), 0.0), 10.0)
    return scores


async def batch_scores(model: BaseChatModel, question: str, passages: list[str]) -> list[float]:
    """Relevance 0-10 of each passage to ``question`` from one model call."""
    if not passages:
        return []
    listed = "\n\n".join(
        f"[{i}] {truncate_passage(p, PASSAGE_CHARS)}" for i, p in enumerate(passages, start=1)
    )
    reply = await model.ainvoke(
        [
            SystemMessage(prompts.RERANK_SYSTEM),
            HumanMessage(prompts.RERANK_USER.format(question=question, passages=listed)),
        ],
        max_tokens=8 * len(passages) + 16,
    )
    return parse_scores(reply.content if isinstance(reply.content, str) else "", len(passages))


# --- dispatch ---------------------------------------------------------------------------------


async def llm_scores(
    model: BaseChatModel,
    question: str,
    passages: list[str],
    *,
    passage_chars: int = PASSAGE_CHARS,
) -> list[float]:
    """Relevance of each passage to ``question``, 0..10: query likelihood on the local
    llama.cpp model (scaled over the passages, times 10), one batch call on any other model."""
    if not passages:
        return []
    if not isinstance(model, LocalServerChat):
        return await batch_scores(model, question, passages)
    passage_chars = min(passage_chars, MAX_PASSAGE_CHARS)
    return [10.0 * s for s in await likelihood_scores(model, question, passages, passage_chars)]
