"""Sentences that only say where the answer is written are dropped after the answer."""

from __future__ import annotations

import pytest

from agent import prompts
from agent.chat.answering import finish_grounded
from agent.retrieval.pointers import (
    is_absence_sentence,
    is_pointer_sentence,
    says_nothing_new,
    without_absence_citations,
    without_echoed_labels,
    without_pointer_sentences,
    without_prompt_openers,
)


@pytest.mark.parametrize(
    "sentence",
    [
        'This can be found in the passage #chk_1a2b3c4d, which states: "She left."',
        "This information is stated in the first context passage, #chk_1a2b3c4d.",
        'The context passage states: "Their party in the dining-room was large."',
        "This can be seen in the context passages where he mentions it.",
        '1. #chk_1a2b3c4d states: "To be fond of dancing was a certain step."',
        "The information can be found in passages #chk_1a2b3c4d and #chk_2b3c4d5e.",
        "This information can be found in both #chk_381f8409 and #chk_2b3c4d5e.",
    ],
)
def test_sentences_pointing_at_the_passages(sentence):
    assert is_pointer_sentence(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "The meeting moved to Friday #chk_1a2b3c4d.",
        "This label is important because it indicates that Alice should not drink it.",
        "It was written in small letters, so it could be missed #chk_1a2b3c4d.",
        "According to the ledger, the mill was sold in 1852.",
        "The passage of the bill took three years #chk_1a2b3c4d.",
        "This passage describes Alice's reaction to the Mock Turtle by saying she would like "
        "to see the dance #chk_89772778.",
        "#chk_1a2b3c4d describes how the mill burned down.",
    ],
)
def test_sentences_that_say_something(sentence):
    assert not is_pointer_sentence(sentence)


def test_pointer_sentences_after_the_answer_are_dropped_with_their_quote():
    answer = (
        "The Dormouse is asleep between them #chk_579c2922. This can be found in the "
        'passage #chk_bd2a4938, which states: "Just as she said this, she noticed a door. "'
    )
    assert without_pointer_sentences(answer) == (
        "The Dormouse is asleep between them #chk_579c2922."
    )


def test_the_first_sentence_stays_even_when_it_points():
    answer = (
        'The passage that answers this is #chk_98ad5d0d, which states: "He brought Darcy." '
        "He came the next day."
    )
    assert without_pointer_sentences(answer) == answer


def test_a_dropped_citation_moves_to_an_uncited_sentence_before_it():
    answer = (
        'The riddle is "Why is a raven like a writing-desk?" This can be found in the '
        "citation id #chk_0894bc1a, which describes the tea-party."
    )
    out = without_pointer_sentences(answer)
    assert out.startswith('The riddle is "Why is a raven like a writing-desk?"')
    assert out.endswith("#chk_0894bc1a")
    assert "tea-party" not in out


def test_an_answer_without_pointers_is_unchanged():
    answer = "Alice's cat is Dinah #chk_257a1490. She is a good mouser #chk_257a1490."
    assert without_pointer_sentences(answer) == answer


def _chunk(cid: str, text: str) -> dict:
    return {"id": cid, "chunk_id": cid[5:], "text": text, "source": "Book"}


_RETRIEVED = [
    _chunk("#chk_257a1490", "Dinah is Alice's cat, and she catches mice."),
    _chunk("#chk_c7281f95", "Code 670: Heliophysics Science Division; no mice in the air."),
]


@pytest.mark.parametrize(
    ("raw", "hybrid_text", "hybrid_cited", "deep_keeps"),
    [
        (  # a pointer sentence after the answer is dropped
            "Alice's cat is Dinah #chk_257a1490. This can be found in the passage "
            "#chk_c7281f95, where it states that there are no mice in the air.",
            "Alice's cat is Dinah #chk_257a1490.",
            ["#chk_257a1490"],
            "#chk_c7281f95",
        ),
        (  # a sentence saying what the passages leave out loses its citation
            "The budget of the Heliophysics Science Division is not explicitly stated in "
            "this passage #chk_c7281f95.",
            "The budget of the Heliophysics Science Division is not explicitly stated in "
            "this passage.",
            [],
            "#chk_c7281f95",  # a discussion may say which passage lacks what
        ),
    ],
)
def test_only_the_hybrid_path_changes_them(raw, hybrid_text, hybrid_cited, deep_keeps):
    hybrid = finish_grounded(raw, _RETRIEVED, route="hybrid", model_used="m", tokens_used=1)
    assert hybrid.text == hybrid_text
    assert [c["id"] for c in hybrid.citations] == hybrid_cited
    deep = finish_grounded(raw, _RETRIEVED, route="deep_reasoning", model_used="m", tokens_used=1)
    assert deep_keeps in deep.text


