"""The reranker: passage truncation, score blending, dispatch, the query-likelihood scorer
and its KV-cache prefix reuse, on a toy model with the llama.cpp interface (the run on the
real model is in tests/e2e/test_local_model.py)."""

from __future__ import annotations

import ctypes
import math
import threading

import numpy as np
import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from agent.model_server.scoring import (
    likelihood_scores_sync,
    query_log_likelihood,
    truncate_passage,
)
from agent.retrieval import rerank
from agent.retrieval.rerank import (
    combine_scores,
    llm_scores,
    parse_scores,
    rank_prior,
    rerank_order,
    with_title,
)

# --- truncation --------------------------------------------------------------------------------


def test_short_passages_only_lose_extra_whitespace():
    assert truncate_passage("  a  b\n\nc\t", 50) == "a b c"
    assert truncate_passage("exactly ten", 11) == "exactly ten"


def test_long_passages_are_cut_at_a_word_boundary():
    text = "alpha beta gamma delta epsilon"
    cut = truncate_passage(text, 14)  # "alpha beta gam|ma"
    assert cut == "alpha beta…"
    assert truncate_passage(text, 16) == "alpha beta gamma…"  # the word ends at the limit
    assert len(truncate_passage("word " * 200, 600)) <= 601


def test_one_huge_word_is_cut_mid_word():
    assert truncate_passage("x" * 50 + " y", 10) == "x" * 10 + "…"


def test_the_title_is_added_unless_the_chunk_starts_with_it():
    assert with_title("Penguins", "They live in the south.") == "Penguins. They live in the south."
    assert with_title("Penguins  of the world", "Penguins of the world\n\nThey") == (
        "Penguins of the world\n\nThey"
    )
    assert with_title("", "text") == with_title(None, "text") == "text"


# --- blending with the first-stage rank -------------------------------------------------------


def test_rank_prior_is_reciprocal_rank():
    assert rank_prior(3, offset=1.0) == [1.0, 0.5, pytest.approx(1 / 3)]
    assert rank_prior(3) == [
        1.0,
        pytest.approx(rerank.RANK_OFFSET / (rerank.RANK_OFFSET + 1)),
        pytest.approx(rerank.RANK_OFFSET / (rerank.RANK_OFFSET + 2)),
    ]


def test_weight_zero_keeps_the_first_stage_order_and_one_follows_relevance():
    relevance = [0.1, 0.9, 0.5]
    assert rerank_order(relevance, 0.0) == [0, 1, 2]
    assert rerank_order(relevance, 1.0) == [1, 2, 0]
    assert combine_scores(relevance, 2.0) == combine_scores(relevance, 1.0)  # clamped
    w = 0.7
    assert combine_scores(relevance, w) == pytest.approx(
        [w * r + (1 - w) * p for r, p in zip(relevance, rank_prior(3), strict=True)]
    )


def test_a_weak_judgement_does_not_overturn_the_top_but_a_clear_one_does():
    w = 0.7
    # equal relevance: the first-stage order stands
    assert rerank_order([0.6, 0.6, 0.6], w) == [0, 1, 2]
    # slightly preferred lower ranks do not move
    assert rerank_order([0.50, 0.55, 0.58], w) == [0, 1, 2]
    # a clearly relevant passage at rank 4 overtakes irrelevant ones above it
    assert rerank_order([0.2, 0.25, 0.2, 0.3, 0.9], w)[0] == 4


def test_batch_scores_are_parsed_and_bounded():
    assert parse_scores("[1]: 7\n2 = 11\n4: 3\nnoise 5: 5", 3) == [7.0, 10.0, 0.0]


# --- a toy model with the llama.cpp interface ---------------------------------------------------

VOCAB = 64


class ToyBatch:
    """llama.cpp's batch as the scorer fills it: tokens from position ``n_past``."""

    def set_batch(self, batch, n_past: int, logits_all: bool) -> None:
        assert logits_all, "the scorer needs logits at every target position"
        self.tokens, self.n_past = list(batch), n_past


class ToyContext:
    """The ``_ctx`` of :class:`ToyLlama`: KV-cache removal, batch decoding and logits."""

    def __init__(self, llama: ToyLlama) -> None:
        self.llama = llama
        self.rows: list[np.ndarray] = []

    def kv_cache_seq_rm(self, seq_id: int, p0: int, p1: int) -> bool:
        del self.llama.kv[p0:]
        return True

    def decode(self, batch: ToyBatch) -> None:
        llama = self.llama
        assert batch.n_past == len(llama.kv), "the batch does not follow the KV cache"
        self.rows = []
        for token in batch.tokens:
            llama.kv.append(token)
            self.rows.append(llama.next_token_logits())
        llama.evaluated += len(batch.tokens)

    def get_logits_ith(self, i: int):
        return self.rows[i].ctypes.data_as(ctypes.POINTER(ctypes.c_float))


