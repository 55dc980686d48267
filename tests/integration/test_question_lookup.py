"""Numbered-question lookup ("explain question 6"): message parsing, and exact question
lookup against the real Postgres, confined to the documents a scope makes visible."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import text

from agent.chat.question_lookup import (
    NumberedQuestion,
    _lexemes,
    _start_regex,
    _starts,
    find_numbered_questions,
    numbered_questions_block,
    question_numbers,
)
from agent.db.scope import SearchScope
from agent.ingest.pipeline import ingest_bytes
from tests.support.samples import EXAM, Q6, Q7

FAQ = "\n\n".join(
    [
        "Lantern Keeping FAQ",
        "Q1: How often should the lantern wick be trimmed?\nA: Every evening before lighting, "
        "with the brass scissors kept in the watch room.",
        "Q2: Which oil does the lantern burn?\nA: Refined colza oil, stored in the cool cellar.",
        "Q3: How do I reset the clockwork that turns the lens?\nA: Wind the weight to the top "
        "of the tower, then release the governor pawl gently so the lens starts turning.",
        "Q4: What do I do when the lens stops turning?\nA: Turn it by hand at the marked "
        "speed and log the fault for the district engineer.",
        "Q5: Where are the spare mantles kept?\nA: In the tin box under the service stair.",
        "Q6: What is the duty of the second keeper at dawn?\nA: The second keeper "
        "extinguishes the lamp, curtains the lens against the sun, and cleans the glazing.",
    ]
)

OTHER_EXAM = "\n\n".join(
    [
        "Ferry Operations Quiz",
        "Question 5 – Name the ferry's home port. [1 mark]",
        "Answer: The ferry is registered at the island port.",
        "Question 6 – Explain the ferry timetable in winter. [2 marks]",
        "Answer: The ferry sails twice a day in winter, at dawn and at dusk.",
        "Question 7 – Describe the ferry's lifeboat drill. [2 marks]",
        "Answer: The ferry crew musters at the boat deck every Sunday.",
    ]
)

BARE = "\n\n".join(
    [
        "Knot Tying Worksheet",
        "5. Tie a bowline around a post and describe its use.",
        "Answer: The bowline makes a fixed loop that will not slip.",
        "6. Tie a clove hitch and explain when it fails.",
        "Answer: Work in three steps. 1. Pass the rope around the post. 2. Cross it over "
        "itself. 3. Tuck the end under the crossing. The clove hitch slips when the load "
        "rotates the post.",
        "7. Tie a sheet bend.",
        "Answer: The sheet bend joins two ropes of different thickness.",
    ]
)

WORDED = "\n\n".join(
    [
        "Rope Work Test",
        "Question 6 – Name the hitch used to secure a fender to a rail.",
        "Answer: A clove hitch, finished with a half hitch.",
    ]
)


def _flat(s: str) -> str:
    return " ".join(s.split())


async def _ingest(services, user, body: str, title: str):
    return await ingest_bytes(services, user.id, body.encode(), f"{title}.txt", title=title)


async def _chunk_count(services, document_id) -> int:
    async with services.engine.connect() as conn:
        row = await conn.execute(
            text("SELECT count(*) FROM child_chunks WHERE document_id = :d"), {"d": document_id}
        )
        return row.scalar_one()


@pytest.fixture
async def reader(services, new_user):
    """A user with the exam (older) and the lantern FAQ (newer), both numbering to 6."""
    user = await new_user("exam")
    exam = await _ingest(services, user, EXAM, "Pilot Exam")
    faq = await _ingest(services, user, FAQ, "Lantern FAQ")
    return user, exam, faq


# --- the user's message --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("Can you explain question 6 again?", ["6"]),
        ("what's the answer to Q3?", ["3"]),
        ("q.3 please", ["3"]),
        ("Questions 6 and 7", ["6", "7"]),
        ("questions 1, 2 and 3", ["1", "2", "3"]),
        ("problems 3-5", ["3", "4", "5"]),
        ("problem 4", ["4"]),
        ("How do I solve exercise 2b?", ["2"]),
        ("task 5 is hard", ["5"]),
        ("question #6", ["6"]),
        ("question no. 3", ["3"]),
        ("the 4th question", ["4"]),
        ("question 7 and then question 6 and question 7 again", ["7", "6"]),
        ("Q3 and Q4", ["3", "4"]),
        ("Summarise chapter 6", []),
        ("what is on page 6?", []),
        ("I have 6 cats", []),
        ("see #6", []),
        ("no. 3 was my favourite", []),
        ("I have 3 questions for you", []),
        ("question: is 6 even?", []),
        ("How were the Q3 2024 results?", []),
        ("Q4 earnings", []),
        ("my IQ 130 problem", []),
    ],
)
def test_question_numbers(message, expected):
    assert question_numbers(message) == expected


async def test_start_forms_agree_in_python_and_postgres(services):
    """The one regex means the same in both engines, and the GIN pre-filter's lexemes
    cover every form Python accepts (or a question would be silently missed)."""
    found = [
        "Question 6: Solve",
        "Questions 6. x",
        "Q6: Solve",
        "Q.6) Solve",
        "Q. 6: x",
        "Q-6: x",
        "Q06: x",
        "Q6\nx",
        "6. Solve",
        "6) Solve",
        "(6) Solve",
        "**6.** x",
        "Problem 6. x",
        "Problem6: x",
        "Exercise 6 – x",
        "Task 6 x",
        "Question no. 6: x",
        "Question No.6: x",
        "Question number 6 x",
        "Question #6: x",
        "**Question 6:** x",
        "- Question 6: x",
        "QUESTION 06 x",
        "An earlier answer. Question 6 y",
        "An earlier answer?\nQuestion 6 y",
        "Rope Work Test Question 6 – Name the hitch",
        "Exam title Q6: x",
        "Title **Question 6:** x",
    ]
    missed = [
        "Question 6.1 x",
        "Q6 revenue rose",
        "Chapter 6. x",
        "See the figure in question 6",
        "Question 6a x",
        "6.5 x",
        "16. x",
        "Q16: x",
        "Question 60 x",
        "x. 6 cats",
        "6.x",
        "as in question 6: the",  # Postgres pre-selects, Python rejects (lower case)
        "see p. 6. The",  # likewise (an abbreviation before the number)
        "Title Question 6 Solve",
        "(see Question 6) and",
        "read Questions 6-7 first",
    ]
    pattern = _start_regex("0?6")
    compiled = re.compile(pattern, re.IGNORECASE)
    lexemes = " | ".join(f"'{lexeme}'" for lexeme in _lexemes(6))
    async with services.engine.connect() as conn:
        for sample in found + missed:
            row = await conn.execute(
                text(
                    "SELECT CAST(:t AS text) ~* :p AS pg, "
                    "to_tsvector('english', :t) @@ CAST(:q AS tsquery) AS lexeme"
                ),
                {"t": sample, "p": pattern, "q": lexemes},
            )
            pg, lexeme = row.one()
            assert (re.search(pattern, sample, re.IGNORECASE) is not None) == pg, sample
            accepted = any(s.number == 6 for s in _starts(sample, compiled))
            assert accepted == (sample in found), sample
            if accepted:
                assert pg and lexeme, sample


# --- lookup ---------------------------------------------------------------------------------


async def test_question_six_exactly_and_continued_across_chunks(services, reader):
    user, exam, _ = reader
    assert await _chunk_count(services, exam.document_id) >= 4  # flat chunks, not FAQ pairs
    scope = SearchScope(user.id, document_ids=(exam.document_id,))
    [q6] = await find_numbered_questions(services, scope, ["6"])
    assert q6.number == "6" and q6.document_id == exam.document_id
    assert q6.document_title == "Pilot Exam"
    # all of question 6 and its answer, once (the chunks' repeated sentences removed) ...
    assert _flat(q6.text) == _flat(Q6)
    # ... and nothing of question 7
    assert "kelp" not in q6.text and "Question 7" not in q6.text
    assert len(q6.chunk_ids) >= 2 and len(set(q6.chunk_ids)) == len(q6.chunk_ids)
    async with services.engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT id, chunk_index, text FROM child_chunks WHERE id = ANY(:ids)"),
            {"ids": q6.chunk_ids},
        )
        chunks = {r.id: r for r in rows}
    first = chunks[q6.chunk_ids[0]]
    assert "Question 6 –" in first.text  # the question's own chunk comes first
    indexes = [chunks[c].chunk_index for c in q6.chunk_ids]
    assert indexes == sorted(indexes) and indexes == list(range(indexes[0], indexes[-1] + 1))


async def test_several_numbers_in_order_and_missing_ones_left_out(services, reader):
    user, exam, _ = reader
    scope = SearchScope(user.id, document_ids=(exam.document_id,))
    found = await find_numbered_questions(services, scope, ["7", "42", "1", "7"])
    assert [q.number for q in found] == ["7", "1"]
    assert _flat(found[0].text) == _flat(Q7)
    assert found[1].text.startswith("Question 1 –") and "under-keel" not in found[1].text
    assert await find_numbered_questions(services, scope, ["42"]) == []
    assert await find_numbered_questions(services, scope, []) == []
    assert await find_numbered_questions(services, scope, ["abc", "0"]) == []


async def test_q_prefix_form_in_an_faq(services, reader):
    user, _, faq = reader
    scope = SearchScope(user.id, document_ids=(faq.document_id,))
    [q3] = await find_numbered_questions(services, scope, question_numbers("answer to Q3?"))
    assert q3.text.startswith("Q3: How do I reset the clockwork")
    assert "governor pawl" in q3.text
    assert "Q4" not in q3.text and "stops turning" not in q3.text
    assert q3.document_title == "Lantern FAQ" and len(q3.chunk_ids) == 1


async def test_newest_document_wins_and_named_documents_narrow_the_search(services, reader):
    user, exam, faq = reader
    [newest] = await find_numbered_questions(services, SearchScope(user.id), ["6"])
    assert newest.document_id == faq.document_id and "second keeper" in newest.text
    narrowed = SearchScope(user.id, document_ids=(exam.document_id,))
    [q6] = await find_numbered_questions(services, narrowed, ["6"])
    assert q6.document_id == exam.document_id and "tidal stream atlas" in q6.text
    # a narrowed scope never reaches the other document, even for a number only it has
    only_faq = SearchScope(user.id, document_ids=(faq.document_id,))
    assert await find_numbered_questions(services, only_faq, ["8"]) == []


async def test_other_users_documents_are_never_returned(services, reader, new_user):
    user, exam, faq = reader
    stranger = await new_user("ferry")
    theirs = await _ingest(services, stranger, OTHER_EXAM, "Ferry Quiz")  # the newest of all
    mine = await find_numbered_questions(services, SearchScope(user.id), ["5", "6", "7"])
    assert {q.document_id for q in mine} <= {exam.document_id, faq.document_id}
    assert all("ferry" not in q.text.lower() for q in mine)
    # naming the stranger's document does not grant access to it
    leaked = SearchScope(user.id, document_ids=(theirs.document_id,))
    assert await find_numbered_questions(services, leaked, ["6"]) == []
    [their6] = await find_numbered_questions(services, SearchScope(stranger.id), ["6"])
    assert their6.document_id == theirs.document_id
    assert their6.text.startswith("Question 6 – Explain the ferry timetable")
    assert "lifeboat" not in their6.text


async def test_question_word_beats_bare_numbers_and_bare_lists_work(services, new_user):
    user = await new_user("knots")
    worded = await _ingest(services, user, WORDED, "Rope Work Test")
    bare = await _ingest(services, user, BARE, "Knot Worksheet")  # newer, but only "6."
    [q6] = await find_numbered_questions(services, SearchScope(user.id), ["6"])
    assert q6.document_id == worded.document_id
    scope = SearchScope(user.id, document_ids=(bare.document_id,))
    [bare6] = await find_numbered_questions(services, scope, ["6"])
    # the numbered steps inside the answer do not end it; "7." does
    assert bare6.text.startswith("6. Tie a clove hitch")
    assert bare6.text.endswith("rotates the post.")
    assert "sheet bend" not in bare6.text


async def test_page_and_figure_references_are_no_questions(services, new_user):
    user = await new_user("refs")
    body = (
        "Harbour Chart Notes\n\nThe soundings are listed on p. 6. The crew reads them daily. "
        "The leading lights are drawn in Fig. 6. They are white. Chapter 6. The breakwater."
    )
    doc = await _ingest(services, user, body, "Chart Notes")
    scope = SearchScope(user.id, document_ids=(doc.document_id,))
    assert await find_numbered_questions(services, scope, ["6"]) == []


async def test_max_chars_cuts_at_a_word(services, reader):
    user, exam, _ = reader
    scope = SearchScope(user.id, document_ids=(exam.document_id,))
    [q6] = await find_numbered_questions(services, scope, ["6"], max_chars=300)
    assert len(q6.text) <= 300 and q6.text.endswith(" …")
    kept = q6.text.removesuffix(" …")
    assert _flat(Q6).startswith(_flat(kept))
    assert _flat(Q6)[len(_flat(kept))] == " "  # the cut falls between words
    assert len(q6.chunk_ids) == 1


def test_block():
    assert numbered_questions_block([]) == ""
    import uuid

    found = [
        NumberedQuestion(
            "6", "Question 6 – Explain.\nAnswer: Because.", uuid.uuid4(), "Exam", [], 3
        ),
        NumberedQuestion("3", "Q3: Why?\nA: So.", uuid.uuid4(), "FAQ", [], None),
    ]
    block = numbered_questions_block(found)
    assert block.splitlines()[0].endswith(":")
    assert 'Question 6 (from "Exam", page 3):\nQuestion 6 – Explain.\nAnswer: Because.' in block
    assert 'Question 3 (from "FAQ"):\nQ3: Why?' in block


async def test_unpunctuated_lines_still_separate_questions(services, new_user):
    """Flat chunks join paragraphs with spaces: "Answer: x = -3" would run straight into
    "Question 7 – ..." but for the full stop a paragraph without an end mark gets."""
    user = await new_user("algebra")
    body = "\n\n".join(
        [
            "Algebra Drill",
            "Question 5 – Solve x + 1 = 3",
            "Answer: x = 2",
            "Question 6 – Solve x² + 5x + 6 = 0",
            "Answer: x = -2 or x = -3",
            "Question 7 – Solve 2x = 10",
            "Answer: x = 5",
        ]
    )
    doc = await _ingest(services, user, body, "Algebra Drill")
    [q6] = await find_numbered_questions(
        services, SearchScope(user.id), question_numbers("Can you explain question 6 again?")
    )
    assert q6.document_id == doc.document_id
    assert _flat(q6.text) == "Question 6 – Solve x² + 5x + 6 = 0. Answer: x = -2 or x = -3."
