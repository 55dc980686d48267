"""The conflict detector (passages of different documents that disagree), the choice that
keeps both sides of a conflict, the context budget that never drops one, and the answer
section that shows both versions and asks which source to trust."""

from __future__ import annotations

import re

import pytest

from agent.chat.answering import Answer
from agent.chat.cited_answer import finish_cited_answer
from agent.chat.conflicts import (
    asks_which_to_trust,
    conflict_note,
    detect,
    show_conflicts,
    without_false_alarm,
)
from agent.retrieval.citations import cited_ids
from agent.retrieval.conflicts import Passage, find_conflicts, keep_both_sides
from agent.retrieval.context import build_context
from agent.retrieval.types import RetrievedChunk, chunk_payload
from tests.support.chunks import retrieved_chunk
from tests.support.paths import ALICE

PLANTED = [
    (
        "year",
        "The harbour bridge opened in 1921 after six years of work.",
        "Records show the harbour bridge opened in 1932, not earlier.",
        ("1921", "1932"),
    ),
    (
        "date",
        "The lantern festival is held on 12 June every year.",
        "The lantern festival is held on July 19th every year.",
        ("12 June", "July 19th"),
    ),
    (
        "number",
        "The old viaduct is 450 metres long and carries two tracks.",
        "At 520 metres long, the old viaduct carries two tracks.",
        ("450", "520"),
    ),
    (
        "name",
        "The Bell Rock lighthouse was designed by Robert Stevenson.",
        "The Bell Rock lighthouse was designed by Thomas Telford.",
        ("Robert Stevenson", "Thomas Telford"),
    ),
    (
        "name",
        "The peace conference of 1815 took place in Vienna.",
        "The peace conference of 1815 took place in Geneva.",
        ("Vienna", "Geneva"),
    ),
    (
        "negation",
        "The Kestrel Bay ferry runs on Sundays.",
        "The Kestrel Bay ferry does not run on Sundays.",
        ("yes", "no"),
    ),
    (
        "number",
        "Marguerite feeds seventeen herring gulls every dawn.",
        "Every dawn Marguerite feeds 12 herring gulls from the gallery.",
        ("seventeen", "12"),
    ),
]


def _pair(first: str, second: str, same_document: bool = False) -> list[Passage]:
    return [
        Passage("#chk_aaaaaaaa", "doc-a", first, "a.txt"),
        Passage("#chk_bbbbbbbb", "doc-a" if same_document else "doc-b", second, "b.txt"),
    ]


@pytest.mark.parametrize(("kind", "first", "second", "values"), PLANTED)
def test_finds_the_planted_conflict(kind, first, second, values):
    [conflict] = find_conflicts(_pair(first, second))
    assert conflict.kind == kind
    assert (conflict.first_value, conflict.second_value) == values
    assert conflict.ids == ("#chk_aaaaaaaa", "#chk_bbbbbbbb")
    assert conflict.first_sentence == first and conflict.second_sentence == second
    assert conflict.first_source == "a.txt"


@pytest.mark.parametrize(
    ("first", "second"),
    [
        # the same facts, worded differently or with a detail more on one side
        (
            "The harbour bridge opened in 1921.",
            "In 1921, after six years, the harbour bridge opened.",
        ),
        ("The castle has a moat.", "The castle has a deep moat and two towers."),
        # different subjects that happen to carry different numbers or names
        ("The bakery sells rye bread on market days.", "The harbour bridge opened in 1932."),
        (
            "Alice said to the Hatter that she was late.",
            "Alice said to the Queen that she liked croquet.",
        ),
        ("Chapter 3 is about gardening in spring.", "Chapter 7 describes a storm at sea."),
        # numbers that name things (chapter 3, chapter 7) are not values that disagree
        ("Chapter 3 of the manual covers the lamp.", "Chapter 7 of the manual covers the lamp."),
    ],
)
def test_agreeing_or_unrelated_passages_are_not_conflicts(first, second):
    assert find_conflicts(_pair(first, second)) == []


def test_passages_of_one_document_are_never_a_conflict():
    first, second = PLANTED[0][1], PLANTED[0][2]
    assert find_conflicts(_pair(first, second, same_document=True)) == []


