"""Who writes summaries: a chat model through our prompts, or an LLM-free extractive writer.

The writer is chosen by the same model spec as chat (``QUIRE_SUMMARY_MODEL``, default the
chat model): ``extractive`` gives deterministic summaries for tests and load runs.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from agent import prompts
from agent.config import Settings
from agent.ingest.sentences import split_sentences
from agent.models import achat_model, model_label
from agent.text import content_words

MAX_TOPICS = 4
_TOPIC_CHARS = 40
_SUMMARY_CHARS = 1200
_SUMMARY = re.compile(r"SUMMARY\s*:\s*(.*?)(?=\n\s*TOPICS\s*:|\Z)", re.S | re.I)
_TOPICS = re.compile(r"TOPICS\s*:\s*(.*)", re.S | re.I)


@dataclass(frozen=True)
class Summary:
    """A summary and its topic labels."""

    text: str
    topics: list[str]


class SummaryWriter(Protocol):
    """Writes the three levels of summary; ``name`` is recorded beside each one."""

    name: str

    async def section(self, title: str, heading: str, text: str) -> Summary:
        """3-4 sentences and topic labels for one parent chunk."""
        ...

    async def chapter(self, title: str, chapter: str, summaries: list[str]) -> Summary:
        """A chapter's summary from its sections' summaries."""
        ...

    async def book(self, title: str, author: str | None, summaries: str) -> str:
        """The executive summary from the combined chapter summaries."""
        ...


def parse_summary(reply: str) -> Summary:
    """Read ``SUMMARY: ... TOPICS: ...`` from a model reply, tolerating a missing marker."""
    reply = reply.strip()
    found = _SUMMARY.search(reply)
    body = found.group(1) if found else _TOPICS.split(reply)[0]
    body = " ".join(body.split())[:_SUMMARY_CHARS]
    topics_match = _TOPICS.search(reply)
    topics = clean_labels(topics_match.group(1).splitlines()[0]) if topics_match else []
    return Summary(body, topics)


def clean_labels(raw: str, limit: int = MAX_TOPICS) -> list[str]:
    """Comma/semicolon separated labels, lowercased, deduplicated, short."""
    labels: list[str] = []
    for part in re.split(r"[,;\n]", raw):
        label = " ".join(part.strip(" \t-*#.\"'`[]").lower().split())[:_TOPIC_CHARS]
        if label and label not in labels:
            labels.append(label)
    return labels[:limit]


class LLMSummaryWriter:
    """Summaries from a chat model (local llama.cpp or hosted) at the summary temperature."""

    def __init__(self, model: BaseChatModel, name: str, max_tokens: int = 220) -> None:
        self.model = model
        self.name = name
        self.max_tokens = max_tokens

    async def _ask(self, system: str, user: str, max_tokens: int) -> str:
        reply = await self.model.ainvoke(
            [SystemMessage(system), HumanMessage(user)], max_tokens=max_tokens
        )
        return reply.content if isinstance(reply.content, str) else str(reply.content)

    async def section(self, title: str, heading: str, text: str) -> Summary:
        """See :class:`SummaryWriter`."""
        reply = await self._ask(
            prompts.SECTION_SUMMARY_SYSTEM,
            prompts.SECTION_SUMMARY_USER.format(title=title, heading=heading, text=text),
            self.max_tokens,
        )
        return parse_summary(reply)

    async def chapter(self, title: str, chapter: str, summaries: list[str]) -> Summary:
        """See :class:`SummaryWriter`."""
        reply = await self._ask(
            prompts.CHAPTER_SUMMARY_SYSTEM,
            prompts.CHAPTER_SUMMARY_USER.format(
                title=title, chapter=chapter, summaries="\n".join(f"- {s}" for s in summaries)
            ),
            self.max_tokens + 80,
        )
        return parse_summary(reply)

    async def book(self, title: str, author: str | None, summaries: str) -> str:
        """See :class:`SummaryWriter`."""
        reply = await self._ask(
            prompts.BOOK_SUMMARY_SYSTEM,
            prompts.BOOK_SUMMARY_USER.format(
                title=title, author=f" by {author}" if author else "", summaries=summaries
            ),
            self.max_tokens * 3,
        )
        return reply.strip()


def _lead(texts: list[str], sentences: int) -> str:
    picked: list[str] = []
    for text in texts:
        for sentence in split_sentences(" ".join(text.split())):
            picked.append(sentence)
            if len(picked) == sentences:
                return " ".join(picked)
    return " ".join(picked)


# Words too common in speech and narration to name a topic.
_NOT_TOPICS = frozenset(
    [
        "about",
        "after",
        "again",
        "also",
        "back",
        "been",
        "before",
        "being",
        "call",
        "came",
        "come",
        "could",
        "down",
        "even",
        "every",
        "going",
        "good",
        "into",
        "just",
        "know",
        "like",
        "made",
        "make",
        "much",
        "must",
        "need",
        "needs",
        "never",
        "okay",
        "only",
        "other",
        "over",
        "really",
        "right",
        "said",
        "same",
        "says",
        "should",
        "some",
        "still",
        "such",
        "than",
        "then",
        "thing",
        "think",
        "those",
        "through",
        "told",
        "very",
        "want",
        "well",
        "went",
        "while",
        "would",
        "yeah",
        "yes",
    ]
)


def _keywords(texts: list[str], limit: int = MAX_TOPICS) -> list[str]:
    counts = Counter(
        w for text in texts for w in content_words(text) if len(w) > 3 and w not in _NOT_TOPICS
    )
    return [term for term, _ in counts.most_common(limit)]


class ExtractiveSummaryWriter:
    """Lead sentences and frequent terms: no model, deterministic (tests, load runs)."""

    name = "extractive"

    async def section(self, title: str, heading: str, text: str) -> Summary:
        """See :class:`SummaryWriter`."""
        return Summary(_lead([text], 3), _keywords([text]))

    async def chapter(self, title: str, chapter: str, summaries: list[str]) -> Summary:
        """See :class:`SummaryWriter`."""
        firsts = [_lead([s], 1) for s in summaries]
        return Summary(_lead(firsts, 5), _keywords(summaries))

    async def book(self, title: str, author: str | None, summaries: str) -> str:
        """See :class:`SummaryWriter`."""
        lines = [line.split(": ", 1)[-1] for line in summaries.splitlines() if line.strip()]
        return _lead([_lead([line], 1) for line in lines], 8)


async def summary_writer(settings: Settings, spec: str | None = None) -> SummaryWriter:
    """The writer for ``spec`` (default ``settings.summary_model`` or the chat model)."""
    spec = spec or settings.summary_model or settings.chat_model
    if spec == "extractive":
        return ExtractiveSummaryWriter()
    # a book's summaries are background work: on the local model they yield to answers
    model = await achat_model(spec, settings, settings.temperature_summary, background=True)
    return LLMSummaryWriter(model, model_label(spec), settings.summary_max_tokens)


async def topic_tags(settings: Settings, text: str, *, spec: str | None = None) -> list[str]:
    """3-6 topic tags for a transcript from the labeling model (frequent terms if extractive)."""
    spec = spec or settings.summary_model or settings.chat_model
    sample = text[: settings.summary_chapter_input_chars]
    if spec == "extractive":
        return _keywords([sample], limit=5)
    model = await achat_model(spec, settings, 0.0)
    reply = await model.ainvoke(
        [
            SystemMessage(prompts.TRANSCRIPT_TAGS_SYSTEM),
            HumanMessage(prompts.TRANSCRIPT_TAGS_USER.format(text=sample)),
        ],
        max_tokens=48,
    )
    return clean_labels(str(reply.content), limit=6)
