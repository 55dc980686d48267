"""The chat graph's streaming contract, in one place for the API, the CLI and the benchmarks.

A turn run through :func:`stream_turn` yields :class:`TurnEvent` items:

* ``token``: a piece of the answer as the model writes it, only from :data:`STREAMED_NODES`
  (other nodes' text, such as fixed replies and refusals, arrives whole in the final state);
* ``node``: a node finished (its name, and in ``state`` the update it returned), in the
  order they ran;
* ``final``: the graph's last state (``answer``, ``citations``, ``route`` ...), always last.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import AIMessageChunk, HumanMessage

STREAMED_NODES = frozenset({"generate", "general", "overview", "chapter", "web_search"})
"""Nodes whose model output is the answer (shown as it streams, before the citation guard)."""

ANSWER_NODES = frozenset(
    {
        "direct",
        "general",
        "overview",
        "chapter",
        "web_search",
        "generate",
        "answer_again",
        "not_covered",
        "unanswered",
        "refuse",
    }
)
"""Nodes that write a turn's answer; the last of them to run names the path that answered."""

ANSWERED_NODES = frozenset(
    {"direct", "general", "web_search", "generate", "answer_again", "not_covered", "unanswered"}
)
"""Nodes after which only ``save`` runs: a turn's time limit ends with them, unless the
update says more follows (:func:`answered`)."""


def answered(node: str, update: dict[str, Any]) -> bool:
    """Whether only ``save`` runs after ``node`` returned ``update``: a ``generate`` marked for
    a wider search (``wider_search="wanted"``) is followed by another search and answer."""
    return node in ANSWERED_NODES and update.get("wider_search") != "wanted"


@dataclass(frozen=True)
class TurnEvent:
    """One thing a running turn reports: an answer ``token``, a finished ``node`` (with its
    update), or the ``final`` state."""

    kind: Literal["token", "node", "final"]
    text: str = ""
    node: str = ""
    state: dict[str, Any] = field(default_factory=dict)


MODEL_WRITTEN_NODES = STREAMED_NODES | {"not_covered"}
"""Nodes whose model writes the answer or part of it: ``not_covered`` wraps its model's text
in a notice, so it is not shown as it streams, but its first token still times the turn
(``quire bench answers``)."""


async def stream_turn(
    graph: Any,
    question: str,
    *,
    context: Any,
    config: dict | None = None,
    token_nodes: frozenset[str] = STREAMED_NODES,
) -> AsyncIterator[TurnEvent]:
    """Run one chat turn on ``graph`` (compiled, with or without a checkpointer) and yield its
    events as they happen (see the module docs); ``token`` events come from ``token_nodes``."""
    final: dict[str, Any] = {}
    async for mode, payload in graph.astream(
        {"messages": [HumanMessage(question)]},
        config=config,
        context=context,
        stream_mode=["messages", "updates", "values"],
    ):
        if mode == "messages":
            chunk, meta = payload
            if (
                isinstance(chunk, AIMessageChunk)
                and isinstance(chunk.content, str)
                and chunk.content
                and meta.get("langgraph_node") in token_nodes
            ):
                yield TurnEvent("token", text=chunk.content)
        elif mode == "updates":
            for node, update in (payload or {}).items():
                yield TurnEvent("node", node=node, state=update if isinstance(update, dict) else {})
        else:
            final = payload
    yield TurnEvent("final", state=final)
