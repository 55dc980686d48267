"""Answers from a turn's evidence (Path A and C): the retrieved passages cited as ``#chk_``,
web results from tool calls cited as ``#web_N``; or, when nothing relevant was found, a
notice that the documents do not cover the question with a brief general answer.

``state`` is the chat graph's state after retrieval (and any tool calls).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from agent import prompts
from agent.chat.answering import (
    Answer,
    finish_grounded,
    finish_mixed,
    grounded_messages,
    mixed_messages,
)
from agent.chat.conflicts import conflict_note, show_conflicts, shown, without_false_alarm
from agent.chat.follow_up import (
    EXCHANGES,
    Exchange,
    ExchangeLog,
    can_continue,
    continue_exchange,
    scope_key,
)
from agent.chat.route_record import no_web_answer
from agent.config import Settings
from agent.retrieval.citations import unique
from agent.text import listed


def _deep(state: Mapping[str, Any]) -> bool:
    return state["route"] == "deep_reasoning"


def answer_model(settings: Settings, state: Mapping[str, Any]) -> str:
    """The default model for the turn: the reasoning model (if set) for Path C."""
    if _deep(state):
        return settings.reasoning_model or settings.chat_model
    return settings.chat_model


def answer_temperature(settings: Settings, state: Mapping[str, Any]) -> float:
    """Path C's reasoning temperature, else the one for specific questions."""
    return settings.temperature_reasoning if _deep(state) else settings.temperature_specific


def guidance(state: Mapping[str, Any]) -> str:
    """The user's relevant corrections, the conversation so far, earlier discussions, then
    the book summaries a ``read_summary`` call brought (background, not cited)."""
    parts = (
        state.get("corrections"),
        state.get("history"),
        state.get("discussion"),
        state.get("summary_context"),
    )
    return "\n\n".join(p for p in parts if p)


def _evidence(state: Mapping[str, Any]) -> tuple[str, list[dict]]:
    """The passages' context and payloads, when retrieval found relevant ones."""
    if state.get("relevant"):
        return state["context"], state["retrieved"]
    return "", []


def _with_conflicts(context: str, state: Mapping[str, Any]) -> str:
    """The context, followed by which of its passages disagree (when any do)."""
    note = conflict_note(shown(state.get("conflicts"), state.get("retrieved") or []))
    return f"{context}\n\n{note}" if context and note else context


@dataclass(frozen=True)
class AnswerPrompt:
    """What the answering model is sent, and the passages it may cite."""

    messages: list[BaseMessage]
    citable: list[dict]


def answer_prompt(
    settings: Settings,
    state: Mapping[str, Any],
    exchanges: ExchangeLog = EXCHANGES,
    *,
    fresh: bool = False,
) -> AnswerPrompt:
    """The answering prompt: a follow-up continues the chat's last grounded exchange when
    it can (the model's cache then holds all but the new question), else (or ``fresh``:
    a second answer, not to be read beside the first) :func:`cited_answer_messages`."""
    previous = exchanges.last(state["chat_id"]) if can_continue(state) and not fresh else None
    if previous is not None:
        continued = continue_exchange(previous, state, settings.follow_up_max_chars)
        if continued is not None:
            return AnswerPrompt(continued.messages, continued.citable)
    return AnswerPrompt(cited_answer_messages(settings, state), _evidence(state)[1])


def remember_exchange(
    state: Mapping[str, Any], prompt: AnswerPrompt, raw: str, exchanges: ExchangeLog = EXCHANGES
) -> None:
    """Keep this turn's exchange for a follow-up to continue (plain grounded answers only)."""
    if can_continue(state) and raw:
        exchange = Exchange(tuple(prompt.messages), raw, tuple(prompt.citable), scope_key(state))
        exchanges.remember(state["chat_id"], exchange)
    else:
        exchanges.forget(state["chat_id"])


def cited_answer_messages(settings: Settings, state: Mapping[str, Any]) -> list[BaseMessage]:
    """Messages for answering from the passages, and from the web results when a web search
    ran."""
    context, _ = _evidence(state)
    context = _with_conflicts(context, state)
    if state.get("web_context"):
        return mixed_messages(
            settings.assistant_name,
            state["question"],
            context,
            state["web_context"],
            guidance(state),
        )
    deep = _deep(state)
    return grounded_messages(
        settings.assistant_name,
        state["question"],
        context,
        prompts.DEEP_SYSTEM if deep else prompts.GROUNDED_SYSTEM,
        guidance(state),
        examples=not deep,  # an analysis of many passages is no one-line answer
    )


