"""A second look before "not found" (Path A): when the answer from the first passages says
nothing the question asked for (the guards turned it into the plain "not found" reply), the
turn searches once more past the passages it showed and answers again from the next ones.

On a CPU model a specific question reads only two passages; an answer ranked third or fourth
("What is the name of Mr. Darcy's estate in Derbyshire?") was never read. The second search
leaves out every passage the first context showed (their parents' children too), so the
model reads new text; its answer goes through the same guards. A turn whose second search
finds nothing relevant, or only passages naming none of the years it asks about, keeps the
first reply. Continued follow-ups, turns with tool selection (which may search again on
their own) and answers with web results never search further.

On by default for hosted models; the 1.5B local model is off by default
(``QUIRE_LOCAL_WIDER_SEARCH``): on the book set none of its "not found" answers came right
from the next passages, and one became a wrong answer the guards let through.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel

from agent import prompts
from agent.chat.retrieval_step import follows_on, retrieve_context
from agent.config import Settings
from agent.db.scope import SearchScope
from agent.services import Services


def wants_wider_search(settings: Settings, state: Mapping[str, Any], spec: str) -> bool:
    """Whether the turn searches past its first passages: a Path A answer that came out as
    the plain "not found" reply, once per turn, by the model named ``spec`` (the local one
    only with ``local_wider_search``)."""
    return (
        (settings.local_wider_search if spec == "local" else settings.wider_search)
        and state.get("route") == "hybrid"
        and not state.get("wider_search")  # once: "wanted", then "found" or "nothing"
        and state.get("answer") == prompts.NOT_ANSWERED
        and bool(state.get("shown_passages"))
        and not state.get("tools_enabled")
        and not state.get("web_context")
        and not follows_on(state)
    )


async def search_wider(
    services: Services,
    state: Mapping[str, Any],
    *,
    model: BaseChatModel,
    spec: str,
    scope: SearchScope,
    top_k: int | None = None,
) -> dict:
    """The turn's retrieval again, past the passages it showed: the new context with
    ``wider_search="found"``, or only ``wider_search="nothing"`` (the first context and
    reply stay) when it finds nothing relevant or nothing that can answer.

    ``model`` (named by ``spec``), ``scope`` and ``top_k`` as for the first search
    (:func:`~agent.chat.retrieval_step.retrieve_context`)."""
    shown = frozenset(uuid.UUID(p) for p in state.get("shown_passages") or [])
    found = await retrieve_context(
        services, state, model=model, spec=spec, scope=scope, top_k=top_k, skip_passages=shown
    )
    reason = f"{state.get('route_reason') or ''}; the first passages did not say it"
    if not found["relevant"] or not found["retrieved"] or found["unheld_pins"]:
        return {"wider_search": "nothing", "route_reason": f"{reason}, nor did any other"}
    found["retrieval"]["wider_search"] = {"skipped_passages": len(shown)}
    return {
        **found,
        "shown_passages": [*state["shown_passages"], *found["shown_passages"]],
        "wider_search": "found",
        "route_reason": f"{reason}: searched further",
    }
