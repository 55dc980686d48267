"""LLM rerank of the first-stage candidates (seed 002 step 8).

No packaged cross-encoder exists offline (see MODELS.md), so the chat model judges relevance:

* the local llama.cpp model scores each passage by query likelihood (UPR, Sachan et al.
  2022): shown the passage and asked to write the query it answers, how likely is the user's
  actual query, token by token (mean log-probability)? The scores of one query's candidates
  are scaled to 0..1 (min-max). No text is generated; the system prompt stays in llama.cpp's
  KV cache. On SciFact it beat asking the same model "is this passage relevant? Yes/No"
  (relevance alone 0.775 vs 0.649 nDCG@10, which the first stage beats at 0.76-0.79).
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
from typing import Any

import numpy as np
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from agent import prompts

_SCORE = re.compile(r"^\s*\[?(\d+)\]?\s*[:=\-]\s*(\d+(?:\.\d+)?)", re.M)
PASSAGE_CHARS = 500
"""Characters of each passage shown to the batch scorer."""
QUESTION_TOKENS = 128
"""Tokens of the query whose likelihood is scored (the API accepts far longer queries)."""
MAX_PASSAGE_CHARS = 4000
"""Cap on ``passage_chars`` so that one prompt always fits the local context (4096 tokens)."""
RANK_OFFSET = 2.0
"""Prior of first-stage rank ``i`` (0-based): ``RANK_OFFSET / (RANK_OFFSET + i)``. Measured
on SciFact with the local model, 2 was at the middle of the best region (1 to 3)."""


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


# --- query likelihood on the local llama.cpp model ------------------------------------------


def llama_client(model: BaseChatModel) -> Any | None:
    """The in-process ``llama_cpp.Llama`` behind ``model``, or ``None`` for other models."""
    client = getattr(model, "client", None)
    local = sys.modules.get("agent.local_models")  # not loaded: no local model exists
    if local is not None and isinstance(model, local.LocalChatModel):
        return client
    # another llama.cpp chat wrapper: anything with the Llama evaluation interface
    if all(hasattr(client, name) for name in ("eval", "n_tokens", "input_ids", "_ctx", "_batch")):
        return client
    return None


_TEMPLATES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_NO_TEMPLATE = object()


def _template(llama: Any) -> Any | None:
    """The model's chat template (a llama_cpp ``Jinja2ChatFormatter``), ``None`` for ChatML."""
    cached = _TEMPLATES.get(llama)
    if cached is not None:
        return None if cached is _NO_TEMPLATE else cached
    template = None
    source = (getattr(llama, "metadata", None) or {}).get("tokenizer.chat_template")
    if source:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        def text(token: int) -> str:
            return llama._model.token_get_text(token) if token != -1 else ""

        template = Jinja2ChatFormatter(source, text(llama.token_eos()), text(llama.token_bos()))
    _TEMPLATES[llama] = _NO_TEMPLATE if template is None else template
    return template


def likelihood_prompt(passage: str) -> tuple[str, str]:
    """System and user message showing ``passage`` and asking for the query it answers."""
    return prompts.RERANK_LIKELIHOOD_SYSTEM, prompts.RERANK_LIKELIHOOD_USER.format(passage=passage)


def _prompt_tokens(llama: Any, system: str, user: str) -> list[int]:
    """The chat prompt up to the start of the assistant's reply."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    template = _template(llama)
    if template is not None:
        rendered = template(messages=messages)
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


def _log_softmax_at(logits: np.ndarray, token: int) -> float:
    top = float(logits.max())
    return float(logits[token]) - top - math.log(float(np.exp(logits - top).sum()))


def query_log_likelihood(
    llama: Any, prompt: Sequence[int], target: Sequence[int], *, reuse: bool = True
) -> float:
    """Mean log-probability of ``target`` as the reply to ``prompt``; the caller holds the
    model's lock.

    The prompt but its last token is evaluated as usual (keeping, with ``reuse``, the start
    it shares with what the context last held); then its last token and the target but its
    last go in one batch that asks for logits at every position: position ``i`` predicts
    target token ``i``. The context is left holding the prompt and all of the target but
    its last token, and ``n_tokens`` / ``input_ids`` say so.
    """
    prompt, target = list(prompt), list(target)
    keep = min(_shared_prefix(llama, prompt), len(prompt) - 1) if reuse else 0
    if keep == 0 or not llama._ctx.kv_cache_seq_rm(-1, keep, -1):
        llama.reset()
        keep = 0
    llama.n_tokens = keep
    llama.eval(prompt[keep:-1])
    window = [prompt[-1], *target[:-1]]
    past = llama.n_tokens
    llama._ctx.kv_cache_seq_rm(-1, past, -1)
    llama._batch.set_batch(batch=window, n_past=past, logits_all=True)
    llama._ctx.decode(llama._batch)
    llama.input_ids[past : past + len(window)] = window
    llama.n_tokens = past + len(window)
    n_vocab = llama.n_vocab()
    total = 0.0
    for i, token in enumerate(target):
        logits = np.ctypeslib.as_array(llama._ctx.get_logits_ith(i), shape=(n_vocab,))
        total += _log_softmax_at(np.asarray(logits, dtype=np.float64), token)
    return total / len(target)


def scaled(values: Sequence[float]) -> list[float]:
    """``values`` mapped onto 0..1 (min-max); all equal: 0.5 each."""
    low, high = min(values), max(values)
    if high - low <= 1e-12:
        return [0.5] * len(values)
    return [(v - low) / (high - low) for v in values]


def likelihood_scores_sync(
    llama: Any,
    question: str,
    passages: Sequence[str],
    passage_chars: int,
    *,
    reuse: bool = True,
    cancel: threading.Event | None = None,
) -> list[float]:
    """Relevance 0..1 of each passage to ``question`` by query likelihood on the llama.cpp
    model ``llama``, scaled over the passages (blocking; takes the process-wide generation
    lock). ``cancel`` stops between passages (a timed-out search)."""
    if not passages:
        return []
    flat = " ".join(question.split())
    window = max(min(QUESTION_TOKENS, getattr(llama, "n_batch", 512)) - 1, 1)
    target = llama.tokenize(flat.encode("utf-8"), add_bos=False, special=False)[:window]
    if not target:
        return [0.5] * len(passages)
    passage_chars = min(passage_chars, MAX_PASSAGE_CHARS)
    prompts_tokens = [
        _prompt_tokens(llama, *likelihood_prompt(truncate_passage(p, passage_chars)))
        for p in passages
    ]
    from agent.local_models import _GENERATION_LOCK

    raw: list[float] = []
    with _GENERATION_LOCK:
        for tokens in prompts_tokens:
            if cancel is not None and cancel.is_set():
                raise TimeoutError("rerank cancelled")
            raw.append(query_log_likelihood(llama, tokens, target, reuse=reuse))
    return scaled(raw)


async def likelihood_scores(
    llama: Any, question: str, passages: Sequence[str], passage_chars: int
) -> list[float]:
    """:func:`likelihood_scores_sync` off the event loop; cancelling stops it between
    passages."""
    cancel = threading.Event()
    try:
        return await asyncio.to_thread(
            likelihood_scores_sync, llama, question, list(passages), passage_chars, cancel=cancel
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
    """Relevance of each passage to ``question``, 0..10: query likelihood on the local
    llama.cpp model (scaled over the passages, times 10), one batch call on any other model."""
    if not passages:
        return []
    llama = llama_client(model)
    if llama is None:
        return await batch_scores(model, question, passages)
    return [10.0 * s for s in await likelihood_scores(llama, question, passages, passage_chars)]
