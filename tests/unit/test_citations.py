import hashlib
import uuid

import pytest

from agent.retrieval.citations import (
    CitableChunk,
    citation_id,
    cited_ids,
    format_source,
    guard_citations,
    unknown_citations,
)
from agent.retrieval.fusion import weighted_rrf

DINAH = CitableChunk(
    "#chk_11111111",
    "“Well, perhaps not,” said Alice. “And yet I wish I could show you our cat Dinah. She is such a dear quiet thing.”",
)
CHESHIRE = CitableChunk(
    "#chk_22222222",
    "There was the Cat again, sitting on a branch of a tree, grinning from ear to ear.",
)


def test_citation_id_is_md5_prefix_of_chunk_id():
    chunk_id = uuid.UUID("7cb384c1-1b45-5d8a-b2c8-32a959b80cd7")
    assert citation_id(chunk_id) == "#chk_" + hashlib.md5(str(chunk_id).encode()).hexdigest()[:8]
    assert citation_id(chunk_id) == citation_id(str(chunk_id))


def test_guard_normalises_spellings_and_drops_unknown_ids():
    answer = "Her cat is Dinah [chk_11111111]. The Cat grins chk_22222222. Made up #chk_deadbeef."
    fixed = guard_citations(answer, [DINAH, CHESHIRE])
    assert "#chk_11111111" in fixed and "#chk_22222222" in fixed
    assert "deadbeef" not in fixed
    assert set(cited_ids(fixed)) <= {DINAH.citation_id, CHESHIRE.citation_id}


def test_an_unknown_id_in_a_list_of_ids_leaves_no_stray_joiner():
    answer = f"Alice's cat is described in #chk_a7c3e48f and {DINAH.citation_id}."
    assert guard_citations(answer, [DINAH, CHESHIRE]) == (
        f"Alice's cat is described in {DINAH.citation_id}."
    )
    three = f"See {DINAH.citation_id}, #chk_a7c3e48f and {CHESHIRE.citation_id}."
    assert guard_citations(three, [DINAH, CHESHIRE]) == (
        f"See {DINAH.citation_id} and {CHESHIRE.citation_id}."
    )


def test_guard_reads_a_context_id_written_without_its_prefix():
    answer = "Her cat is Dinah [11111111]. The build is [deadbeef]."
    fixed = guard_citations(answer, [DINAH, CHESHIRE])
    assert fixed == "Her cat is Dinah #chk_11111111. The build is [deadbeef]."


def test_guard_drops_marks_that_are_no_id():
    answer = "#chk_670: Her cat is Dinah #chk_11111111. The Cat grins [#chk_12ab] #chk_22222222x."
    fixed = guard_citations(answer, [DINAH, CHESHIRE])
    assert "chk_670" not in fixed and "12ab" not in fixed and "22222222x" not in fixed
    assert fixed.startswith("Her cat is Dinah #chk_11111111.")
    assert unknown_citations(answer, [DINAH.citation_id, CHESHIRE.citation_id]) == 3


def test_guard_moves_a_citation_to_the_chunk_that_supports_it():
    answer = "In #chk_22222222 Alice says she wishes she could show you our cat Dinah, such a dear quiet thing."
    fixed = guard_citations(answer, [CHESHIRE, DINAH])
    assert cited_ids(fixed) == [DINAH.citation_id]


def test_two_citations_moved_to_one_chunk_are_written_once():
    """Both ids of a sentence cite passages without its words: each moves to the passage
    that has them, which is then cited once, not "#chk_11111111 #chk_11111111"."""
    third = CitableChunk("#chk_33333333", "The Queen shouted off with his head at the gardeners.")
    for ids in ("#chk_22222222 #chk_33333333", "#chk_22222222 and #chk_33333333"):
        answer = f"Alice wishes she could show you our cat Dinah, a dear quiet thing {ids}."
        fixed = guard_citations(answer, [CHESHIRE, third, DINAH])
        assert (
            fixed
            == f"Alice wishes she could show you our cat Dinah, a dear quiet thing {DINAH.citation_id}."
        )


