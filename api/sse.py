"""Server-Sent Events for the streaming routes (framing by sse-starlette).

Each event is ``event: <name>`` plus one ``data:`` line of JSON, separated by a blank line;
a ``: ping`` comment keeps idle connections open while a slow model thinks.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from sse_starlette import EventSourceResponse, ServerSentEvent

PING_SECONDS = 15


def sse_event(name: str, payload: dict) -> ServerSentEvent:
    """One event: ``event: name`` with ``payload`` as a single line of JSON."""
    return ServerSentEvent(data=json.dumps(payload, ensure_ascii=False, default=str), event=name)


def event_stream(events: AsyncIterator[tuple[str, dict]]) -> EventSourceResponse:
    """A ``text/event-stream`` response sending ``(name, payload)`` pairs as they come."""

    async def framed() -> AsyncIterator[ServerSentEvent]:
        async for name, payload in events:
            yield sse_event(name, payload)

    return EventSourceResponse(framed(), ping=PING_SECONDS, sep="\n")