def test_the_disagreeing_sentences_are_found_inside_longer_passages():
    first = (
        "The town grew quickly in the nineteenth century. "
        "The harbour bridge opened in 1921 after six years of work. "
        "Ferries stopped running soon after."
    )
    second = (
        "Local records are patchy. Records show the harbour bridge opened in 1932, not "
        "earlier. The toll was abolished in 1950."
    )
    [conflict] = find_conflicts(_pair(first, second))
    assert (conflict.first_value, conflict.second_value) == ("1921", "1932")
    assert "1921" in conflict.first_sentence and "toll" not in conflict.second_sentence


FILLERS = [
    "Gulls nest on the cliffs above the harbour.",
    "The bakery sells rye bread on market days.",
    "Apple trees in the orchard bloom in spring.",
    "A badger raids the lowest hive every October.",
]


def _items(n: int) -> list[Passage]:
    return [Passage(f"#chk_{i:08x}", f"doc-{i}", FILLERS[i]) for i in range(n)]


def test_keep_both_sides_brings_back_the_dropped_partner_and_trims_others_first():
    a = Passage("#chk_000000aa", "doc-a", PLANTED[0][1])
    b = Passage("#chk_000000bb", "doc-b", PLANTED[0][2])
    others = _items(4)
    chosen = [a, *others[:3]]  # diversity chose a and three others, not b
    pool = [a, *others, b]
    kept, conflicts = keep_both_sides(chosen, pool, 4, lambda p: p)
    assert [c.ids for c in conflicts] == [(a.citation_id, b.citation_id)]
    assert len(kept) == 4 and a in kept and b in kept
    assert kept == [a, others[0], others[1], b]  # the lowest-ranked other made room
    # without a conflict the chosen stay as they were
    assert keep_both_sides(others[:3], others, 3, lambda p: p) == (others[:3], [])


def test_keep_both_sides_keeps_a_pair_even_when_k_is_one():
    a = Passage("#chk_000000aa", "doc-a", PLANTED[3][1])
    b = Passage("#chk_000000bb", "doc-b", PLANTED[3][2])
    kept, conflicts = keep_both_sides([a], [a, *_items(2), b], 1, lambda p: p)
    assert kept == [a, b] and len(conflicts) == 1


def _chunk(text: str, title: str) -> RetrievedChunk:
    return retrieved_chunk(text, document_title=title, doc_type="USER")


def _filler(i: int) -> str:
    """About 300 characters of sentences that share no words with anything else."""
    return " ".join(
        f"Note n{i}s{j} " + " ".join(f"w{i}x{j}x{m}" for m in range(6)) + "." for j in range(5)
    )


def test_the_context_budget_never_drops_a_kept_side_and_trims_the_others_first():
    yes = _chunk("The Kestrel Bay ferry runs on Sundays. " + _filler(90), "timetable")
    fillers = [_chunk(_filler(i), f"f{i}") for i in range(4)]
    no = _chunk("The Kestrel Bay ferry does not run on Sundays. " + _filler(91), "notice")
    chunks = [yes, *fillers, no]
    budget = 2 * len(yes.record.text) + 100  # room for about two blocks
    plain = build_context(chunks, budget, 400)
    assert no.citation_id not in plain.chunk_map  # the budget ran out before it
    sides = {yes.citation_id, no.citation_id}
    kept = build_context(chunks, budget, 400, keep=sides)
    assert set(kept.chunk_map) == sides and "does not run" in kept.text


def test_the_sentence_dedupe_never_drops_a_kept_side():
    open_ = _chunk("The museum is open on Mondays.", "guide")
    closed = _chunk("The museum is not open on Mondays.", "notice")
    sides = {open_.citation_id, closed.citation_id}
    [conflict] = find_conflicts([open_.passage, closed.passage])
    assert set(conflict.ids) == sides and conflict.kind == "negation"
    # a negation is a near-repeat (Jaccard 6/7) that the dedupe would drop
    plain = build_context([open_, closed], 8000, 400, overlap=0.8)
    assert "not open" not in plain.text
    kept = build_context([open_, closed], 8000, 400, overlap=0.8, keep=sides)
    assert "not open" in kept.text and set(kept.chunk_map) == sides