@pytest.mark.parametrize(
    ("sentence", "absent"),
    [
        ("The budget is not explicitly stated in this passage #chk_1a2b3c4d.", True),
        ("The GPU used is not mentioned in the provided context passages.", True),
        ("Your documents do not contain enough information to say who won.", True),
        ("The passages give no information about his salary #chk_1a2b3c4d.", True),
        # says what is there, or is a fact about the story, not about the passages
        ("The passage does not state his salary, but his contract ran two years.", False),
        ("He was not given a new contract by Norwich #chk_1a2b3c4d.", False),
        ("Alice's cat is Dinah #chk_1a2b3c4d.", False),
    ],
)
def test_sentences_saying_what_the_passages_leave_out(sentence, absent):
    assert is_absence_sentence(sentence) is absent


def test_a_sentence_that_says_what_is_there_keeps_its_citation():
    kept = "Code 606 manages the SEDVME project #chk_c7281f95. Its budget is not stated."
    assert without_absence_citations(kept) == kept


_LABELS = [
    "science exploration 1p, Code 600: Sciences and Exploration Directorate (SED) (p. 1)",
    "Alice in Wonderland, CHAPTER VII. A Mad Tea-Party",
]


@pytest.mark.parametrize(
    ("answer", "cleaned"),
    [
        (  # the label a passage is shown under, opening the answer
            "[science exploration 1p, Code 600: Sciences and Exploration Directorate (SED) "
            "(p. 1)] The budget is not provided.",
            "The budget is not provided.",
        ),
        (  # the id and label line a passage is shown with
            "#chk_257a1490 [Alice in Wonderland]\nDinah is her cat.",
            "#chk_257a1490 Dinah is her cat.",
        ),
        (  # part of a label (its chapter), opening a later sentence, with a colon
            "The Hatter asks it. [CHAPTER VII. A Mad Tea-Party]: Why is a raven like a "
            "writing-desk? #chk_257a1490",
            "The Hatter asks it. Why is a raven like a writing-desk? #chk_257a1490",
        ),
    ],
)
def test_echoed_passage_labels_are_dropped(answer, cleaned):
    assert without_echoed_labels(answer, _LABELS) == cleaned


@pytest.mark.parametrize(
    "answer",
    [
        "The list is [1, 2] here.",  # not a label
        "See [CHAPTER VII. A Mad Tea-Party] for the riddle.",  # inside a sentence: its words
        "[Alice in Wonderland, The Hatter] says so.",  # not only the labels' parts
        "[Alice in Wonderland] #chk_257a1490",  # nothing would be left
    ],
)
def test_other_brackets_stay(answer):
    assert without_echoed_labels(answer, _LABELS) == answer


@pytest.mark.parametrize(
    "raw",
    ["[Book] Alice's cat is Dinah #chk_257a1490.", "#chk_257a1490 [Book]\nAlice's cat is Dinah."],
)
def test_grounded_answers_lose_echoed_labels(raw):
    answer = finish_grounded(raw, _RETRIEVED, route="hybrid", model_used="m", tokens_used=1)
    assert answer.text == "Alice's cat is Dinah #chk_257a1490."