class ToyLlama:
    """Whitespace tokens; its "attention" is ``kv``, the tokens actually evaluated (what
    llama.cpp's KV cache holds): logits come from ``kv`` alone, so that wrong prefix
    bookkeeping gives different scores. A word of the passage in ``kv`` is e^3 times as
    likely as any other word to come next."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self.input_ids = np.zeros(4096, dtype=np.intc)
        self.n_tokens = 0
        self.n_batch = 512
        self.kv: list[int] = []
        self.evaluated = 0
        self.metadata: dict = {}  # no chat template: the scorer writes ChatML
        self._ctx = ToyContext(self)
        self._batch = ToyBatch()

    def _id(self, word: str) -> int:
        token = self.vocab.setdefault(word, len(self.vocab))
        assert token < VOCAB
        return token

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return [self._id(w.lower() if w.istitle() else w) for w in text.decode().split()]

    def n_vocab(self) -> int:
        return VOCAB

    def reset(self) -> None:
        self.n_tokens = 0

    def eval(self, tokens) -> None:
        assert len(self.kv) >= self.n_tokens, "n_tokens points past the KV cache"
        del self.kv[self.n_tokens :]
        self.kv.extend(tokens)
        self.input_ids[self.n_tokens : self.n_tokens + len(tokens)] = tokens
        self.n_tokens += len(tokens)
        self.evaluated += len(tokens)

    def passage_words(self, tokens) -> set[int]:
        words = {v: k for k, v in self.vocab.items()}
        text = [words[t] for t in tokens]
        if "passage:" not in text:
            return set()
        start = text.index("passage:") + 1
        end = text.index("write", start) if "write" in text[start:] else len(text)
        return set(tokens[start:end])

    def next_token_logits(self) -> np.ndarray:
        logits = np.zeros(VOCAB, dtype=np.float32)
        logits[list(self.passage_words(self.kv))] = 3.0
        return logits


QUESTION = "where do penguins live"
PASSAGES = [
    "cats sleep most of the day",
    "penguins live in the southern hemisphere where it is cold",
    "where do trains go at night",
]


def _expected_log_likelihood(llama: ToyLlama, passage: str, question: str) -> float:
    """The toy's mean log-probability of ``question`` after ``passage``, by hand."""
    inside = {llama._id(w) for w in passage.split()}
    log_z = math.log(len(inside) * math.e**3 + (VOCAB - len(inside)))
    return sum((3.0 if llama._id(w) in inside else 0.0) - log_z for w in question.split()) / len(
        question.split()
    )


def test_query_likelihood_is_the_mean_log_probability_of_the_query_tokens():
    llama = ToyLlama()
    prompt = llama.tokenize(b"<|im_start|>user Passage: penguins live here Write one <|im_end|>")
    target = llama.tokenize(QUESTION.encode())
    got = query_log_likelihood(llama, prompt, target)
    assert got == pytest.approx(_expected_log_likelihood(llama, "penguins live here", QUESTION))
    # the context now holds prompt + target but its last token, and says so
    assert llama.n_tokens == len(llama.kv) == len(prompt) + len(target) - 1
    assert list(llama.input_ids[: llama.n_tokens]) == llama.kv


def test_passages_holding_more_of_the_query_score_higher_scaled_to_0_1():
    scores = likelihood_scores_sync(ToyLlama(), QUESTION, PASSAGES, 600)
    assert scores[1] == pytest.approx(1.0)  # "penguins", "live" and "where"
    assert scores[0] == pytest.approx(0.0)  # none of the query's words
    assert 0.0 < scores[2] < 1.0  # "where" and "do"


def test_prefix_reuse_scores_like_from_scratch_and_evaluates_fewer_tokens():
    fresh, reused = ToyLlama(), ToyLlama()
    scratch = likelihood_scores_sync(fresh, QUESTION, PASSAGES, 600, reuse=False)
    cached = likelihood_scores_sync(reused, QUESTION, PASSAGES, 600)
    assert cached == pytest.approx(scratch)
    assert reused.evaluated < fresh.evaluated
    # a second query after the first: the stale passage and query are never read
    again = likelihood_scores_sync(reused, "penguins", PASSAGES[1:], 600)
    assert again == pytest.approx(likelihood_scores_sync(ToyLlama(), "penguins", PASSAGES[1:], 600))


def test_a_cancelled_rerank_stops_between_passages():
    cancel = threading.Event()
    cancel.set()
    llama = ToyLlama()
    with pytest.raises(TimeoutError):
        likelihood_scores_sync(llama, QUESTION, PASSAGES, 600, cancel=cancel)
    assert llama.evaluated == 0


# --- dispatch ----------------------------------------------------------------------------------


async def test_hosted_models_get_the_batch_prompt():
    model = GenericFakeChatModel(messages=iter([AIMessage("1: 2\n2: 8")]))
    assert await llm_scores(model, "q", ["a", "b"]) == [2.0, 8.0]
