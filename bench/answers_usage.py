"""Token usage of every chat-model call in a block, for the answer benchmarks.

``langchain_core``'s ``get_usage_metadata_callback`` records a call only when its message
names ``response_metadata["model_name"]``, which neither the local llama.cpp model nor the
extractive one sets; :class:`UsageCollector` is the same mechanism without that condition,
registered as a configure hook so that every model call run in :func:`collect_usage`'s
context (tasks it starts included) reports to it.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.tracers.context import register_configure_hook


class UsageCollector(BaseCallbackHandler):
    """Sums ``usage_metadata`` of every chat-model call, named by its model or not."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.read_tokens = 0
        """Input tokens the model had to read: less those its prefix cache held."""

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        """Add one finished call's usage (streamed calls end with their merged message)."""
        try:
            generation = response.generations[0][0]
        except IndexError:
            return
        if not isinstance(generation, ChatGeneration):
            return
        usage = getattr(generation.message, "usage_metadata", None)
        if usage:
            self.calls += 1
            self.input_tokens += usage.get("input_tokens", 0)
            self.output_tokens += usage.get("output_tokens", 0)
            cached = (usage.get("input_token_details") or {}).get("cache_read") or 0
            self.read_tokens += max(usage.get("input_tokens", 0) - cached, 0)

    def snapshot(self) -> tuple[int, int, int]:
        """Calls, input tokens and output tokens so far."""
        return self.calls, self.input_tokens, self.output_tokens


_collector: ContextVar[UsageCollector | None] = ContextVar("quire_bench_usage", default=None)
register_configure_hook(_collector, inheritable=True)


@contextlib.contextmanager
def collect_usage():
    """Collect the usage of every model call run in this context (tasks it starts included)."""
    collector = UsageCollector()
    token = _collector.set(collector)
    try:
        yield collector
    finally:
        _collector.reset(token)