def test_guard_cites_uncited_sentences_only_when_supported():
    answer = "Alice's cat is called Dinah, a dear quiet cat. I hope this helps."
    fixed = guard_citations(answer, [CHESHIRE, DINAH])
    assert fixed.startswith("Alice's cat is called Dinah, a dear quiet cat #chk_11111111.")
    assert fixed.endswith("I hope this helps.")


def test_guard_without_context_strips_every_id():
    assert cited_ids(guard_citations("Answer #chk_11111111.", [])) == []


def test_weighted_rrf_matches_formula():
    fused = dict(weighted_rrf([["a", "b", "c"], ["c", "a"]], [0.5, 0.5], k=60))
    assert fused["a"] == pytest.approx(0.5 / 61 + 0.5 / 62)
    assert fused["c"] == pytest.approx(0.5 / 63 + 0.5 / 61)
    assert fused["b"] == pytest.approx(0.5 / 62)
    order = [k for k, _ in weighted_rrf([["a", "b", "c"], ["c", "a"]], [0.5, 0.5])]
    assert order == ["a", "c", "b"]
    weighted = [k for k, _ in weighted_rrf([["a", "b"], ["b", "a"]], [0.9, 0.1])]
    assert weighted == ["a", "b"]


def test_guard_keeps_a_citation_after_the_full_stop_with_its_sentence():
    answer = "I wish I could show you our cat Dinah, such a dear quiet thing. #chk_11111111"
    assert guard_citations(answer, [CHESHIRE, DINAH]) == answer


def test_mmr_prefers_a_diverse_second_pick_and_limit_per_group_caps_parents():
    import numpy as np

    from agent.retrieval.diversity import limit_per_group, mmr_order

    vectors = np.array([[1.0, 0.0], [0.99, 0.141], [0.0, 1.0]])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    assert mmr_order([1.0, 0.99, 0.9], vectors, 3, lambda_mult=0.5) == [0, 2, 1]
    assert mmr_order([1.0, 0.99, 0.9], vectors, 3, lambda_mult=1.0) == [0, 1, 2]
    items = [("a", 1), ("b", 1), ("c", 2), ("d", None), ("e", None)]
    assert limit_per_group(items, 4, 1, lambda x: x[1]) == [
        ("a", 1),
        ("c", 2),
        ("d", None),
        ("e", None),
    ]


CHESHIRE_ALICE = CitableChunk(
    "#chk_33333333",
    "“I wonder if I shall see the Cat again,” said Alice to herself, “the Cheshire Cat.”",
)


def test_guard_moves_a_citation_to_the_passage_holding_the_name_it_states():
    # both passages share the question's words (Alice, cat); only one holds the name given
    for answer in ("Alice's cat is Dinah #chk_33333333.", "Dinah is Alice's cat #chk_33333333."):
        fixed = guard_citations(answer, [CHESHIRE_ALICE, DINAH])
        assert cited_ids(fixed) == [DINAH.citation_id], answer


def test_guard_keeps_a_citation_whose_passage_holds_the_names_and_numbers():
    bridge = CitableChunk("#chk_44444444", "The harbour bridge opened in 1932 after six years.")
    other = CitableChunk("#chk_55555555", "Records say the harbour bridge opened in 1921.")
    answer = "The bridge opened in 1932 #chk_44444444, not 1921 #chk_55555555."
    assert guard_citations(answer, [other, bridge]) == answer
    moved = guard_citations("It opened in 1932 #chk_55555555.", [other, bridge])
    assert cited_ids(moved) == [bridge.citation_id]


def test_anchors_are_names_and_numbers_not_sentence_openings():
    from agent.retrieval.anchors import anchors, missing_anchors, names_in

    assert anchors("However, the Queen shouted at 12,000 soldiers in 1865.") == {
        "queen",
        "12000",
        "1865",
    }
    assert anchors("Dinah is the cat.") == set()
    assert anchors("Dinah is the cat.", names_in(DINAH.text)) == {"dinah"}
    assert missing_anchors("Her cat is called Mary Ann.", [DINAH.text]) == {"mary", "ann"}
    assert missing_anchors("Her cat is called Dinah.", [DINAH.text]) == set()


