"""The reranker: passage truncation, score blending, dispatch, the pointwise scorer's KV-cache
prefix reuse (on a toy model with the llama.cpp interface), and one run on the real model."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import numpy as np
import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from agent.retrieval import rerank
from agent.retrieval.rerank import (
    combine_scores,
    llm_scores,
    parse_scores,
    pointwise_scores,
    pointwise_scores_sync,
    rank_prior,
    rerank_order,
    truncate_passage,
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


class ToyContext:
    """The ``_ctx`` of :class:`ToyLlama`: KV-cache removal and the last logits."""

    def __init__(self, llama: ToyLlama) -> None:
        self.llama = llama

    def kv_cache_seq_rm(self, seq_id: int, p0: int, p1: int) -> bool:
        del self.llama.kv[p0:]
        return True

    def get_logits_ith(self, i: int) -> np.ndarray:
        return self.llama.logits


class ToyLlama:
    """Whitespace tokens; its "attention" is ``kv``, the tokens actually evaluated (what
    llama.cpp's KV cache holds): logits are computed from ``kv`` alone, so that a wrong
    prefix bookkeeping gives different scores. Yes is as likely as the share of query words
    found in the passage, No as likely as the rest."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self.input_ids = np.zeros(4096, dtype=np.intc)
        self.n_tokens = 0
        self.kv: list[int] = []
        self.evaluated = 0
        self.metadata: dict = {}  # no chat template: the scorer writes ChatML
        self._ctx = ToyContext(self)
        self.logits = np.zeros(1)
        self.yes, self.no = self.tokenize(b"Yes")[0], self.tokenize(b"No")[0]

    def _id(self, word: str) -> int:
        return self.vocab.setdefault(word, len(self.vocab))

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return [self._id(w.lower() if w.istitle() else w) for w in text.decode().split()]

    def reset(self) -> None:
        self.n_tokens = 0

    def eval(self, tokens) -> None:
        assert len(self.kv) >= self.n_tokens, "n_tokens points past the KV cache"
        del self.kv[self.n_tokens :]
        self.kv.extend(tokens)
        self.input_ids[self.n_tokens : self.n_tokens + len(tokens)] = tokens
        self.n_tokens += len(tokens)
        self.evaluated += len(tokens)
        words = {v: k for k, v in self.vocab.items()}
        text = [words[t] for t in self.kv]
        query = set(text[text.index("query:") + 1 : text.index("passage:")])
        end = len(text) - 1 - text[::-1].index("is")  # the question after the passage
        passage = set(text[text.index("passage:") + 1 : end])
        share = len(query & passage) / max(len(query), 1)
        self.logits = np.full(len(self.vocab) + 1, -30.0)
        self.logits[self.yes] = np.log(share + 1e-6)
        self.logits[self.no] = np.log(1 - share + 1e-6)


QUESTION = "where do penguins live"
PASSAGES = [
    "cats sleep most of the day",
    "penguins live in the southern hemisphere where it is cold",
    "where do trains go at night",
]


def test_the_pointwise_scorer_reads_yes_over_yes_plus_no():
    llama = ToyLlama()
    scores = pointwise_scores_sync(llama, QUESTION, PASSAGES, 600)
    assert scores[0] == pytest.approx(0.0, abs=1e-4)
    assert scores[1] == pytest.approx(0.75, abs=1e-4)  # three of the four query words
    assert scores[2] == pytest.approx(0.5, abs=1e-4)  # "where" and "do" of four


def test_prefix_reuse_scores_like_from_scratch_and_evaluates_fewer_tokens():
    fresh, reused = ToyLlama(), ToyLlama()
    scratch = pointwise_scores_sync(fresh, QUESTION, PASSAGES, 600, reuse=False)
    cached = pointwise_scores_sync(reused, QUESTION, PASSAGES, 600)
    assert cached == pytest.approx(scratch)
    assert reused.evaluated < fresh.evaluated * 0.75
    # a second query after the first keeps only the system prompt
    again = pointwise_scores_sync(reused, "penguins", PASSAGES[1:], 600)
    assert again == pytest.approx(pointwise_scores_sync(ToyLlama(), "penguins", PASSAGES[1:], 600))


def test_a_cancelled_rerank_stops_between_passages():
    cancel = threading.Event()
    cancel.set()
    llama = ToyLlama()
    with pytest.raises(TimeoutError):
        pointwise_scores_sync(llama, QUESTION, PASSAGES, 600, cancel=cancel)
    assert llama.evaluated == 0


# --- dispatch ----------------------------------------------------------------------------------


async def test_hosted_models_get_the_batch_prompt():
    model = GenericFakeChatModel(messages=iter([AIMessage("1: 2\n2: 8")]))
    assert rerank.llama_client(model) is None
    assert await llm_scores(model, "q", ["a", "b"]) == [2.0, 8.0]


async def test_llama_cpp_models_are_scored_pointwise_on_a_0_to_10_scale():
    model = SimpleNamespace(client=ToyLlama())
    assert rerank.llama_client(model) is model.client
    scores = await llm_scores(model, QUESTION, PASSAGES)
    assert scores == pytest.approx([0.0, 7.5, 5.0], abs=1e-3)
    assert await pointwise_scores(model.client, QUESTION, [], 600) == []


# --- the real local model ----------------------------------------------------------------------


@pytest.mark.local_model
async def test_local_model_ranks_the_answer_first_and_prefix_reuse_changes_nothing():
    from agent.config import Settings
    from agent.models import achat_model

    model = await achat_model("local", Settings(), 0.0)
    llama = rerank.llama_client(model)
    assert llama is not None
    question = "What is the boiling point of water at sea level?"
    passages = [
        "The French Revolution began in 1789 with the storming of the Bastille.",
        "At sea level, pure water boils at 100 degrees Celsius (212 degrees Fahrenheit); "
        "at higher altitudes the boiling point is lower.",
        "A binary search tree keeps its keys in sorted order for fast lookup.",
        "Penguins are flightless birds that live mostly in the Southern Hemisphere.",
    ]
    cached = await pointwise_scores(llama, question, passages, 600)
    assert max(range(len(passages)), key=cached.__getitem__) == 1
    assert cached[1] > 0.5 > max(cached[0], cached[2], cached[3])
    scratch = await rerank.asyncio.to_thread(
        pointwise_scores_sync, llama, question, passages, 600, reuse=False
    )
    # llama.cpp splits the batches differently with and without the cache: logits differ
    # in the last digits (measured up to 0.021 in probability on this CPU)
    assert cached == pytest.approx(scratch, abs=0.05)
    # and the model still chats afterwards (the shared context was left consistent)
    reply = await model.ainvoke("Reply with the single word: ready", max_tokens=5)
    assert reply.content.strip()
