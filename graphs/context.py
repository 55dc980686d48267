"""Per-run configuration of the chat graph, shown in LangGraph Studio."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(kw_only=True)
class Context:
    """Who is asking and how to answer. Every field is optional."""

    user: str = field(
        default="local",
        metadata={"description": "User name whose documents are searched (created on first use)."},
    )
    chat_id: str | None = field(
        default=None,
        metadata={"description": "Chat to save the turn in; defaults to the thread id."},
    )
    book: str | None = field(
        default=None,
        metadata={"description": "One book in scope: its document id or title (default: all)."},
    )
    persona: str | None = field(
        default=None,
        metadata={
            "description": "Persona for this chat (tone and role); kept for its later turns."
        },
    )
    tool_selection: bool | None = field(
        default=None,
        metadata={
            "description": "Let the model call search_knowledge / read_summary / web_search "
            "(ReAct); unset: on for hosted models, off for the local one."
        },
    )
    chat_model: str | None = field(
        default=None,
        metadata={"description": "Override QUIRE_CHAT_MODEL, e.g. 'openai:gpt-4o-mini'."},
    )
    top_k: int | None = field(
        default=None,
        metadata={"description": "Chunks to retrieve (default: 5, or 2 for the local model)."},
    )
    document_ids: list[str] | None = field(
        default=None, metadata={"description": "Only search these documents."}
    )
    corpus: str | None = field(
        default=None, metadata={"description": "Only search documents of this corpus."}
    )
    since: str | None = field(
        default=None,
        metadata={
            "description": "Only documents created since: an ISO date or date-time, or an "
            "age such as 24h, 48h, 7d, 1w ('all': no bound)."
        },
    )
    until: str | None = field(
        default=None,
        metadata={
            "description": "Only documents created before: an ISO date (that whole day "
            "included) or date-time, or an age such as 7d ('all': no bound)."
        },
    )