def test_sentences_naming_what_no_passage_holds_are_dropped():
    from agent.retrieval.anchors import without_invented_claims

    known = [DINAH.text, "Who is Alice's cat?"]
    answer = "Alice's cat is Dinah #chk_11111111. Her sister Mary Ann feeds it in 1865."
    kept, dropped = without_invented_claims(answer, known)
    assert kept == "Alice's cat is Dinah #chk_11111111." and dropped == 1
    # a list keeps its markers; a claim all of whose words are known stays
    listed = "1. Dinah is the cat #chk_11111111. 2. She is a dear quiet thing."
    assert without_invented_claims(listed, known) == (listed, 0)
    # a numbered item naming what no passage holds goes with its marker: no bare "2." left
    numbered = "Facts:\n\n1. Dinah is the cat #chk_11111111.\n2. Mary Ann feeds her.\n\nDone."
    assert without_invented_claims(numbered, known) == (
        "Facts:\n\n1. Dinah is the cat #chk_11111111.\n\nDone.",
        1,
    )
    # a heading stays with the items it keeps; lines that only lead in are no answer kept
    headed = "Facts:\nCONNECTIONS:\n1. Mary Ann feeds her.\n2. Dinah is the cat #chk_11111111."
    assert without_invented_claims(headed, known) == (
        "Facts:\nCONNECTIONS:\n2. Dinah is the cat #chk_11111111.",
        1,
    )
    lead_in = "Let's look at the facts step by step:\n\n1. Mary Ann feeds her."
    assert without_invented_claims(lead_in, known) == (lead_in, 0)
    # nothing is dropped when every sentence would be: the caller decides
    assert without_invented_claims("Mary Ann did it.", known) == ("Mary Ann did it.", 0)


def test_an_uncited_sentence_naming_what_one_passage_holds_is_cited():
    caterpillar = CitableChunk(
        "#chk_66666666",
        "The Caterpillar and Alice looked at each other for some time in silence. "
        "“Who are _you?_” said the Caterpillar.",
    )
    answer = 'The Caterpillar asks Alice, "Who are _you?_"'
    assert cited_ids(guard_citations(answer, [CHESHIRE, caterpillar])) == [caterpillar.citation_id]
    # one shared name is not enough
    assert cited_ids(guard_citations("Alice smiled at it.", [CHESHIRE, DINAH])) == []


def test_an_uncited_figure_is_cited_where_it_stands_when_the_rest_restates_the_question():
    infobox = CitableChunk(
        "#chk_88888888",
        "Full name Iwan Wyn Roberts Date of birth 26 June 1968 Height 6 ft 3 in (1.91 m)",
    )
    career = CitableChunk("#chk_99999999", "Iwan Roberts moved to Norwich City in 1997.")
    answer = "Iwan Roberts is 6 ft 3 in (1.91 m) tall."
    fixed = guard_citations(answer, [career, infobox], question="How tall is Iwan Roberts?")
    assert cited_ids(fixed) == [infobox.citation_id]
    # a word the question lacks and the passage does not hold leaves it uncited
    other = "Iwan Roberts is 1.91 m tall and left-footed."
    asked = "How tall is Iwan Roberts?"
    assert cited_ids(guard_citations(other, [career, infobox], question=asked)) == []


def test_a_one_name_answer_cites_the_passage_holding_the_name():
    assert cited_ids(guard_citations("Dinah.", [CHESHIRE, DINAH])) == [DINAH.citation_id]


def test_mr_and_initials_do_not_end_a_sentence():
    from agent.retrieval.anchors import answer_sentences

    bingley = CitableChunk("#chk_77777777", "Netherfield Park is let at last to Mr. Bingley.")
    fixed = guard_citations("The young man who rents Netherfield is Mr. Bingley.", [bingley])
    assert fixed == "The young man who rents Netherfield is Mr. Bingley #chk_77777777."
    text = "It was J. K. Rowling. Then Mrs. Bennet spoke #chk_77777777. Done."
    assert answer_sentences(text) == [
        "It was J. K. Rowling.",
        " Then Mrs. Bennet spoke #chk_77777777.",
        " Done.",
    ]


BABY = CitableChunk(
    "#chk_66666666",
    "The Duchess tossed the baby violently up and down, and the poor little thing howled.",
)
PIG = CitableChunk(
    "#chk_77777777",
    "It was neither more nor less than a pig, and she felt it would be quite absurd to carry it.",
)


