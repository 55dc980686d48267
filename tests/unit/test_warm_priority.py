"""Which openings the model process reads as answers when it is warmed: the grounded one
(every question about the documents starts with it, and a question asked meanwhile would
read it anyway) goes first and is not stopped by answers; the others yield to them. Every
fixed opening asks to be saved for the next process."""

from __future__ import annotations

import json

import pytest

from agent.config import Settings
from agent.model_server.priority import BACKGROUND, PRIORITY_HEADER
from agent.model_server.saved_openings import KEEP_HEADER, KEEP_OPENING
from agent.model_server.warm import warm_messages, warm_prompt_cache
from tests.support.model_server import stand_in_model_server


@pytest.fixture
def model_server():
    """A stand-in model server on a real port: records each request, answers one token."""
    with stand_in_model_server() as served:
        yield served


def test_the_grounded_opening_is_read_as_an_answer_and_the_rest_in_the_background(model_server):
    url, seen = model_server
    settings = Settings()
    openings = warm_messages(settings)

    assert warm_prompt_cache(url, settings) == len(openings)

    assert [p.body["messages"] for p in seen] == openings  # the grounded opening first
    first, *others = [p.headers for p in seen]
    assert PRIORITY_HEADER not in first  # an answer: a question waits for it, never stops it
    assert all(h.get(PRIORITY_HEADER) == BACKGROUND for h in others)
    assert all(h.get(KEEP_HEADER) == KEEP_OPENING for h in (first, *others))
    assert "#chk_" in json.dumps(openings[0])  # the worked examples ride with it


def test_no_server_warms_nothing():
    assert warm_prompt_cache("http://127.0.0.1:9", Settings(), timeout=2) == 0


def test_a_model_stopped_mid_warming_ends_it_quietly(caplog):
    """A ``quire ask`` that exits stops its model process while the openings are warmed: the
    warming ends without a warning on the user's screen."""
    quiet = caplog.at_level("DEBUG", logger="agent.model_server.warm")
    with stand_in_model_server(answered=1) as (url, seen), quiet:
        assert warm_prompt_cache(url, Settings()) == 1
    assert len(seen) == 2  # the grounded opening, then one that got no reply
    assert "stopped warming" in caplog.text
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