def test_the_answer_shows_both_sides_and_asks_which_source_to_trust():
    yes = _chunk("The Kestrel Bay ferry runs on Sundays.", "timetable")
    no = _chunk("The Kestrel Bay ferry does not run on Sundays.", "notice")
    retrieved = [chunk_payload(c) for c in (yes, no)]
    conflicts = detect(retrieved)
    assert [(c["first"], c["second"], c["kind"]) for c in conflicts] == [
        (yes.citation_id, no.citation_id, "negation")
    ]
    note = conflict_note(conflicts)
    assert yes.citation_id in note and no.citation_id in note and "which source" in note
    # a negation's sides are told by their sentences ("yes" / "no" alone say nothing)
    assert '"The Kestrel Bay ferry does not run on Sundays"' in note
    one_side = Answer(
        text=f"The ferry runs on Sundays {yes.citation_id}.",
        route="hybrid",
        model_used="x",
        citations=[retrieved[0]],
        sources=[retrieved[0]["source"]],
    )
    shown = show_conflicts(one_side, conflicts, retrieved)
    assert "Conflict detected" in shown.text and "Which source should I trust" in shown.text
    assert 'which says "The Kestrel Bay ferry runs on Sundays"' in shown.text
    assert set(cited_ids(shown.text)) == {yes.citation_id, no.citation_id}
    assert [c["id"] for c in shown.citations] == [yes.citation_id, no.citation_id]
    assert "notice" in shown.sources[-1]
    # both sides cited and the question asked: nothing is added
    both = f"{yes.citation_id} says yes, {no.citation_id} says no. Which source do you trust?"
    answer = Answer(text=both, route="hybrid", model_used="x")
    assert show_conflicts(answer, conflicts, retrieved).text == both
    # both cited and "trust" said, but nothing asked (a small model echoing its instructions)
    echo = f"{yes.citation_id} yes, {no.citation_id} no. Ask the user which source to trust."
    answer = Answer(text=echo, route="h", model_used="x")
    assert show_conflicts(answer, conflicts, retrieved).text.endswith("?")
    assert not asks_which_to_trust(echo) and asks_which_to_trust("Which do you trust more?")
    # both cited but no question: only the question is added
    answer = Answer(text=f"Yes {yes.citation_id}, no {no.citation_id}.", route="h", model_used="x")
    asked = show_conflicts(answer, conflicts, retrieved).text
    assert asked.endswith("?") and "Conflict detected" not in asked
    # a conflict whose other side is not in the context is not shown
    alone = Answer(text="Ferry.", route="h", model_used="x")
    assert show_conflicts(alone, conflicts, retrieved[:1]).text == "Ferry."


def test_a_novels_own_paragraphs_are_not_taken_for_conflicts():
    # dialogue and narration share words and carry names, numbers and negations; taken as
    # if each paragraph were its own document, they still state nothing that disagrees
    paragraphs = [p for p in re.split(r"\n\s*\n", ALICE.read_text()) if len(p) > 300]
    passages = [
        Passage(f"#chk_{i:08x}", f"doc-{i}", " ".join(p.split())[:650])
        for i, p in enumerate(paragraphs[:100])
    ]
    assert find_conflicts(passages) == []


