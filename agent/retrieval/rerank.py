"""LLM rerank (seed 002 step 8): one batch call scores every candidate 0-10.

No packaged cross-encoder exists offline (see MODELS.md), so this is the only reranker.
"""

from __future__ import annotations

import re

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from agent import prompts

_SCORE = re.compile(r"^\s*\[?(\d+)\]?\s*[:=\-]\s*(\d+(?:\.\d+)?)", re.M)
PASSAGE_CHARS = 500


def parse_scores(reply: str, count: int) -> list[float]:
    """Scores by passage number (1-based) from ``n: score`` lines; missing ones are 0."""
    scores = [0.0] * count
    for number, value in _SCORE.findall(reply):
        index = int(number) - 1
        if 0 <= index < count:
            scores[index] = min(max(float(value), 0.0), 10.0)
    return scores


async def llm_scores(model: BaseChatModel, question: str, passages: list[str]) -> list[float]:
    """Relevance 0-10 of each passage to ``question`` from one model call."""
    if not passages:
        return []
    listed = "\n\n".join(
        f"[{i}] {' '.join(p.split())[:PASSAGE_CHARS]}" for i, p in enumerate(passages, start=1)
    )
    reply = await model.ainvoke(
        [
            SystemMessage(prompts.RERANK_SYSTEM),
            HumanMessage(prompts.RERANK_USER.format(question=question, passages=listed)),
        ],
        max_tokens=8 * len(passages) + 16,
    )
    return parse_scores(reply.content if isinstance(reply.content, str) else "", len(passages))