def test_with_the_question_a_citation_goes_where_the_answer_word_is():
    # both passages share words with the sentence; only one holds what it adds to the question
    answer = "The Duchess's baby turns into a pig #chk_66666666."
    question = "What does the Duchess's baby turn into?"
    assert cited_ids(guard_citations(answer, [BABY, PIG], question=question)) == [PIG.citation_id]
    # without the question nothing tells the question's words from the answer's
    assert cited_ids(guard_citations(answer, [BABY, PIG])) == [BABY.citation_id]


LANTERN = CitableChunk(
    "#chk_88888888",
    "The keeper painted the lantern room by hand, from a ladder; painting the lantern room "
    "took him nine days.",
)
OCHRE = CitableChunk(
    "#chk_99999999", "This year's tins were ochre, ordered from the chandler in Harbury."
)


def test_the_question_words_a_sentence_repeats_do_not_move_its_citation():
    """A passage sharing the question's own words ("painted" for "paint") does not win the
    citation from the one holding the word the sentence adds: "ochre"."""
    answer = "The lantern room was painted ochre #chk_99999999."
    question = "What colour did the keeper paint the lantern room?"
    for order in ([LANTERN, OCHRE], [OCHRE, LANTERN]):
        assert guard_citations(answer, order, question=question) == answer
    wrong = answer.replace("#chk_99999999", "#chk_88888888")
    assert guard_citations(wrong, [LANTERN, OCHRE], question=question) == answer


def test_a_citation_holding_the_answer_words_stays():
    answer = "It was a pig, quite absurd to carry #chk_77777777."
    question = "What did the baby become?"
    assert guard_citations(answer, [BABY, PIG], question=question) == answer


def test_a_thing_no_passage_names_is_cited_to_none():
    """The model's own knowledge is not the documents': a sentence naming what no passage
    holds (in any form) loses its citation, the others keep theirs."""
    question = "What does the Duchess's baby turn into?"
    answer = "The Duchess's baby turns into a pig #chk_66666666. The baby howled #chk_66666666."
    assert guard_citations(answer, [BABY], question=question) == (
        "The Duchess's baby turns into a pig. The baby howled #chk_66666666."
    )
    gift = "Darcy gives Elizabeth a letter. #chk_66666666"
    asked = "What does Darcy give Elizabeth?"
    assert guard_citations(gift, [BABY], question=asked) == "Darcy gives Elizabeth a letter."
    # a form of a passage's word is that word ("flamingo", "flamingoes"; "pig", "pigs")
    sty = CitableChunk("#chk_88888888", "The babies all turned into pigs.")
    pigs = "The baby turns into a pig #chk_88888888."
    assert guard_citations(pigs, [sty], question=question) == pigs
    mallets = CitableChunk("#chk_88888888", "The mallets were live flamingoes.")
    croquet = "Alice uses a flamingo #chk_88888888."
    assert guard_citations(croquet, [mallets], question="What does Alice use as a mallet?") == (
        croquet
    )
    # a passage retold in the model's own verbs keeps its citation
    cake = CitableChunk("#chk_99999999", "Alice ate the cake and began shrinking directly.")
    shrank = "She shrank #chk_99999999."
    assert guard_citations(shrank, [cake], question="What did Alice do?") == shrank


def test_ids_opening_an_answer_end_its_first_sentence():
    # a small model echoes the passages' layout: the id first, then the answer
    fixed = guard_citations("#chk_77777777\n\nIt became a pig.\nThe end.", [BABY, PIG])
    assert fixed.startswith("It became a pig #chk_77777777.")
    assert guard_citations("#chk_77777777", [BABY, PIG]) == "#chk_77777777"
    cited = guard_citations("#chk_77777777 It was a pig #chk_77777777.", [BABY, PIG])
    assert cited == "It was a pig #chk_77777777."


RABBIT_HOLE = CitableChunk(
    "#chk_0a0a0a0a",
    "The rabbit-hole went straight on like a tunnel for some way, and then dipped suddenly "
    "down, so suddenly that Alice had not a moment to think before she found herself…",
)
WATCH = CitableChunk(
    "#chk_0b0b0b0b",
    "But when the Rabbit actually took a watch out of its waistcoat-pocket, and looked at it, "
    "Alice started to her feet.",
)
VERSES = CitableChunk(
    "#chk_0c0c0c0c",
    "“Read them,” said the King. The White Rabbit put on his spectacles and read the verses.",
)