@pytest.mark.parametrize(
    ("answer", "question"),
    [
        (
            "The Caterpillar is smoking when Alice meets it #chk_34d79ce6.",
            "What is the Caterpillar smoking when Alice meets it?",
        ),
        ("This information is cited from #chk_3c264cd8.", "What was his salary at Gillingham?"),
        (
            "This information is provided in the context passage cited #chk_842f4b31.",
            "What was his salary at Gillingham?",
        ),
        ("#chk_9cd16f44", "What is the repository of pre-trained models called?"),
        ("It can be found in #chk_f95efa3c at page 1.", "Who is the first author of the paper?"),
        (
            "LayoutParser was trained on a GPU.",
            "Which GPU was used to train LayoutParser's models?",
        ),
        (  # an irregular past restates its present
            "Alice gave the animals as prizes after the race #chk_46af9e3e.",
            "What does Alice give the animals as prizes after the race?",
        ),
        ("The Queen told the Knave #chk_612b33e9.", "What did the Queen tell the Knave?"),
        (  # "went" is "go", too short a word to count among the question's
            "The committee went with a roofing firm #chk_c8460a33.",
            "which roofing firm did the committee go with",
        ),
        ("This is stated in #chk_f55a39b1.", "Is the Cheshire Cat able to vanish?"),
        (  # asks a wh-question, however it opens
            "Alice's cat has a name #chk_257a1490.",
            "Can you tell me what Alice's cat's name is?",
        ),
        (  # connectives join the question's parts and add nothing
            "The house is entailed, and thus it will pass to the heir because it is entailed.",
            "Who is the heir the house will pass to, since it is entailed?",
        ),
    ],
)
def test_answers_that_say_nothing_new(answer, question):
    assert says_nothing_new(answer, question)


@pytest.mark.parametrize(
    ("answer", "question"),
    [
        ("Dinah.", "Who is Alice's cat?"),
        ("14 #chk_b610e0e3", "How many goals did he score in the 1991-92 season?"),
        ("Yes, she is #chk_257a1490.", "Is Dinah a cat?"),
        ("No.", "Is Dinah a dog?"),
        ("The GPU is not mentioned in the passages.", "Which GPU was used?"),
        ("She gave them comfits #chk_46af9e3e.", "What does Alice give the animals?"),
        # a yes-or-no question restated as a statement affirms it
        ("Mr. Bingley is rich #chk_34f63389.", "Is Mr. Bingley a rich man?"),
        (
            "The Cheshire Cat is able to vanish #chk_f55a39b1.",
            "Is the Cheshire Cat able to vanish?",
        ),
        ("Roberts played for Leicester City.", "Did Roberts play for Leicester City?"),
    ],
)
def test_answers_that_say_something(answer, question):
    assert not says_nothing_new(answer, question)


def test_a_hybrid_answer_restating_the_question_is_not_found():
    raw = "Alice's cat is Alice's cat #chk_257a1490."
    question = "Who is Alice's cat?"
    hybrid = finish_grounded(
        raw, _RETRIEVED, route="hybrid", model_used="m", tokens_used=1, question=question
    )
    assert hybrid.text == prompts.NOT_ANSWERED
    assert hybrid.citations == []
    assert hybrid.sources == ["Book"]  # the passages it looked at stay listed
    deep = finish_grounded(
        raw, _RETRIEVED, route="deep_reasoning", model_used="m", tokens_used=1, question=question
    )
    assert "#chk_257a1490" in deep.text


@pytest.mark.parametrize(
    ("answer", "cleaned"),
    [
        (  # the id the opener named ends the sentence
            "According to #chk_8834b897, his strike partner was Craig Bellamy.",
            "His strike partner was Craig Bellamy #chk_8834b897.",
        ),
        (
            "Her cat is Dinah #chk_11111111. According to the context passage, she catches "
            "mice #chk_22222222.",
            "Her cat is Dinah #chk_11111111. She catches mice #chk_22222222.",
        ),
        ("In the context, Lydia and Wickham go to Brighton.", "Lydia and Wickham go to Brighton."),
    ],
)
def test_openers_naming_the_prompts_passages_go(answer, cleaned):
    assert without_prompt_openers(answer) == cleaned


@pytest.mark.parametrize(
    "answer",
    [
        "In 1813, Austen published it.",
        "In the end, Alice wakes up.",
        "From the passage, #chk_11111111",  # nothing would be left
        "The passage says she left.",
    ],
)
def test_other_openers_stay(answer):
    assert without_prompt_openers(answer) == answer


def test_hybrid_answers_lose_prompt_openers():
    raw = "According to the context passages, Alice's cat is Dinah #chk_257a1490."
    hybrid = finish_grounded(raw, _RETRIEVED, route="hybrid", model_used="m", tokens_used=1)
    assert hybrid.text == "Alice's cat is Dinah #chk_257a1490."
