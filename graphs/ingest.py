"""The ``ingest`` graph: one source in, the stored document's id and counts out.

    START -> ingest -> summarize? -> END

``ingest`` parses, redacts, chunks, embeds and stores (the document is searchable when it
ends); ``summarize`` writes the pre-computed summaries when asked (``summarize: true``),
otherwise the server's background worker does. Progress goes to the ``custom`` stream as
``{"stage", "done", "total"}`` events, so a background run on the LangGraph server, the
CLI and the API all show the same progress.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Literal

from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from agent.ingest.errors import ingest_error_code
from agent.ingest.sources import IngestRequest, ingest_source
from agent.library.accounts import resolve_user
from agent.services import get_services
from agent.summaries.builder import NothingToSummarize, SummaryProgress, summarize_document


@dataclass(kw_only=True)
class IngestContext:
    """Whose library the document goes into."""

    user: str = field(
        default="local",
        metadata={"description": "User name that will own the document (created on first use)."},
    )


class IngestInput(TypedDict, total=False):
    """Exactly one source (``path``, ``content_base64`` + ``filename``, ``url``, ``text`` +
    ``title``, or a transcript's ``raw_text``), plus optional fields."""

    path: str
    content_base64: str
    filename: str
    url: str
    text: str
    raw_text: str
    refined_text: str
    tags: list[str]
    echotag: str
    title: str
    corpus: str
    summarize: bool


class IngestOutput(TypedDict, total=False):
    """The stored document, or the error that stopped it."""

    document_id: str
    title: str
    status: Literal["ingested", "duplicate", "replaced", "error"]
    chunks: int
    parents: int
    seconds: float
    timings: dict[str, float]
    summary_status: str
    error: str
    error_code: str


class IngestState(IngestInput, IngestOutput, total=False):
    """Input and output together."""


_REQUEST_FIELDS = set(IngestRequest.__dataclass_fields__)


async def ingest(state: IngestState, runtime: Runtime[IngestContext]) -> dict:
    """Store the source; known bad input ends the run with ``status: error``."""
    services = await get_services()
    user = await resolve_user(services, (runtime.context or IngestContext()).user)
    write = get_stream_writer()
    request = IngestRequest(**{k: v for k, v in state.items() if k in _REQUEST_FIELDS})

    def progress(stage: str, done: int, total: int) -> None:
        write({"stage": stage, "done": done, "total": total})

    try:
        result = await ingest_source(services, user.id, request, progress=progress)
    except Exception as exc:
        code = ingest_error_code(exc)
        if code is None:
            raise
        return {"status": "error", "error": str(exc), "error_code": code}
    return {
        "document_id": str(result.document_id),
        "title": result.title,
        "status": result.status,
        "chunks": result.chunks,
        "parents": result.parents,
        "seconds": round(result.seconds, 3),
        "timings": {k: round(v, 3) for k, v in result.timings.items()},
        "summary_status": "pending" if result.parents else "none",
    }


def after_ingest(state: IngestState) -> Literal["summarize", "__end__"]:
    """Summarize now only when asked and there is something to summarize."""
    if state.get("summarize") and state.get("status") != "error" and state.get("document_id"):
        return "summarize"
    return END


async def summarize(state: IngestState, runtime: Runtime[IngestContext]) -> dict:
    """Write (or finish) the document's summaries in this run."""
    services = await get_services()
    write = get_stream_writer()

    def progress(p: SummaryProgress) -> None:
        write({"stage": f"summaries ({p.stage})", "done": p.done, "total": p.total})

    try:
        await summarize_document(services, uuid.UUID(state["document_id"]), progress=progress)
    except NothingToSummarize:
        return {"summary_status": "none"}
    return {"summary_status": "done"}


builder = StateGraph(
    IngestState, input_schema=IngestInput, output_schema=IngestOutput, context_schema=IngestContext
)
builder.add_node("ingest", ingest)
builder.add_node("summarize", summarize)
builder.add_edge(START, "ingest")
builder.add_conditional_edges("ingest", after_ingest)
builder.add_edge("summarize", END)
graph = builder.compile(name="ingest")
