"""Fixtures of the graph tests that script the chat model."""

from __future__ import annotations

import pytest

import graphs.model_calls as model_calls
from tests.support.fakes import RecordingModel, ScriptedModel


@pytest.fixture
def recording(monkeypatch):
    """A model that answers extractively and records every prompt, for every model call of
    the chat graph."""
    model = RecordingModel(prompts=[])

    async def fake(spec, settings, temperature, **_):
        return model

    monkeypatch.setattr(model_calls, "achat_model", fake)
    return model


@pytest.fixture
def scripted(monkeypatch, services):
    """A scripted hosted-style model for every model call of the chat graph (tool decisions
    from ``decisions``, answers extractive), with tool selection on."""
    model = ScriptedModel(decisions=[], offered=[], prompts=[])

    async def fake(spec, settings, temperature, **_):
        return model

    monkeypatch.setattr(model_calls, "achat_model", fake)
    monkeypatch.setattr(services.settings, "tool_selection", True)
    return model
