"""An answer about another kind of the thing asked for ("bread flour" for "rye flour"): the
reply says what the documents lack and what they hold (agent.retrieval.another_kind, through
agent.chat.answering.finish_grounded). No database, no model."""

from __future__ import annotations

from agent.chat.answering import finish_grounded
from agent.retrieval.another_kind import another_kind

RECIPE = (
    "Country sourdough. Ingredient | Amount. Bread flour | 450 g. Water | 375 g. "
    "Mix the bread flour and the water and leave it for an hour."
)
LEAVE = (
    "Birth parents are entitled to 26 weeks of paid leave. Partners and adoptive parents are "
    "entitled to 16 weeks of paid leave."
)
STANDUP = "Tom: I finished the billing migration yesterday; 4,212 invoices moved cleanly."
NETHERFIELD = "Netherfield Park is let at last, to a rich young man of large fortune, Bingley."


def test_the_answer_gives_another_kind_of_the_noun_asked_for():
    kind = another_kind(
        "The recipe uses 450 g of bread flour #chk_1.",
        "How much rye flour does the recipe use?",
        [("#chk_1", RECIPE)],
    )
    assert kind is not None
    assert (kind.asked, kind.said, kind.citation_id) == ("rye flour", "bread flour", "#chk_1")
    assert not kind.answer_keeps_it
    kind = another_kind(
        "Birth parents are entitled to 26 weeks of paid leave #chk_2.",
        "What is the sick leave entitlement?",
        [("#chk_1", RECIPE), ("#chk_2", LEAVE)],
    )
    assert kind is not None and (kind.said, kind.citation_id) == ("paid leave", "#chk_2")


def test_the_answer_keeps_the_questions_kind_for_what_a_passage_says_of_another():
    kind = another_kind(
        "Tom Becker finished the payroll migration yesterday #chk_1.",
        "Who finished the payroll migration?",
        [("#chk_1", STANDUP)],
    )
    assert kind is not None and kind.answer_keeps_it
    assert (kind.asked, kind.said) == ("payroll migration", "billing migration")


def test_kinds_the_passages_hold_verbs_and_adjectives_are_let_through():
    # the kind asked for is held
    assert not another_kind(
        "The recipe uses 450 g of bread flour #chk_1.",
        "How much bread flour does the recipe use?",
        [("#chk_1", RECIPE)],
    )
    # held under a near spelling: "parental" for "parents"
    assert not another_kind(
        "Birth parents are entitled to 26 weeks of paid leave #chk_1.",
        "What is the parental leave entitlement?",
        [("#chk_1", LEAVE)],
    )
    # a verb before a word ("Tom move"), a quantifier ("many invoices")
    assert not another_kind(
        "Tom moved 4,212 invoices after the billing migration #chk_1.",
        "How many invoices did Tom move after the migration?",
        [("#chk_1", STANDUP)],
    )
    # an adjective the book words otherwise, not the phrase's last word
    assert not another_kind(
        "The wealthy young man who rents Netherfield Park is Bingley #chk_1.",
        "What is the name of the wealthy young man who rents Netherfield Park?",
        [("#chk_1", NETHERFIELD)],
    )
    # the answer is not about the noun at all
    assert not another_kind(
        "I could not find it.", "How much rye flour does the recipe use?", [("#chk_1", RECIPE)]
    )


def test_a_hybrid_reply_names_the_missing_kind_and_the_one_held():
    common = dict(route="hybrid", model_used="m", tokens_used=1)
    retrieved = [{"id": "#chk_2d91ee00", "chunk_id": "c1", "text": RECIPE, "source": "Recipe"}]
    raw = "The recipe uses 450 g of bread flour #chk_2d91ee00."
    got = finish_grounded(raw, retrieved, question="How much rye flour does it use?", **common)
    assert got.text == (
        "I couldn't find rye flour in your documents, only bread flour: "
        "The recipe uses 450 g of bread flour #chk_2d91ee00."
    )
    assert [c["id"] for c in got.citations] == ["#chk_2d91ee00"]
    kept = finish_grounded(raw, retrieved, question="How much bread flour is used?", **common)
    assert kept.text == raw
    retrieved = [{"id": "#chk_89e8ffc6", "chunk_id": "c2", "text": STANDUP, "source": "Stand-up"}]
    raw = "Tom Becker finished the payroll migration yesterday #chk_89e8ffc6."
    got = finish_grounded(raw, retrieved, question="Who finished the payroll migration?", **common)
    assert got.text == (
        "I couldn't find payroll migration in your documents, only billing migration #chk_89e8ffc6."
    )
