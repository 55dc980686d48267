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


async def test_a_background_calls_client_leaving_is_seen_by_the_call():
    """Once a background call's body is read, its client closing the connection sets the
    event its model call checks (llama.cpp would read and write on for nobody); an answer's
    request is not watched, and a call that ends unwatched leaves no watcher behind."""
    import asyncio

    leave = asyncio.Event()

    async def receive():
        if not received:
            received.append(1)
            return {"type": "http.request", "body": b"{}", "more_body": False}
        await leave.wait()
        return {"type": "http.disconnect"}

    seen: dict = {}

    async def app(scope, receive, send):
        seen["body"] = (await receive())["body"]
        left = priority._client_left.get()
        seen["left_at_start"] = left.is_set()
        leave.set()  # the client goes while the call runs
        for _ in range(100):
            if left.is_set():
                break
            await asyncio.sleep(0.01)
        seen["left"] = left.is_set()

    received: list = []
    middleware = PriorityMiddleware(app, Answers())
    scope = {"type": "http", "method": "POST", "headers": [(b"x-quire-priority", b"background")]}
    await middleware(scope, receive, None)
    assert seen == {"body": b"{}", "left_at_start": False, "left": True}
    assert priority._client_left.get() is None

    async def answer_app(scope, receive, send):
        seen["answer_left"] = priority._client_left.get()

    received.clear()
    await PriorityMiddleware(answer_app, Answers())({**scope, "headers": []}, receive, None)
    assert seen["answer_left"] is None
