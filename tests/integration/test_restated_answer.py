"""A restated question finished by the model, through the chat graph on the real database:
the guards' "not found" for an answer that only restated the question is replaced by the
model's own sentence written on (", namely …") when its words name something, and stays
when they do not or the model cannot be given the start of its reply."""

from __future__ import annotations

import re
import uuid

import pytest
from langchain_core.messages import HumanMessage

from agent import prompts
from agent.ingest.pipeline import ingest_bytes
from graphs import chat as chat_graph
from graphs.chat import graph
from graphs.context import Context
from graphs.model_calls import Reply
from graphs.streaming import stream_turn
from tests.integration.test_wider_search import SecondLook
from tests.support.fakes import answer_with

RECIPE = b"""Harbour bakery notes.

The harvest loaf rests for an hour, and its first rise doubles it. Then the baker folds in a
handful of toasted walnuts, shapes the dough into a round and scores it with a cross.
"""
QUESTION = "What does the baker fold in after the first rise?"


@pytest.fixture
async def baker(services):
    from agent.library.accounts import resolve_user

    user = await resolve_user(services, f"restated-{uuid.uuid4().hex[:6]}")
    await ingest_bytes(services, user.id, RECIPE, "bakery.txt", title="Bakery")
    return user


@pytest.fixture
def restating(monkeypatch, services):
    """A model that restates every question; no wider search (that is another lever)."""
    monkeypatch.setattr(services.settings, "wider_search", False)
    monkeypatch.setattr(SecondLook, "_generate", _restating)
    return answer_with(monkeypatch, SecondLook(prompts=[]))


def _restating(self, messages, stop=None, run_manager=None, **kwargs):
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    self.prompts.append(messages)
    reply = "The baker folds in after the first rise."
    return ChatResult(generations=[ChatGeneration(message=AIMessage(reply))])


def _writes_on(words: str, calls: list):
    """A stand-in for the model process's continuation: records what it was given and
    writes ``words`` (``{id}``: the first passage's citation id) after the prefix."""

    async def continue_reply(runtime, state, messages, prefix, temperature, default=None):
        calls.append((messages, prefix))
        cid = re.search(r"#chk_[0-9a-f]{8}", str(messages[-1].content)).group(0)
        return Reply(words.format(id=cid), 9, "local")

    return continue_reply


async def test_a_restated_answer_is_written_on_and_replaces_not_found(
    baker, restating, monkeypatch
):
    calls: list = []
    monkeypatch.setattr(chat_graph, "continue_reply", _writes_on(" toasted walnuts {id}.", calls))
    tokens, final = [], {}
    context = Context(user=baker.name, chat_id=str(uuid.uuid4()))
    async for event in stream_turn(graph, QUESTION, context=context):
        if event.kind == "token":
            tokens.append(event.text)
        elif event.kind == "final":
            final = event.state
    ((messages, prefix),) = calls
    assert prefix == "The baker folds in after the first rise, namely"
    assert messages == restating.prompts[0]  # the answer's own prompt: llama.cpp has it cached
    assert "walnuts" in final["answer"] and final["answer"] != prompts.NOT_ANSWERED
    (cited,) = final["citations"]
    assert "walnuts" in cited["text"] and cited["id"] in final["answer"]
    assert "walnuts" not in "".join(tokens)  # the continuation replaces, it is not streamed
    assert final["route"] == "hybrid"
    # a follow-up continues the exchange the model wrote on, not its restatement
    from agent.chat.follow_up import EXCHANGES

    assert EXCHANGES.last(context.chat_id).reply == prefix + " toasted walnuts " + cited["id"] + "."


async def test_words_that_name_nothing_keep_not_found(baker, restating, monkeypatch):
    calls: list = []
    monkeypatch.setattr(chat_graph, "continue_reply", _writes_on(" the first rise {id}.", calls))
    context = Context(user=baker.name, chat_id=str(uuid.uuid4()))
    state = await graph.ainvoke({"messages": [HumanMessage(QUESTION)]}, context=context)
    assert len(calls) == 1 and state["answer"] == prompts.NOT_ANSWERED
    from agent.chat.follow_up import EXCHANGES

    assert EXCHANGES.last(context.chat_id).reply == "The baker folds in after the first rise."


async def test_a_model_that_cannot_be_given_its_first_words_keeps_not_found(baker, restating):
    # the fake is no local model process: the real continue_reply declines to call it
    context = Context(user=baker.name, chat_id=str(uuid.uuid4()))
    state = await graph.ainvoke({"messages": [HumanMessage(QUESTION)]}, context=context)
    assert state["answer"] == prompts.NOT_ANSWERED and len(restating.prompts) == 1


@pytest.fixture
def old_model_process():
    """An HTTP server without the continuation route (a model process of an older Quire)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class NotFound(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.mark.parametrize("where", ["old", "gone"])
async def test_a_model_process_that_cannot_write_on_leaves_the_answer(
    services, monkeypatch, old_model_process, where
):
    import socket
    from types import SimpleNamespace

    from langchain_core.messages import SystemMessage

    import graphs.model_calls as model_calls
    from agent.model_server.client import local_chat_client

    if where == "gone":  # a port nothing listens on: the process died
        with socket.socket() as free:
            free.bind(("127.0.0.1", 0))
            url = f"http://127.0.0.1:{free.getsockname()[1]}"
    else:
        url = old_model_process
    client = local_chat_client(
        url, label="local", temperature=0.0, max_tokens=16, seed=1, timeout=5.0
    )

    async def local(spec, settings, temperature, **_):
        return client

    monkeypatch.setattr(model_calls, "achat_model", local)
    messages = [SystemMessage("Answer briefly."), HumanMessage(QUESTION)]
    runtime = SimpleNamespace(context=None)
    prefix = "The baker folds in after the first rise, namely"
    assert await model_calls.continue_reply(runtime, {}, messages, prefix, 0.0) is None
