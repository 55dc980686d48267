"""The chat graph's state: the conversation plus what the current turn produced."""

from __future__ import annotations

from typing import Annotated

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict


class InputState(TypedDict):
    """What a caller sends: new messages (the last human message is the question)."""

    messages: Annotated[list[AnyMessage], add_messages]


class ChatState(InputState, total=False):
    """Working state of one turn; JSON-serialisable for any checkpointer."""

    question: str
    user_id: str
    chat_id: str
    book_id: str
    search_filter: dict
    """The documents and corpus the caller narrowed the search to (empty: all visible)."""
    usage_month: str
    """The month (ISO date) this turn was counted in against the monthly limit; empty when
    it was not counted (over the limit). A failed turn is given back to it."""
    history: str
    """The conversation so far: its running summary, else the last messages."""
    corrections: str
    """The user's corrections relevant to this question, for the prompt."""
    memory: dict
    """The chat's memory as loaded at the start of the turn (summary, recent turns)."""
    discussion: str
    """The user's earlier turns relevant to this question (background, not citable)."""
    search_query: str
    """The question made standalone for retrieval (follow-ups)."""
    route: str
    route_reason: str
    """Why the turn took its route (a short sentence: the page, ``--json``, Studio)."""
    search_mode: str
    """Retrieval settings of Path A/C: ``specific``, ``general`` (broad questions) or
    ``deep``; empty for paths that search no passages."""
    web_plan: str
    """What the turn may do with the web (:attr:`agent.chat.routing.RouteChoice.web`)."""
    routing: dict
    """The route, its reason, the search mode and the answer's confidence, as saved with the
    answer (``retrieval_metrics["routing"]``)."""
    context: str
    retrieved: list[dict]
    chunk_map: dict[str, str]
    answer: str
    citations: list[dict]
    sources: list[str]
    model_used: str
    tokens_used: int
    retrieval: dict
    """The retrieval's metrics: stage timings, queries, layer, results, context length."""
    conflicts: list[dict]
    """Pairs of passages in the context that disagree (:mod:`agent.retrieval.conflicts`)."""
    time_window: dict
    """The ``since``/``until`` window the turn searched in (ISO bounds; ``None``: open)."""
    relevant: bool
    """Whether retrieval found passages above the relevance floor."""
    unheld_pins: list[str]
    """Years or versions the question is about that none of its passages names (Path A):
    the passages touch on it but cannot answer it, so no model is asked."""
    missing_subjects: list[str]
    """Subjects of a compared question (Path C) that no passage is on ("Real Madrid" in
    "Compare Norwich City and Real Madrid" over an article on Norwich)."""
    shown_passages: list[str]
    """The passages the turn's context shows (parent chunk ids, or a chunk's own)."""
    wider_search: str
    """``found`` or ``nothing``: what a second search past ``shown_passages`` brought after
    the first passages did not say the answer (:mod:`agent.chat.wider_search`)."""
    persona: str
    tools_enabled: bool
    decision: dict
    """The latest tool decision: ``{"tool": ..., "query": ...}``."""
    tool_log: list[dict]
    """Tool calls made this turn (tool, query, what came back)."""
    web_results: list[dict]
    web_context: str
    summary_context: str
    """Book summaries read by a ``read_summary`` tool call (background for the answer)."""
    citations_removed: int
    message_id: str
    """The saved assistant message (for corrections and the chunk viewer)."""


class OutputState(TypedDict, total=False):
    """What a caller gets back."""

    messages: list[AnyMessage]
    answer: str
    route: str
    route_reason: str
    routing: dict
    citations: list[dict]
    sources: list[str]
    chunk_map: dict[str, str]
    model_used: str
    tokens_used: int
    chat_id: str
    retrieval: dict
    conflicts: list[dict]
    time_window: dict
    tool_log: list[dict]
    citations_removed: int
    message_id: str
