"""Fixtures of the graph tests that script the chat model."""

from __future__ import annotations

import pytest

from tests.support.fakes import RecordingModel, ScriptedModel, answer_with


@pytest.fixture
def recording(monkeypatch):
    """A model that answers extractively and records every prompt, for every model call of
    the chat graph."""
    return answer_with(monkeypatch, RecordingModel(prompts=[]))


@pytest.fixture
def scripted(monkeypatch, services):
    """A scripted hosted-style model for every model call of the chat graph (tool decisions
    from ``decisions``, answers extractive), with tool selection on."""
    model = answer_with(monkeypatch, ScriptedModel(decisions=[], offered=[], prompts=[]))
    monkeypatch.setattr(services.settings, "tool_selection", True)
    return model
