"""llama.cpp's raw prompt speed, measured in the run that times the answers: the floor
each time to first token is compared with (``quire bench answers``).

The model reads a fresh prompt (a random opening, so its prefix cache holds none of it) and
writes one token; the speed is the tokens it read over the time to that token. Best of a
few rounds, so a moment of load elsewhere does not lower the floor.
"""

from __future__ import annotations

import time
import uuid

from langchain_core.messages import HumanMessage

from agent.config import Settings
from bench.paths import ALICE

PROBE_CHARS = 1800
"""About 450 tokens: as long as a focused hybrid prompt."""


def _probe_text(round_: int) -> str:
    text = " ".join(ALICE.read_text(encoding="utf-8").split())
    start = len(text) // 3 + round_ * PROBE_CHARS
    return text[start : start + PROBE_CHARS]


async def raw_prompt_speed(model: str, settings: Settings, rounds: int = 3) -> float | None:
    """Prompt tokens/s the local model reads (see the module docs); ``None`` for a model
    that is not the local llama.cpp one (hosted, extractive)."""
    if model != "local":
        return None
    from agent.models import achat_model

    chat = await achat_model("local", settings, 0.0)
    best = 0.0
    for n in range(rounds):
        prompt = f"[{uuid.uuid4().hex}]\n{_probe_text(n)}\n\nReply with the single word OK."
        started = time.perf_counter()
        first: float | None = None
        read = 0
        async for chunk in chat.astream([HumanMessage(prompt)], max_tokens=1):
            if first is None and chunk.content:
                first = time.perf_counter() - started
            usage = chunk.usage_metadata
            if usage:
                cached = (usage.get("input_token_details") or {}).get("cache_read") or 0
                read = usage.get("input_tokens", 0) - cached
        elapsed = first if first is not None else time.perf_counter() - started
        if read and elapsed:
            best = max(best, read / elapsed)
    return round(best, 1) or None
