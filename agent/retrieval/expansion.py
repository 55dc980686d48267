"""Intent-aware query expansion (seed 002 step 1): classify the question, then rewrite it.

The original question always comes first; rewrites follow, deduplicated, so that
``original + rewrites <= max_queries``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from agent import prompts

INTENTS = ("factual", "procedural", "exploratory", "temporal")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)]|q\d*[:.)])\s*", re.I)


@dataclass(frozen=True)
class Expansion:
    """The queries to search and the intent they were written for."""

    intent: str
    queries: list[str]


async def _ask(model: BaseChatModel, system: str, user: str, max_tokens: int) -> str:
    reply = await model.ainvoke([SystemMessage(system), HumanMessage(user)], max_tokens=max_tokens)
    return reply.content if isinstance(reply.content, str) else str(reply.content)


async def classify_intent(model: BaseChatModel, question: str) -> str:
    """factual / procedural / exploratory / temporal (``factual`` when unclear)."""
    reply = (await _ask(model, prompts.INTENT_SYSTEM, question, 8)).lower()
    return next((intent for intent in INTENTS if intent in reply), "factual")


def parse_rewrites(reply: str, original: str, limit: int) -> list[str]:
    """Queries from a one-per-line reply: bullets and quotes stripped, repeats dropped."""
    seen = {original.strip().lower()}
    queries: list[str] = []
    for line in reply.splitlines():
        query = _BULLET.sub("", line).strip().strip("\"'`").strip()
        if len(query) < 3 or query.lower() in seen:
            continue
        seen.add(query.lower())
        queries.append(query)
        if len(queries) == limit:
            break
    return queries


async def expand_query(
    model: BaseChatModel, question: str, *, intent_aware: bool = True, max_queries: int = 4
) -> Expansion:
    """The question plus up to ``max_queries - 1`` rewrites."""
    intent = await classify_intent(model, question) if intent_aware else "general"
    wanted = max(0, max_queries - 1)
    if wanted == 0:
        return Expansion(intent, [question])
    system = prompts.REWRITE_SYSTEM[intent].format(n=wanted) + prompts.REWRITE_FORMAT
    reply = await _ask(model, system, question, 40 * wanted)
    return Expansion(intent, [question, *parse_rewrites(reply, question, wanted)])
