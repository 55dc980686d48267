"""The model process's priorities: which requests count as answers in flight."""

from __future__ import annotations

from agent.model_server import priority
from agent.model_server.priority import Answers, PriorityMiddleware


async def _call(middleware: PriorityMiddleware, method: str, headers: list) -> dict:
    seen: dict = {}

    async def app(scope, receive, send):
        seen["answers_waiting"] = middleware.answers.waiting
        seen["background"] = priority._background_call.get()

    middleware.app = app
    await middleware({"type": "http", "method": method, "headers": headers}, None, None)
    return seen


async def test_answers_are_counted_while_in_flight_and_background_calls_are_marked():
    answers = Answers()
    middleware = PriorityMiddleware(None, answers)
    answer = await _call(middleware, "POST", [(b"content-type", b"application/json")])
    assert answer == {"answers_waiting": True, "background": False}
    assert not answers.waiting  # counted only while in flight
    background = await _call(middleware, "POST", [(b"x-quire-priority", b"background")])
    assert background == {"answers_waiting": False, "background": True}
    assert not priority._background_call.get()
    health = await _call(middleware, "GET", [])  # health checks never hold the model
    assert health == {"answers_waiting": False, "background": False}
