"""What a turn records about its route: why it was chosen (updated when the turn changes
path: Path B with nothing stored falls back to passages, a fresh-facts question the
documents miss goes to the web), how confident the answer is, and the record saved with the
answer (``retrieval_metrics["routing"]``), shown by the page, the API and ``quire ask``.

Confidence is deliberately simple:

* ``high``: passages passed the turn's threshold (a layer before the fallbacks) and the best
  one is at least :data:`CONFIDENT_MARGIN` above it; or the book's stored summary answered.
* ``medium``: passages passed the threshold narrowly, or only the low-threshold fallback
  found them; the table-of-contents fallback of Path B; an answer from web results.
* ``low``: nothing relevant was found (the documents do not cover the question), the
  passages found name none of the years or versions the question is about, or the web
  answer cited none of its results.
* ``n/a``: fixed replies and small talk, refusals, and a web search that could not run.

``state`` is the chat graph's state; each function reads it and never changes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent import prompts
from agent.chat.answering import Answer
from agent.retrieval.types import BELOW_RELEVANCE

CONFIDENT_MARGIN = 0.1
"""How far above the turn's similarity threshold the best passage must be for ``high``."""

FALLBACK_LAYERS = ("low_threshold", "sentence", "question_words")
"""Fallback layers whose passages count as evidence, weaker than the threshold's."""

NO_CONFIDENCE = frozenset({"direct", "general", "over_limit", "unknown_book"})
"""Routes whose reply is fixed or needs no evidence."""

WEB_FALLBACK_REASON = "documents did not cover it and it asks for fresh facts"


def overview_fallback() -> dict:
    """Path B found neither a stored summary nor chapters: answer from the book's passages
    with the general settings (the state update, with the new reason)."""
    return {
        "route": "hybrid",
        "search_mode": "general",
        "route_reason": "summary request for the one book in scope; nothing stored for it "
        "yet: answered from its passages (general settings)",
    }


def falls_back_to_web(state: Mapping[str, Any]) -> bool:
    """Retrieval found nothing relevant for a fresh-facts question and a web key is set: no
    passage at all, or none near the question but the documents hold its words (layer
    ``question_words``: they know what it is about, not today's facts)."""
    missed = (state.get("retrieval") or {}).get("layer") == "question_words"
    return (missed or not state.get("relevant")) and state.get("web_plan") == "fallback"


def no_web_answer(state: Mapping[str, Any]) -> Answer | None:
    """The plain reply for a question the documents do not cover that wants the web (asked
    for, or fresh facts) while web search is not configured; ``None`` otherwise."""
    if state.get("web_plan") != "unavailable" or state.get("web_context"):
        return None
    return Answer(
        text=prompts.NOT_COVERED_NO_WEB, route=state["route"], model_used="no_context_response"
    )


def _retrieval_confidence(state: Mapping[str, Any]) -> str:
    """From the retrieval layer and the best passage's similarity (see the module docs)."""
    if not state.get("relevant"):
        return "low"
    metrics = state.get("retrieval") or {}
    layer, threshold = metrics.get("layer"), metrics.get("threshold")
    if layer in FALLBACK_LAYERS or threshold is None:
        return "medium"
    similarities = [c.get("similarity") for c in state.get("retrieved") or []]
    best = max((s for s in similarities if s is not None), default=None)
    if best is None or layer in BELOW_RELEVANCE:
        return "medium"  # found by a numbered-question lookup, not by similarity
    return "high" if best >= threshold + CONFIDENT_MARGIN else "medium"


def answer_confidence(state: Mapping[str, Any]) -> str:
    """``high``, ``medium``, ``low`` or ``n/a`` for the turn's answer (see the module docs)."""
    route, model_used = state.get("route"), state.get("model_used")
    if route in NO_CONFIDENCE or model_used in ("direct_response", "monthly_limit"):
        return "n/a"
    if state.get("unheld_pins"):
        return "low"
    if route == "web_search":
        if not state.get("web_results") and model_used == "no_context_response":
            return "n/a"  # not configured, or the search failed
        return "medium" if state.get("citations") else "low"
    if state.get("retrieval"):
        return _retrieval_confidence(state)
    if model_used == "toc_fallback_path":
        return "medium"
    return "high" if state.get("sources") else "n/a"


def final_reason(state: Mapping[str, Any]) -> str:
    """The route's reason as the turn ended (the web after a miss, tools the model called)."""
    reason = state.get("route_reason") or ""
    if state.get("route") == "web_search" and state.get("web_plan") == "fallback":
        reason = WEB_FALLBACK_REASON
    tools = sorted({t["tool"] for t in state.get("tool_log") or []})
    if tools:
        reason += f"; tools called: {', '.join(tools)}"
    return reason


def routing_record(state: Mapping[str, Any]) -> dict:
    """``{"route", "reason", "mode", "confidence"}`` of the finished turn (``mode``:
    ``specific``, ``general`` or ``deep`` when passages were searched, else ``None``)."""
    searched = bool(state.get("retrieval"))
    return {
        "route": state.get("route"),
        "reason": final_reason(state),
        "mode": (state.get("search_mode") or None) if searched else None,
        "confidence": answer_confidence(state),
    }


def routing_update(state: Mapping[str, Any]) -> dict:
    """The state's ``routing`` record and final ``route_reason`` for the finished turn."""
    record = routing_record(state)
    return {"routing": record, "route_reason": record["reason"]}
