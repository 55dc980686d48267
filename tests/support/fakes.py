"""Stand-in models and writers for graph and summary tests."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from agent.models import ExtractiveChatModel
from agent.summaries.writers import Summary


def answer_with(monkeypatch, model: BaseChatModel) -> BaseChatModel:
    """``model`` for every model call of the chat graph (whatever spec a turn names); it."""
    import graphs.model_calls as model_calls

    async def fake(spec, settings, temperature, **_):
        return model

    monkeypatch.setattr(model_calls, "achat_model", fake)
    return model


class RecordingModel(BaseChatModel):
    """Answers like the extractive model and records every prompt it was given."""

    prompts: list = []

    @property
    def _llm_type(self) -> str:
        return "quire-extractive"  # counts as LLM-free for memory updates

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.prompts.append(messages)
        reply = ExtractiveChatModel()._answer(messages)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(reply))])


class ScriptedModel(BaseChatModel):
    """A hosted-style model: tool decisions come from ``decisions`` (native tool calls),
    answers from ``answer`` (or the extractive answerer); every prompt is recorded."""

    decisions: list = []
    answer: str | None = None
    offered: list = []
    prompts: list = []

    @property
    def _llm_type(self) -> str:
        return "quire-extractive"  # LLM-free for the memory update

    def bind_tools(self, tools, **kwargs):
        """Record the offered tools and bind them (as a tool-calling chat model does)."""
        self.offered.append([t["function"]["name"] for t in tools])
        return self.bind(tools=tools, **kwargs)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.prompts.append(messages)
        if "tools" in kwargs:
            step = self.decisions.pop(0) if self.decisions else None
            calls = [{"name": step[0], "args": {"query": step[1]}, "id": "c1"}] if step else []
            message = AIMessage("", tool_calls=calls)
        else:
            message = AIMessage(self.answer or ExtractiveChatModel()._answer(messages))
        return ChatResult(generations=[ChatGeneration(message=message)])


class CountingWriter:
    """An LLM-free writer that counts calls and can fail after ``fail_after`` sections."""

    def __init__(self, name: str = "fake-writer", fail_after: int | None = None) -> None:
        self.name = name
        self.fail_after = fail_after
        self.sections = self.chapters = self.books = 0

    async def section(self, title: str, heading: str, text: str) -> Summary:
        if self.fail_after is not None and self.sections >= self.fail_after:
            raise RuntimeError("model went away")
        self.sections += 1
        return Summary(f"Section summary of {heading}.", ["oysters", heading.split(",")[0].lower()])

    async def chapter(self, title: str, chapter: str, summaries: list[str]) -> Summary:
        self.chapters += 1
        return Summary(f"{chapter} combines {len(summaries)} sections.", ["tides"])

    async def book(self, title: str, author: str | None, summaries: str) -> str:
        self.books += 1
        return f"Executive summary of {title} from {len(summaries.splitlines())} chapters."