def test_an_alarm_naming_only_ids_is_dropped_when_no_passages_disagree():
    rabbit = _chunk("The Rabbit came near her, and Alice began in a low, timid voice.", "alice")
    cake = _chunk("Alice ate a little bit of the cake and began shrinking directly.", "alice")
    retrieved = [chunk_payload(c) for c in (rabbit, cake)]
    assert detect(retrieved) == []
    a, b = rabbit.citation_id, cake.citation_id
    state = {
        "question": "What did Alice do?",
        "route": "hybrid",
        "relevant": True,
        "context": "",
        "retrieved": retrieved,
        "conflicts": [],
    }

    def finish(raw: str) -> Answer:
        return finish_cited_answer(raw, state, model="x", tokens=0)

    # the heading with bare ids after it says nothing: it goes, and so do its citations
    bare = finish(f"Alice began in a timid voice {a}.\n\nCONFLICT DETECTED\n{a} and {b}")
    assert bare.text == f"Alice began in a timid voice {a}."
    assert [c["id"] for c in bare.citations] == [a]
    inline = finish(f"She shrank {b}.\n\n**CONFLICT DETECTED:** {a}, {b}.")
    assert inline.text == f"She shrank {b}." and [c["id"] for c in inline.citations] == [b]
    # what follows the bare heading stays
    more = f"She shrank {b}.\n\nCONFLICT DETECTED\n{a} and {b}\n\nThe cake made her small {b}."
    assert finish(more).text == f"She shrank {b}.\n\nThe cake made her small {b}."
    # an alarm that states the versions, or an answer that is nothing else, is left alone
    stated = f"CONFLICT DETECTED\n{a} says she spoke, but {b} says she shrank."
    assert without_false_alarm(stated) == stated
    alone = f"CONFLICT DETECTED\n{a} and {b}"
    assert without_false_alarm(alone) == alone


def test_an_alarm_citing_fewer_than_two_passages_is_dropped_when_none_disagree():
    """Sources cannot disagree with one passage: the 1.5B model headed with "CONFLICT
    DETECTED" a gap it saw, under a conclusion that said the opposite."""
    a, b = "#chk_2f492d07", "#chk_8a1a7276"
    conclusion = f"The mill shut down because cheaper plastic buttons took its markets {a}."
    gap = (
        f"{conclusion}\nCONFLICT DETECTED\nThe passage does not provide any information about"
        " why the mill shut down. It only states that it became a library."
    )
    assert without_false_alarm(gap) == conclusion
    inline = f"{conclusion}\n\n**CONFLICT DETECTED**: The passage does not say why {a}."
    assert without_false_alarm(inline) == conclusion
    # one passage's own words, then which source to trust, then more of the answer
    own = (
        f"**CONFLICT DETECTED:**\n\nThe Hare says the fifteenth {a}, the Hatter the"
        f" fourteenth {a}.\n\nWhich source do you trust?\n\n**Conclusion**\n{conclusion}"
    )
    assert (
        without_false_alarm(f"Facts {a}.\n\n{own}") == f"Facts {a}.\n\n**Conclusion**\n{conclusion}"
    )
    # two passages stating two versions: a conflict the detector missed, kept
    two = f"{conclusion}\n\nCONFLICT DETECTED\n{a} says 1811, but {b} says 1812."
    assert without_false_alarm(two) == two


def test_both_sides_cited_but_one_version_unsaid_gets_the_question_naming_both():
    """A small model cites both sides and asks which to trust, yet gives one version only
    ("... contradicts this"): the question that states both versions is added."""
    yes = _chunk("The Kestrel Bay ferry runs on Sundays.", "timetable")
    no = _chunk("The Kestrel Bay ferry does not run on Sundays.", "notice")
    retrieved = [chunk_payload(c) for c in (yes, no)]
    conflicts = detect(retrieved)
    vague = (
        f"The ferry runs on Sundays {yes.citation_id}. {no.citation_id} contradicts this. "
        "Which source to trust?"
    )
    shown = show_conflicts(Answer(text=vague, route="h", model_used="x"), conflicts, retrieved)
    assert shown.text.startswith(vague)
    assert 'which says "The Kestrel Bay ferry does not run on Sundays"' in shown.text
    long = _chunk("The old viaduct is 450 metres long and carries two tracks.", "survey")
    short = _chunk("At 520 metres long, the old viaduct carries two tracks.", "guide")
    retrieved = [chunk_payload(c) for c in (long, short)]
    conflicts = detect(retrieved)
    one_value = f"It is 450 metres {long.citation_id}; {short.citation_id} differs. Trust which?"
    shown = show_conflicts(Answer(text=one_value, route="h", model_used="x"), conflicts, retrieved)
    assert "520" in shown.text and shown.text.startswith(one_value)
    both = f"It is 450 metres {long.citation_id} or 520 {short.citation_id}. Trust which?"
    assert (
        show_conflicts(Answer(text=both, route="h", model_used="x"), conflicts, retrieved).text
        == both
    )
