"""Asking one question through the chat graph and timing it: time to first answer token,
total time, the nodes that ran, tokens in and out of every model call, and the background
work ``save`` left running (waited for, and reported apart)."""

from __future__ import annotations

import time

from langchain_core.callbacks import get_usage_metadata_callback

from bench.answers_usage import collect_usage
from graphs.streaming import ANSWER_NODES, MODEL_WRITTEN_NODES, stream_turn


async def _drain_background() -> float:
    """Wait for the work ``save`` left running (the conversation-summary update)."""
    from graphs.chat import wait_for_background

    started = time.perf_counter()
    waited = await wait_for_background()
    return time.perf_counter() - started if waited else 0.0


async def ask_once(graph, question: str, context, *, drain: bool = True) -> dict:
    """Ask one question through ``graph`` and time it (see the module docs); without
    ``drain`` the next question is asked while the turn's background work still runs."""
    nodes: list[str] = []
    final: dict = {}
    first: float | None = None
    answered_at: float | None = None
    with get_usage_metadata_callback() as stock, collect_usage() as usage:
        started = time.perf_counter()
        async for event in stream_turn(
            graph, question, context=context, token_nodes=MODEL_WRITTEN_NODES
        ):
            if event.kind == "token" and first is None:
                first = time.perf_counter() - started
            elif event.kind == "node":
                nodes.append(event.node)
                if event.node in ANSWER_NODES and answered_at is None:
                    answered_at = time.perf_counter() - started
            elif event.kind == "final":
                final = event.state
        total = time.perf_counter() - started
        calls, tokens_in, tokens_out = usage.snapshot()
        tokens_read = usage.read_tokens
        stock_models = len(stock.usage_metadata)
    background = await _drain_background() if drain else 0.0
    return {
        "state": final,
        "nodes": nodes,
        "ttft": first if first is not None else (answered_at or total),
        "streamed": first is not None,
        "total": total,
        "calls": calls,
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "tokens_read": tokens_read,
        "stock_models": stock_models,
        "background_s": background,
        "background_tokens": usage.input_tokens + usage.output_tokens - tokens_in - tokens_out,
    }
