"""LLM rerank of the first-stage candidates (seed 002 step 8).

No packaged cross-encoder exists offline (see MODELS.md), so the chat model judges relevance:

* the local llama.cpp model scores each passage on its own, from its next-token
  probabilities: relevance = P(Yes) / (P(Yes) + P(No)) for the first answer token of a short
  chat prompt (query, then passage). The prompt's shared start (system prompt and query) is
  evaluated once per query and kept in llama.cpp's KV cache; each passage costs only its own
  tokens. No text is generated.
* any other chat model (hosted: no cheap log-probabilities here) scores every passage 0-10
  in one batch call.

Either way the relevance is blended with the first-stage rank (:func:`combine_scores`): a
small model's judgement nudges a good hybrid ranking rather than replacing it.
"""

from __future__ import annotations

import asyncio
import math
import re
import sys
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from agent import prompts

_SCORE = re.compile(r"^\s*\[?(\d+)\]?\s*[:=\-]\s*(\d+(?:\.\d+)?)", re.M)
PASSAGE_CHARS = 500
"""Characters of each passage shown to the batch scorer."""
QUESTION_CHARS = 1000
"""Longest question the pointwise scorer reads (the API accepts far longer ones)."""
MAX_PASSAGE_CHARS = 4000
"""Cap on ``passage_chars`` so that one prompt always fits the local context (4096 tokens)."""
RANK_OFFSET = 2.0
"""Prior of first-stage rank ``i`` (0-based): ``RANK_OFFSET / (RANK_OFFSET + i)``. Measured
on SciFact with the local model, 2 was at the middle of the best region (1 to 3)."""

_YES = ("Yes", " Yes", "yes", " yes", "YES")
_NO = ("No", " No", "no", " no", "NO")


# --- shared pieces ----------------------------------------------------------------------------


def truncate_passage(text: str, limit: int) -> str:
    """``text`` on one line (whitespace collapsed), cut at a word boundary to at most
    ``limit`` characters; a cut passage ends with an ellipsis."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    head = flat[: limit + 1]
    space = head.rfind(" ")
    # a single huge "word" (a URL, a table row) is cut mid-word rather than dropped
    cut = head[:space] if space > limit // 2 else flat[:limit]
    return cut.rstrip() + "…"


def with_title(title: str | None, text: str) -> str:
    """The passage as the reranker reads it: ``title. text``, unless the text already starts
    with its document's title (a first chunk) or there is none."""
    title = " ".join((title or "").split())
    if not title or " ".join(text.split()).startswith(title[:40]):
        return text
    return f"{title}. {text}"


def rank_prior(count: int, offset: float = RANK_OFFSET) -> list[float]:
    """Reciprocal-rank prior of ``count`` first-stage positions: 1 for the first, falling as
    ``offset / (offset + rank)``."""
    return [offset / (offset + i) for i in range(count)]


def combine_scores(relevance: Sequence[float], weight: float) -> list[float]:
    """Final scores of candidates given best first: ``weight * relevance`` (0..1) plus
    ``(1 - weight) *`` their reciprocal-rank prior. ``weight`` 1 ranks by relevance alone,
    0 keeps the first-stage order."""
    w = min(max(float(weight), 0.0), 1.0)
    prior = rank_prior(len(relevance))
    return [w * float(r) + (1.0 - w) * p for r, p in zip(relevance, prior, strict=True)]


def rerank_order(relevance: Sequence[float], weight: float) -> list[int]:
    """Indices of the candidates (given best first) by combined score; ties keep their order."""
    final = combine_scores(relevance, weight)
    return sorted(range(len(final)), key=lambda i: (-final[i], i))


# --- batch 0-10 scoring (hosted and other chat models) ----------------------------------------


def parse_scores(reply: str, count: int) -> list[float]:
    """Scores by passage number (1-based) from ``n: score`` lines; missing ones are 0."""
    scores = [0.0] * count
    for number, value in _SCORE.findall(reply):
        index = int(number) - 1
        if 0 <= index < count:
            scores[index] = min(max(float(value), 0.0), 10.0)
    return scores


