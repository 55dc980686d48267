"""``quire bench model --runtime``: llama.cpp's prompt and writing speed on this machine
under each runtime setting the model process could use (threads, batch sizes, flash
attention, the KV cache's type, mlock), so the defaults are chosen by measurement.

Each variant runs in a child process of its own (:func:`bench.model.run_child`), one after
another, on the portable build, with the same 512-token prompt and 64 written tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent.config import Settings
from bench.model import build_speed

GGML_TYPE_Q8_0 = 8

RUNTIME_VARIANTS: dict[str, dict] = {
    "defaults": {},
    "flash attention": {"flash_attn": True},
    "flash attention + KV q8_0": {
        "flash_attn": True,
        "type_k": GGML_TYPE_Q8_0,
        "type_v": GGML_TYPE_Q8_0,
    },
    "n_batch 128": {"n_batch": 128, "n_ubatch": 128},
    "n_batch 256": {"n_batch": 256, "n_ubatch": 256},
    "1 thread": {"threads": 1},
    "mlock": {"use_mlock": True},
}
"""Label -> the settings it changes (``threads`` and ``n_batch`` as the model process takes
them, anything else passed to ``llama_cpp.Llama``)."""


@dataclass
class RuntimeSpeed:
    """One variant's speed."""

    variant: str
    settings: dict
    prompt_tokens_per_s: float | None
    gen_tokens_per_s: float | None
    error: str | None = None


def runtime_speeds(settings: Settings, model: Path) -> list[RuntimeSpeed]:
    """The speed of each of :data:`RUNTIME_VARIANTS` (module docs)."""
    rows = []
    for label, change in RUNTIME_VARIANTS.items():
        got = build_speed(settings, model, label, extra=change)
        rows.append(
            RuntimeSpeed(label, change, got.prompt_tokens_per_s, got.gen_tokens_per_s, got.error)
        )
    return rows
