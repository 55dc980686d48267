"""The subjects a comparison sets side by side (agent.retrieval.compared_subjects) and how
their searches share the passages (agent.retrieval.subject_search.dealt)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest

from agent.retrieval.compared_subjects import compared_subjects, subject_query
from agent.retrieval.subject_search import dealt, each_subject_k, held_chunks, name_words
from agent.retrieval.types import RetrievalMetrics, SearchResult


@pytest.mark.parametrize(
    ("question", "subjects", "topic"),
    [
        (
            "Compare the Queen of Hearts and Lady Catherine de Bourgh as domineering figures.",
            ("the Queen of Hearts", "Lady Catherine de Bourgh"),
            "domineering figures",
        ),
        ("Compare the Hatter and the March Hare.", ("the Hatter", "the March Hare"), ""),
        (
            "Compare Jane Bennet's and Elizabeth Bennet's characters.",
            ("Jane Bennet", "Elizabeth Bennet"),
            "characters",
        ),
        ("contrast the Gryphon with the Mock Turtle", ("the Gryphon", "the Mock Turtle"), ""),
        (
            "What are the differences between BM25 and dense retrieval?",
            ("BM25 retrieval", "dense retrieval"),
            "",
        ),
        (
            "What is the difference between a raven and a writing-desk?",
            ("a raven", "a writing-desk"),
            "",
        ),
        (
            "How does DPR differ from BM25 on Natural Questions?",
            ("DPR", "BM25"),
            "Natural Questions",
        ),
        ("How do Mr. Collins and Mr. Wickham differ?", ("Mr. Collins", "Mr. Wickham"), ""),
        ("How are Jane and Elizabeth alike in temperament?", ("Jane", "Elizabeth"), "temperament"),
        (
            "How do Alice and Elizabeth Bennet each react to authority figures?",
            ("Alice", "Elizabeth Bennet"),
            "react to authority figures",
        ),
        ("Python versus Rust for data pipelines", ("Python", "Rust"), "data pipelines"),
        ("Compare and contrast BM25 and DPR.", ("BM25", "DPR"), ""),
        ("Compare the Q1 and Q2 budgets.", ("the Q1 budgets", "Q2 budgets"), ""),
        ("Compare the first and second chapters", ("the first chapters", "second chapters"), ""),
        ("Compare Alice and the Queen of Hearts", ("Alice", "the Queen of Hearts"), ""),
        (
            "Compare Alice, the Hatter and the Queen as rulers",
            ("Alice", "the Hatter", "the Queen"),
            "rulers",
        ),
        ("Compare Python, Go, and Rust.", ("Python", "Go", "Rust"), ""),
        (
            "How did the 2023 budget compare with the 2022 budget?",
            ("the 2023 budget", "the 2022 budget"),
            "",
        ),
        # the thing compared said once, before the first owner: both subjects' topic
        (
            "Compare the personalities of Jane and Elizabeth.",
            ("Jane", "Elizabeth"),
            "personalities",
        ),
        (
            "Compare the leadership styles of the Queen and the King",
            ("the Queen", "the King"),
            "leadership styles",
        ),
        (
            "Compare the character of Jane with that of Elizabeth",
            ("Jane", "Elizabeth"),
            "character",
        ),
        (
            "Compare the performance of BM25 and DPR on TriviaQA",
            ("BM25", "DPR"),
            "performance on TriviaQA",
        ),
        (
            "How do the views of Charlotte and Elizabeth on marriage differ?",
            ("Charlotte", "Elizabeth"),
            "views on marriage",
        ),
        (
            "Compare the roles of the Hatter, the March Hare and the Dormouse",
            ("the Hatter", "the March Hare", "the Dormouse"),
            "roles",
        ),
        # no name owns the head: two things compared whole
        (
            "Compare the first chapter of the book and the last chapter",
            ("the first chapter of the book", "the last chapter"),
            "",
        ),
        ("Compare the cost of living and inflation", ("the cost of living", "inflation"), ""),
        ("Compare the Duke of Wellington and Napoleon", ("the Duke of Wellington", "Napoleon"), ""),
    ],
)
def test_a_comparisons_subjects_and_topic(question, subjects, topic):
    found = compared_subjects(question)
    if subjects is None:
        assert found is None
    else:
        assert found is not None
        assert (found.subjects, found.topic) == (subjects, topic)


@pytest.mark.parametrize(
    "question",
    [
        "What is the capital of Peru?",
        "Why did Alice and the Queen argue?",  # two people, one question about both
        "How did the Hatter and the March Hare treat each other?",
        "How do they each feel?",  # pronouns are no subjects
        "Compare them.",
        "Compare it with that.",
        "Who is Alice?",
        "What Top-5 accuracy does DPR reach compared with BM25?",  # a clause, no subject
        "Why does Alice keep changing size, and how does it affect her?",
    ],
)
def test_questions_that_compare_nothing(question):
    assert compared_subjects(question) is None


def test_each_subject_is_searched_with_the_topic():
    comparison = compared_subjects(
        "Compare the Caterpillar and the Cheshire Cat as advisers to Alice"
    )
    assert [subject_query(comparison, s) for s in comparison.subjects] == [
        "the Caterpillar advisers to Alice",
        "the Cheshire Cat advisers to Alice",
    ]


@pytest.mark.parametrize(
    ("subject", "words"),
    [
        ("Real Madrid", ["Real", "Madrid"]),
        ("the Queen of Hearts", ["Queen", "Hearts"]),
        ("Mr. Darcy", ["Darcy"]),
        ("Detectron2", ["Detectron2"]),
        ("the 2023 budget", ["2023"]),
        ("dense retrieval", []),
    ],
)
def test_the_words_that_name_a_subject(subject, words):
    assert name_words(subject) == words


@dataclass(frozen=True)
class _Record:
    id: uuid.UUID
    parent_id: uuid.UUID | None
    text: str = ""
    parent_text: str | None = None


@dataclass(frozen=True)
class _Chunk:
    record: _Record
    citation_id: str


def _chunk(name: str, parent: uuid.UUID | None = None) -> _Chunk:
    return _Chunk(_Record(uuid.uuid4(), parent), name)


def test_the_subjects_take_turns_one_chunk_a_passage():
    shared = uuid.uuid4()
    first = [_chunk("a1", shared), _chunk("a2"), _chunk("a3")]
    second = [_chunk("b1"), _chunk("b2", shared), _chunk("b3")]
    taken = [c.citation_id for c in dealt([first, second], 10)]
    assert taken == ["a1", "b1", "a2", "a3", "b3"]  # b2 shares a1's passage
    assert [c.citation_id for c in dealt([first, second], 3)] == ["a1", "b1", "a2"]
    assert [c.citation_id for c in dealt([first, []], 2)] == ["a1", "a2"]


def test_each_subject_gets_a_fair_share_and_at_least_two():
    assert each_subject_k(15, 2) == 8
    assert each_subject_k(3, 2) == 2
    assert each_subject_k(5, 3) == 2


@pytest.mark.parametrize(
    ("subject", "text", "held"),
    [
        ("the Queen of Hearts", "The Queen turned crimson with fury.", True),
        ("Real Madrid", "It was a real shock to the club.", False),
        ("the Brooklyn Bridge", "The harbour bridge opened in 1921.", False),
        ("Revenue", "Our revenue grew by a tenth.", True),  # a user's capital
        ("Detectron2", "LayoutParser is built on deep learning models.", False),
        ("dense retrieval", "", True),  # no name to look for: the search's layer decides
    ],
)
def test_a_passage_says_a_subject_by_its_names(subject, text, held):
    chunk = _Chunk(_Record(uuid.uuid4(), None, text), "#chk_00000000")
    found = SearchResult([chunk], "low_threshold", RetrievalMetrics("deep"))
    assert held_chunks(found, subject) == ([chunk] if held else [])


def test_a_search_that_fell_to_no_evidence_holds_no_subject():
    chunk = _Chunk(_Record(uuid.uuid4(), None, "The Hatter took off his hat."), "#chk_00000000")
    for layer in ("any_embedded", "any_chunk"):
        assert (
            held_chunks(SearchResult([chunk], layer, RetrievalMetrics("deep")), "the Hatter") == []
        )
