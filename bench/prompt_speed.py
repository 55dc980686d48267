"""llama.cpp's raw prompt speed, measured in the run that times the answers: the floor
each time to first token is compared with (``quire bench answers``).

The model reads a fresh prompt (a random opening, so its prefix cache holds none of it) and
writes one token; the speed is the tokens it read over the time to that token. Best of a
few rounds, so a moment of load elsewhere does not lower the floor.
"""

from __future__ import annotations

import time
import uuid

from langchain_core.messages import AIMessage, HumanMessage

from agent.config import Settings
from bench.paths import ALICE

PROBE_CHARS = 1800
"""About 450 tokens: as long as a focused hybrid prompt."""


def _probe_text(round_: int, chars: int = PROBE_CHARS) -> str:
    text = " ".join(ALICE.read_text(encoding="utf-8").split())
    start = len(text) // 3 + round_ * PROBE_CHARS
    return text[start : start + chars]


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
        elapsed, read = await _first_token(chat, [HumanMessage(prompt)])
        if read and elapsed:
            best = max(best, read / elapsed)
    return round(best, 1) or None


async def _first_token(chat, messages) -> tuple[float, int]:
    """Seconds to the first token of one bare request, and the prompt tokens it read."""
    started = time.perf_counter()
    first: float | None = None
    read = 0
    async for chunk in chat.astream(messages, max_tokens=1):
        if first is None and chunk.content:
            first = time.perf_counter() - started
        usage = chunk.usage_metadata
        if usage:
            cached = (usage.get("input_token_details") or {}).get("cache_read") or 0
            read = usage.get("input_tokens", 0) - cached
    return (first if first is not None else time.perf_counter() - started), read


CHARS_PER_TOKEN = 4.2
"""About how many characters of the book's prose make one token (Qwen2.5's tokenizer)."""


async def raw_read_seconds(
    model: str, settings: Settings, cached: int, read: int, rounds: int = 2
) -> float | None:
    """The same read done bare: seconds llama.cpp takes to read ``read`` new tokens after a
    ``cached``-token prefix its cache holds, with no retrieval, graph or HTTP app in front
    (best of ``rounds``). Short reads run well below the raw prompt speed of a long fresh
    prompt (a small batch: 50-65 against 80-100 tokens/s on 2 cores), so for a follow-up
    this is the floor the model itself sets. ``None``: not the local model, or nothing read."""
    if model != "local" or read <= 0:
        return None
    from agent.models import achat_model

    chat = await achat_model("local", settings, 0.0)
    best: float | None = None
    for n in range(rounds):
        prefix = [
            HumanMessage(f"[{uuid.uuid4().hex}]\n{_probe_text(n, int(cached * CHARS_PER_TOKEN))}")
        ]
        await _first_token(chat, prefix)  # now the cache holds it
        more = _probe_text(n + 7, int(read * CHARS_PER_TOKEN))
        seconds, got = await _first_token(chat, [*prefix, AIMessage("OK"), HumanMessage(more)])
        if got:
            scaled = seconds * read / got  # the read came out near, not at, ``read`` tokens
            best = scaled if best is None else min(best, scaled)
    return round(best, 3) if best is not None else None