async def batch_scores(model: BaseChatModel, question: str, passages: list[str]) -> list[float]:
    """Relevance 0-10 of each passage to ``question`` from one model call."""
    if not passages:
        return []
    listed = "\n\n".join(
        f"[{i}] {truncate_passage(p, PASSAGE_CHARS)}" for i, p in enumerate(passages, start=1)
    )
    reply = await model.ainvoke(
        [
            SystemMessage(prompts.RERANK_SYSTEM),
            HumanMessage(prompts.RERANK_USER.format(question=question, passages=listed)),
        ],
        max_tokens=8 * len(passages) + 16,
    )
    return parse_scores(reply.content if isinstance(reply.content, str) else "", len(passages))


# --- pointwise Yes/No scoring on the local llama.cpp model -------------------------------------


def llama_client(model: BaseChatModel) -> Any | None:
    """The in-process ``llama_cpp.Llama`` behind ``model``, or ``None`` for other models."""
    client = getattr(model, "client", None)
    local = sys.modules.get("agent.local_models")  # not loaded: no local model exists
    if local is not None and isinstance(model, local.LocalChatModel):
        return client
    # another llama.cpp chat wrapper: anything with the Llama evaluation interface
    if all(hasattr(client, name) for name in ("eval", "n_tokens", "input_ids", "_ctx")):
        return client
    return None


@dataclass(frozen=True)
class _Vocab:
    """What the scorer needs to know about one model: how to write a chat prompt and which
    tokens start a Yes or a No answer."""

    template: Any  # a llama_cpp Jinja2ChatFormatter, or None for plain ChatML
    yes: tuple[int, ...]
    no: tuple[int, ...]


_VOCABS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _single_tokens(llama: Any, words: Sequence[str]) -> tuple[int, ...]:
    ids: list[int] = []
    for word in words:
        tokens = llama.tokenize(word.encode(), add_bos=False, special=False)
        if len(tokens) == 1 and tokens[0] not in ids:
            ids.append(tokens[0])
    return tuple(ids)


def _vocab(llama: Any) -> _Vocab:
    cached = _VOCABS.get(llama)
    if cached is not None:
        return cached
    template = None
    source = (getattr(llama, "metadata", None) or {}).get("tokenizer.chat_template")
    if source:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        def text(token: int) -> str:
            return llama._model.token_get_text(token) if token != -1 else ""

        template = Jinja2ChatFormatter(source, text(llama.token_eos()), text(llama.token_bos()))
    vocab = _Vocab(template, _single_tokens(llama, _YES), _single_tokens(llama, _NO))
    if not vocab.yes or not vocab.no:
        raise RuntimeError("the local model has no single-token Yes/No answers")
    _VOCABS[llama] = vocab
    return vocab


def pointwise_prompt(question: str, passage: str) -> tuple[str, str]:
    """System and user message asking whether ``passage`` is relevant to ``question``; the
    question comes first so that every passage of one query shares the prompt's start."""
    return prompts.RERANK_POINTWISE_SYSTEM, prompts.RERANK_POINTWISE_USER.format(
        question=question, passage=passage
    )


def _prompt_tokens(llama: Any, vocab: _Vocab, system: str, user: str) -> list[int]:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    if vocab.template is not None:
        rendered = vocab.template(messages=messages)
        text, add_bos = rendered.prompt, not rendered.added_special
    else:  # ChatML, what Qwen's template writes
        text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
        text, add_bos = text + "<|im_start|>assistant\n", False
    return llama.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True)


def _shared_prefix(llama: Any, tokens: Sequence[int]) -> int:
    """Tokens at the start of ``tokens`` that the context has already evaluated."""
    cached = np.asarray(llama.input_ids[: llama.n_tokens])
    n = min(len(cached), len(tokens))
    differ = np.flatnonzero(cached[:n] != np.asarray(tokens[:n], dtype=cached.dtype))
    return int(differ[0]) if len(differ) else n