@pytest.mark.parametrize("end", ["…", "", "."])
def test_a_paragraph_break_ends_a_sentence_for_the_guard(end):
    # a small model often leaves out the full stop before a new paragraph: the two
    # paragraphs are checked apart, each citation against its own sentence
    answer = (
        f"Alice had not a moment to think before she found herself{end} #chk_0a0a0a0a\n\n"
        "The White Rabbit took out of its waistcoat-pocket a watch #chk_0c0c0c0c."
    )
    question = "What does the White Rabbit take out of its waistcoat-pocket?"
    fixed = guard_citations(answer, [RABBIT_HOLE, WATCH, VERSES], question=question)
    first, second = fixed.split("\n\n")
    assert cited_ids(first) == [RABBIT_HOLE.citation_id]
    assert cited_ids(second) == [WATCH.citation_id]


def test_names_the_question_gives_do_not_decide_the_citation():
    # "White Rabbit" is in the question and in the verses passage; the answer word is "watch"
    question = "What does the White Rabbit take out of its waistcoat-pocket?"
    answer = "The White Rabbit takes out a watch\n\n#chk_0b0b0b0b"
    assert cited_ids(guard_citations(answer, [RABBIT_HOLE, WATCH, VERSES], question=question)) == [
        WATCH.citation_id
    ]
    # without the question the name is all the guard can go by
    assert cited_ids(guard_citations(answer, [RABBIT_HOLE, WATCH, VERSES])) == [VERSES.citation_id]


def test_a_source_names_each_part_once():
    assert format_source("Emma", "CHAPTER I", "Part 2", 3) == "Emma, CHAPTER I, Part 2 (p. 3)"
    assert format_source("Emma", None, None, None) == "Emma"
    # a paper whose outline opens with its own title
    paper = "LayoutParser: A Unified Toolkit"
    assert format_source(paper, "LayoutParser: a unified toolkit", None, 1) == f"{paper} (p. 1)"
    assert format_source("", "Results", "Results", None) == "Results"
    assert format_source("Report", "Results", "Report", 2) == "Report, Results, Report (p. 2)"


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        # ids on a paragraph of their own after the answer
        ("Her cat is called Dinah.\n\n#chk_11111111", "Her cat is called Dinah #chk_11111111."),
        # under a label, in brackets
        ("Her cat is Dinah.\n\nCITATION: [chk_11111111]", "Her cat is Dinah #chk_11111111."),
        ("Her cat is Dinah.\n**Sources:** #chk_11111111", "Her cat is Dinah #chk_11111111."),
        # the same id twice in a row
        ("Her cat is Dinah #chk_11111111 #chk_11111111.", "Her cat is Dinah #chk_11111111."),
        # an id the sentence above already cites is not written again
        ("Her cat is Dinah #chk_11111111.\n\n#chk_11111111", "Her cat is Dinah #chk_11111111."),
        # a line opening with an id and a colon: the id goes to its first sentence
        (
            "Two cats:\n- #chk_22222222: The Cat sits on a branch. It grins.",
            "Two cats:\n- The Cat sits on a branch #chk_22222222. It grins.",
        ),
        (
            "Two cats:\n1. **#chk_11111111**: “our cat Dinah” is quiet.",
            "Two cats:\n1. “our cat Dinah” is quiet #chk_11111111.",
        ),
    ],
)
def test_guard_puts_ids_at_the_end_of_the_sentence_they_belong_to(answer, expected):
    assert guard_citations(answer, [DINAH, CHESHIRE]) == expected


def test_guard_keeps_an_id_that_is_a_line_s_subject_and_the_paragraphs_after_ids():
    # "#chk_… mentions that …" names the passage: taking the id away would lose the subject
    answer = "Compared:\n2. #chk_22222222 mentions that the Cat grins."
    assert guard_citations(answer, [DINAH, CHESHIRE]) == answer
    moved = guard_citations("The Cat grins.\n\n#chk_22222222\n\nDinah is quiet.", [DINAH, CHESHIRE])
    assert moved.startswith("The Cat grins #chk_22222222.\n\nDinah is quiet")
