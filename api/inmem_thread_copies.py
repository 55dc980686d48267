"""A copy of a never-run thread that works, on ``langgraph dev``'s in-memory runtime.

``langgraph-runtime-inmem`` (0.36.x) copies a thread's checkpoints through a JSON round trip,
so the copy's storage is a plain ``{}`` where the checkpointer expects a ``defaultdict``.
For a thread that never ran, the copy then has no ``""`` namespace: every state read of it
answers HTTP 500 and every run on it fails with ``KeyError: ''``. Studio's "fork" and the
SDK's ``threads.copy`` reach it. :func:`mend_thread_copies` wraps the runtime's copy so the
new thread's storage is the checkpointer's own shape again; it does nothing where that
runtime is not installed (``quire serve``, a deployment on Postgres).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any

_MENDED = "_quire_mended"


def _as_saver_storage(storage: Any) -> defaultdict:
    """A thread's copied checkpoints in the saver's shape: namespace -> checkpoints."""
    return defaultdict(dict, {ns: dict(rows) for ns, rows in dict(storage or {}).items()})


def mend_thread_copies() -> bool:
    """Wrap the in-memory runtime's thread copy (once); whether it is now wrapped."""
    try:
        from langgraph_runtime_inmem import ops
        from langgraph_runtime_inmem.checkpoint import Checkpointer
    except ImportError:
        return False
    original = ops.Threads.copy
    if getattr(original, _MENDED, False):
        return True

    async def copy(conn, thread_id, ctx=None) -> AsyncIterator[Any]:
        rows = await original(conn, thread_id, ctx=ctx)

        async def mended() -> AsyncIterator[Any]:
            async for row in rows:
                storage = Checkpointer().storage
                key = str(row["thread_id"])
                storage[key] = _as_saver_storage(storage.get(key))
                yield row

        return mended()

    setattr(copy, _MENDED, True)
    ops.Threads.copy = staticmethod(copy)
    return True
