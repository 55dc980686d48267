"""Reading the fused best sentence by sentence (:mod:`agent.retrieval.sentence_match`)."""

from __future__ import annotations

import numpy as np

from agent.retrieval.sentence_match import best_sentence_similarity

_AXES = ("fire", "lunch", "parking")


def _embed(texts: list[str]) -> list[list[float]]:
    """One axis per topic word a text holds: a sentence about one topic lies on its axis."""
    return [[float(word in t.lower()) for word in _AXES] + [0.1] for t in texts]


def test_each_text_scores_its_nearest_sentence():
    question = np.array([1.0, 0.0, 0.0, 0.0])  # about the fire
    mixed = "Parking is by lottery each quarter. The fire assembly point is the museum car park."
    only_lunch = "Lunch is served from noon. Lunch ends at two."
    near = best_sentence_similarity(_embed, [question], [mixed, only_lunch, "ok"])
    assert near[0] > 0.99  # the fire sentence, though the text as a whole is half parking
    assert near[1] < 0.2
    assert near[2] == -1.0  # nothing long enough to be a sentence


def test_the_nearest_of_several_query_vectors_counts():
    lunch, parking = np.array([0.0, 1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0, 0.0])
    text = "Parking spaces are allocated by lottery each quarter."
    assert best_sentence_similarity(_embed, [lunch], [text])[0] < 0.2
    assert best_sentence_similarity(_embed, [lunch, parking], [text])[0] > 0.99


def test_a_sentence_two_windows_share_is_embedded_once():
    embedded: list[str] = []

    def counting(texts: list[str]) -> list[list[float]]:
        embedded.extend(texts)
        return _embed(texts)

    question = np.array([1.0, 0.0, 0.0, 0.0])
    shared = "The fire assembly point is the museum car park."
    first = f"Parking is by lottery each quarter. {shared}"
    second = f"{shared} Lunch is served from noon."
    near = best_sentence_similarity(counting, [question], [first, second, "Lunch ends at two."])
    assert near[0] > 0.99 and near[1] > 0.99 and near[2] < 0.2  # each text keeps its own score
    assert sorted(embedded) == sorted(set(embedded)) and embedded.count(shared) == 1
