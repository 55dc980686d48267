"""Work that chat turns leave running in the background of the test process."""

from __future__ import annotations

import asyncio


async def cancel_background() -> int:
    """Cancel the work earlier turns left running (their chat summaries, their turns'
    embeddings) and wait until it has stopped; returns how many tasks were cancelled.

    Tests that measure the local model (its prompt cache, its timings) start from a model
    nobody else is using; a test that needs a turn's background work waits for it itself.
    """
    from agent.chat import finished_turn

    pending = [t for t in finished_turn._background if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending, timeout=30)
    return len(pending)