def finish_cited_answer(
    raw: str,
    state: Mapping[str, Any],
    *,
    model: str,
    tokens: int,
    citable: list[dict] | None = None,
    drop_invented: bool = True,
) -> Answer:
    """The answer with its citations guarded (only what the turn found can be cited), and
    both sides of each conflict in its context shown, or an empty conflict alarm dropped
    when no passages disagree (:mod:`agent.chat.conflicts`).

    ``model`` is the answering model's label for ``model_used``; ``citable``: the passages
    the prompt showed, when not just the turn's (a continued exchange); ``drop_invented``:
    sentences naming what no passage holds are dropped (:mod:`agent.retrieval.anchors`)."""
    retrieved = _evidence(state)[1] if citable is None else citable
    conflicts = state.get("conflicts") or []
    if not shown(conflicts, retrieved):  # then the guard cites what the rest of it cites
        raw = without_false_alarm(raw)
    if state.get("web_context"):
        answer = finish_mixed(
            raw,
            retrieved,
            state.get("web_results", []),
            route=state["route"],
            model_used=f"web_search_{model}",
            tokens_used=tokens,
        )
    else:
        missing = state.get("missing_subjects") or []
        answer = finish_grounded(
            raw,
            retrieved,
            route=state["route"],
            model_used=f"{'deep_reasoner' if _deep(state) else 'investigator'}_{model}",
            tokens_used=tokens,
            # a subject no passage is on is no name the answer may state: its sentences go
            question=_without(state["question"], missing) if drop_invented else None,
        )
        if missing:
            lead = prompts.MISSING_SUBJECTS.format(names=listed(missing))
            answer.text = f"{lead}\n\n{answer.text}"
    # passages that disagree: both versions cited, and which source to trust asked
    return show_conflicts(answer, conflicts, retrieved)


def _without(question: str, subjects: list[str]) -> str:
    """``question`` without the words of ``subjects`` (what no passage is on)."""
    for subject in subjects:
        question = question.replace(subject, " ")
    return question


def unanswered_answer(state: Mapping[str, Any], exchanges: ExchangeLog = EXCHANGES) -> Answer:
    """The plain "not found" reply for passages that touch on the question but name none of
    the years or versions it is about (``unheld_pins``), with those passages as sources; a
    follow-up then starts afresh (no exchange to continue)."""
    exchanges.forget(state["chat_id"])
    retrieved = _evidence(state)[1]
    return Answer(
        text=prompts.NOT_ANSWERED,
        route=state["route"],
        model_used="pinned_figure_check",
        sources=unique(c["source"] for c in retrieved if c.get("source")),
        chunk_map={c["id"]: c["chunk_id"] for c in retrieved},
        retrieved_chunk_ids=[c["chunk_id"] for c in retrieved],
    )


def unanswered_reason(state: Mapping[str, Any]) -> str:
    """The route's reason, with the pins no passage names."""
    pins = ", ".join(state.get("unheld_pins") or [])
    return f"{state.get('route_reason') or ''}; it asks about {pins}, which no passage names"


def not_covered_messages(settings: Settings, state: Mapping[str, Any]) -> list[BaseMessage]:
    """Messages for a brief general answer to a question the documents do not cover."""
    known = guidance(state)
    question = state["question"]
    return [
        SystemMessage(prompts.NOT_COVERED_SYSTEM.format(name=settings.assistant_name)),
        HumanMessage(known + "\n\n" + question if known else question),
    ]


def _named_not_covered_answer(names: list[str], state: Mapping[str, Any]) -> Answer:
    """The not-covered notice naming what the documents do mention, with no general answer
    (written without a model)."""
    return Answer(
        text=prompts.NOT_COVERED_NAMED.format(names=listed([f"“{n}”" for n in names])),
        route=state["route"],
        model_used="no_context_response",
    )


def not_covered_without_model(state: Mapping[str, Any]) -> Answer | None:
    """The not-covered reply when no general answer is wanted: the question needs the web
    and no key is set, or it names what the documents use (``known_names`` of the
    retrieval: it is about their world, and a general answer would be made up, "Elspeth's
    late husband was John"); ``None`` otherwise."""
    if fixed := no_web_answer(state):
        return fixed
    names = (state.get("retrieval") or {}).get("known_names") or []
    return _named_not_covered_answer(list(names), state) if names else None


def not_covered_answer(general: str, state: Mapping[str, Any], *, tokens: int) -> Answer:
    """The not-covered notice with the model's ``general`` answer."""
    return Answer(
        text=" ".join(
            [prompts.NOT_COVERED]
            + (
                [prompts.GENERAL_KNOWLEDGE.format(general=general.strip())]
                if general.strip()
                else []
            )
        ),
        route=state["route"],
        model_used="no_context_response",
        tokens_used=tokens,
    )