def _yes_probability(logits: Any, yes_ids: Sequence[int], no_ids: Sequence[int]) -> float:
    yes = [float(logits[t]) for t in yes_ids]
    no = [float(logits[t]) for t in no_ids]
    top = max(yes + no)
    p_yes = sum(math.exp(x - top) for x in yes)
    p_no = sum(math.exp(x - top) for x in no)
    return p_yes / (p_yes + p_no)


def score_prompts(
    llama: Any,
    prompts_tokens: Sequence[Sequence[int]],
    yes: Sequence[int],
    no: Sequence[int],
    *,
    reuse: bool = True,
    cancel: threading.Event | None = None,
) -> list[float]:
    """P(Yes) / (P(Yes) + P(No)) for the token after each prompt, evaluated one by one.

    With ``reuse`` each prompt keeps the longest start it shares with what the context last
    evaluated (the system prompt and query, after the first passage) and evaluates only the
    rest; otherwise every prompt is evaluated from an empty context. The caller holds the
    model's lock. ``cancel`` stops between prompts (a timed-out search).
    """
    scores: list[float] = []
    for tokens in prompts_tokens:
        if cancel is not None and cancel.is_set():
            raise TimeoutError("rerank cancelled")
        tokens = list(tokens)
        # at least the last token is evaluated: its logits are the answer's
        keep = min(_shared_prefix(llama, tokens), len(tokens) - 1) if reuse else 0
        if keep == 0 or not llama._ctx.kv_cache_seq_rm(-1, keep, -1):
            llama.reset()
            keep = 0
        llama.n_tokens = keep
        llama.eval(tokens[keep:])
        scores.append(_yes_probability(llama._ctx.get_logits_ith(-1), yes, no))
    return scores


def pointwise_scores_sync(
    llama: Any,
    question: str,
    passages: Sequence[str],
    passage_chars: int,
    *,
    reuse: bool = True,
    cancel: threading.Event | None = None,
) -> list[float]:
    """Relevance 0..1 of each passage to ``question`` on the llama.cpp model ``llama``
    (blocking; takes the process-wide generation lock)."""
    if not passages:
        return []
    vocab = _vocab(llama)
    query = truncate_passage(question, QUESTION_CHARS)
    passage_chars = min(passage_chars, MAX_PASSAGE_CHARS)
    tokens = [
        _prompt_tokens(llama, vocab, *pointwise_prompt(query, truncate_passage(p, passage_chars)))
        for p in passages
    ]
    from agent.local_models import _GENERATION_LOCK

    with _GENERATION_LOCK:
        return score_prompts(llama, tokens, vocab.yes, vocab.no, reuse=reuse, cancel=cancel)


async def pointwise_scores(
    llama: Any, question: str, passages: Sequence[str], passage_chars: int
) -> list[float]:
    """:func:`pointwise_scores_sync` off the event loop; cancelling stops it between passages."""
    cancel = threading.Event()
    try:
        return await asyncio.to_thread(
            pointwise_scores_sync, llama, question, list(passages), passage_chars, cancel=cancel
        )
    except asyncio.CancelledError:
        cancel.set()
        raise


# --- dispatch ---------------------------------------------------------------------------------


async def llm_scores(
    model: BaseChatModel,
    question: str,
    passages: list[str],
    *,
    passage_chars: int = PASSAGE_CHARS,
) -> list[float]:
    """Relevance of each passage to ``question``, 0..10: pointwise Yes/No probabilities on the
    local llama.cpp model (scaled by 10), one batch call on any other model."""
    if not passages:
        return []
    llama = llama_client(model)
    if llama is None:
        return await batch_scores(model, question, passages)
    return [10.0 * s for s in await pointwise_scores(llama, question, passages, passage_chars)]
