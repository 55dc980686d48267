"""Messages the keyword rules miss, routed by their nearest labelled examples under the
real local embedder."""

import pytest

from agent.chat.intents import (
    EXAMPLES,
    IntentMatch,
    example_vectors,
    nearest_intent,
    routed_by_intent,
)
from agent.chat.routing import choose_route
from agent.config import Settings
from agent.models import embedding_model


@pytest.fixture(scope="module")
def embedder():
    return embedding_model("local", Settings()).embedder


def _route(embedder, message: str, single_book: bool = True, names=("Pride and Prejudice",)):
    choice = choose_route(message, single_book=single_book, book_names=names)
    match = nearest_intent(embedder, embedder.embed_query(message))
    return routed_by_intent(choice, message, match, single_book=single_book, book_names=names)


@pytest.mark.parametrize(
    ("message", "route"),
    [
        ("cheers mate", "general"),
        ("ty", "general"),
        ("are you chatgpt?", "direct"),
        ("what's this one about?", "global_summary"),
        ("give me a quick rundown of the book", "global_summary"),
        # the rules' own paths are not second-guessed, and facts stay a search
        ("Who is Dinah?", "hybrid"),
        ("Who wrote the novel War and Peace?", "hybrid"),
        ("What is the title of Iwan Roberts' book?", "hybrid"),
        ("Is Mr. Bingley a rich man?", "hybrid"),
        ("What is the King's advice to the White Rabbit about reading the verses?", "hybrid"),
        ("how many hectares were restored in 2022", "hybrid"),
    ],
)
def test_messages_the_rules_miss_take_the_path_their_meaning_says(embedder, message, route):
    assert _route(embedder, message).route == route


def test_a_summary_by_meaning_needs_one_book_and_no_topic(embedder):
    assert _route(embedder, "what's this one about?", single_book=False, names=()).route == (
        "hybrid"
    )
    # a topic of its own: searched, as the rules left it
    topic = _route(embedder, "give me a quick rundown of Lady Catherine's visit")
    assert topic.route == "hybrid"


def test_reasons_say_the_meaning_was_read(embedder):
    assert "by meaning" in _route(embedder, "cheers mate").reason
    summary = _route(embedder, "what's this one about?")
    assert summary.mode is None and "by meaning" in summary.reason


def test_only_a_clear_lead_moves_a_message():
    choice = choose_route("cheers mate", single_book=True)
    near_tie = IntentMatch("small_talk", 0.9, 0.05)
    assert routed_by_intent(choice, "cheers mate", near_tie, single_book=True) == choice
    far = IntentMatch("small_talk", 0.3, 0.5)
    assert routed_by_intent(choice, "cheers mate", far, single_book=True) == choice


def test_every_intent_has_examples_of_its_own():
    texts = [t for examples in EXAMPLES.values() for t in examples]
    assert len(texts) == len(set(texts))
    assert all(len(examples) >= 10 for examples in EXAMPLES.values())


def test_example_vectors_are_kept_on_disk_for_the_next_process(embedder, tmp_path):
    first = example_vectors(embedder, "minilm-test", tmp_path)
    (stored,) = tmp_path.glob("intents-*.npz")

    class Unused:  # a new process's embedder: the stored vectors are read, nothing embedded
        def embed_query(self, text):
            raise AssertionError("embedded again")

    second, third = Unused(), Unused()  # both alive: kept in memory by identity
    again = example_vectors(second, "minilm-test", tmp_path)
    assert set(again) == set(EXAMPLES) and all((again[i] == first[i]).all() for i in EXAMPLES)
    stored.write_bytes(b"torn")
    with pytest.raises(AssertionError, match="embedded again"):
        example_vectors(third, "minilm-test", tmp_path)
