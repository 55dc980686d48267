"""One hybrid answer through the guards of ``finish_grounded``, asked two ways."""

from __future__ import annotations

from agent import prompts
from agent.chat.answering import finish_grounded


def refused_then_kept(raw: str, retrieved: list[dict], refused: str, kept: str) -> None:
    """Assert that the hybrid answer ``raw`` over ``retrieved`` is the plain "not answered"
    reply, citing nothing, to the question ``refused``, and kept as written, with one
    citation, for the question ``kept``."""
    common = dict(route="hybrid", model_used="m", tokens_used=1)
    got = finish_grounded(raw, retrieved, question=refused, **common)
    assert got.text == prompts.NOT_ANSWERED and got.citations == []
    left = finish_grounded(raw, retrieved, question=kept, **common)
    assert left.text == raw and len(left.citations) == 1
