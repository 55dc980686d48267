"""Query-likelihood relevance (UPR, Sachan et al. 2022) on a llama.cpp model, in the model
process.

Shown a passage and asked to write the query it answers, how likely is the user's actual
query, token by token (mean log-probability)? No text is generated, and the system prompt
stays in llama.cpp's KV cache between passages. These functions drive ``llama_cpp.Llama``
directly, so they run where the model lives (:mod:`agent.model_server.process`); the app
reaches them over HTTP (:func:`agent.model_server.client.likelihood_scores`).
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from agent import prompts

QUESTION_TOKENS = 128
"""Tokens of the query whose likelihood is scored (the API accepts far longer queries)."""
MAX_PASSAGE_CHARS = 4000
"""Cap on ``passage_chars`` so that one prompt always fits the local context (4096 tokens)."""


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


def chat_prompt(llama: Any, messages: Sequence[Mapping[str, str]]) -> list[int]:
    """The tokens of ``messages`` (``role`` and ``content`` each) in the model's chat
    template, up to the start of the assistant's reply."""
    template = _template(llama)
    if template is not None:
        rendered = template(messages=list(messages))
        text, add_bos = rendered.prompt, not rendered.added_special
    else:  # ChatML, what Qwen's template writes
        text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
        text, add_bos = text + "<|im_start|>assistant\n", False
    return llama.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True)


def _prompt_tokens(llama: Any, system: str, user: str) -> list[int]:
    """The chat prompt of one system and one user message, up to the assistant's reply."""
    return chat_prompt(
        llama, [{"role": "system", "content": system}, {"role": "user", "content": user}]
    )


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
    model ``llama``, scaled over the passages (blocking; the caller holds the model's lock).
    ``cancel`` stops between passages (a timed-out or abandoned search)."""
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
    raw: list[float] = []
    for tokens in prompts_tokens:
        if cancel is not None and cancel.is_set():
            raise TimeoutError("rerank cancelled")
        raw.append(query_log_likelihood(llama, tokens, target, reuse=reuse))
    return scaled(raw)
