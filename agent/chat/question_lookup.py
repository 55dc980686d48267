"""Numbered-question lookup: "explain question 6" fetches question 6 and its answer verbatim.

:func:`question_numbers` reads the numbers a message asks about, :func:`find_numbered_questions`
finds where each question starts in the documents in scope (FAQs, exams, worksheets) and takes
its text up to the next numbered question, and :func:`numbered_questions_block` renders the
result for the prompt. It runs beside hybrid search, as extra context, never instead of it.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent.db.chunks import fetch_chunks
from agent.db.questions import QuestionChunk, following_chunks, question_start_candidates
from agent.db.scope import SearchScope
from agent.ingest.sentences import ABBREVIATIONS
from agent.retrieval.citations import citation_id
from agent.retrieval.types import RetrievedChunk

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from agent.services import Services

# --- the user's message ----------------------------------------------------------------

_NUM = r"\d{1,3}"
# "exercise 2b" and "question 6.1" mean exercise 2 and question 6
_SUFFIX = r"(?:[a-z]|(?:\.\d+)+)?(?!\w)"
_SEPARATOR = r"(?:,|&|\+|/|-|–|\band\b|\bor\b|\bto\b|\bthrough\b)"
_MORE = rf"(?:\s*{_SEPARATOR}\s*(?:#\s*|q\.?\s*)?{_NUM}{_SUFFIX})*"
_QUESTION_WORD = r"(?:questions?|problems?|exercises?|tasks?)"
# "Q3 2024", "Q4 earnings": fiscal quarters, not questions
_QUARTER = (
    r"\s*(?:'?\d{2}(?:\d{2})?\b|of\s+\d{4}|fy|earnings|revenue|results|sales|profits?|reports?|"
    r"quarter|financials?|guidance|forecast)"
)
_MESSAGE = re.compile(
    rf"\b{_QUESTION_WORD}\s*(?:(?:no|nos|number|num)\.?\s*|#\s*)?(?P<word>{_NUM}){_SUFFIX}(?P<word_more>{_MORE})"
    rf"|\bq(?:\s*[.#]\s*)?(?P<q>{_NUM}){_SUFFIX}(?!{_QUARTER})(?P<q_more>{_MORE})"
    rf"|\b(?P<ordinal>{_NUM})(?:st|nd|rd|th)\s+{_QUESTION_WORD}\b",
    re.IGNORECASE,
)
_LISTED = re.compile(
    rf"(?P<sep>{_SEPARATOR})\s*(?:#\s*|q\.?\s*)?(?P<n>{_NUM}){_SUFFIX}", re.IGNORECASE
)
_RANGE_WORDS = {"-", "–", "to", "through"}
_MAX_RANGE = 10


def question_numbers(message: str) -> list[str]:
    """The question numbers a message asks about, de-duplicated, in the order they appear.

    A number counts only when a question word or a Q prefix names it: "question 6",
    "questions 6 and 7", "problems 3-5", "Q3", "q.3", "question #6", "question no. 3",
    "exercise 2b" (-> 2), "the 4th question". "chapter 6", "page 6", "#6", "6 cats" and
    fiscal quarters ("Q3 2024", "Q4 earnings") do not count.
    """
    found: list[int] = []
    for m in _MESSAGE.finditer(message):
        first = m.group("word") or m.group("q") or m.group("ordinal")
        numbers = [int(first)]
        more = m.group("word_more") or m.group("q_more") or ""
        for item in _LISTED.finditer(more):
            n, sep = int(item.group("n")), (item.group("sep") or "").lower()
            if sep in _RANGE_WORDS and 0 < n - numbers[-1] <= _MAX_RANGE:
                numbers.extend(range(numbers[-1] + 1, n + 1))
            else:
                numbers.append(n)
        found.extend(numbers)
    out: list[str] = []
    for n in found:
        if n > 0 and str(n) not in out:
            out.append(str(n))
    return out


# --- where a question starts in a document ----------------------------------------------
#
# One regex text serves both Postgres (ARE, ``~*``) and Python (``re``, IGNORECASE): the
# database pre-selects chunks with the rule Python then applies (Python only adds the checks
# below that need context), so no start Python would accept is lost to the SQL filter.

# a line start: the chunk's start, a newline, or the end of a sentence (flat chunks keep
# no newlines: their paragraphs are joined with spaces)
_ANCHOR = r"(?:^|\n|[.!?][\"'”’)\]]*\s+)"
_MARKUP = r"[ \t*_#>(\[-]*"
_WORD = r"(?:question|problem|exercise|task)s?[ \t]*(?:(?:no\.?|number|#)[ \t]*)?"
_Q = r"q[ \t]*[.:#-]?[ \t]*"


def _start_regex(num: str, *, bare: bool = True) -> str:
    """The start of a question numbered ``num`` (a regex); ``bare=False``: no bare "6.".

    Groups: 1 a question at a line start (from any markup on), with its number in 2 (after
    a question word), 3 (after a Q prefix) or 4 (bare "6." / "6)"); 5 a question inside a
    line, with its number in 6 (question word) or 7 (Q prefix). Inside a line only a
    question word or Q followed by ":" or a dash counts ("Exam title Question 6 – ...",
    where a title without a full stop ran into the first question).
    """
    word = rf"{_WORD}({num})(?!\w|[.,][0-9])"
    # "Q6:" / "Q6." / "Q6)": the mark is required, so "Q3 revenue grew" is no question
    q = rf"{_Q}({num})(?=[ \t]*(?:[:)–—-]|\.(?:[^0-9]|$)|\n|$))"
    forms = f"{word}|{q}|({num})[.)][*_]*(?=\\s|$)" if bare else f"{word}|{q}"
    inline = rf"\s([*_]*(?:{_WORD}({num})|{_Q}({num}))[*_]*[ \t]*(?:[:–—]|-(?![0-9])))"
    return rf"{_ANCHOR}({_MARKUP}(?:{forms}))|{inline}"


_ANY_START = re.compile(_start_regex(r"\d{1,3}"), re.IGNORECASE)
_HEADING_MARK = re.compile(r"[*_]*[ \t]*(?:[:.)–—-]|\n|$)")
_LAST_WORD = re.compile(r"(\S+)$")


def _lexemes(number: int) -> list[str]:
    """Every tsvector lexeme a start for ``number`` can produce (Postgres ``english`` parser).

    "Question 6" and "6." give '6', "Q6" 'q6', "Q.6" 'q.6', "Q-6" '-6', "No.6" 'no.6',
    "Question6" 'question6'; tests/test_question_lookup.py checks each form against Postgres.
    """
    out = []
    for n in (str(number), f"0{number}"):
        out += [n, f"-{n}", f"q{n}", f"q.{n}", f"no.{n}"]
        for word in ("question", "problem", "exercise", "task"):
            out += [f"{word}{n}", f"{word}s{n}"]
    return out


@dataclass(frozen=True)
class _Start:
    number: int
    strength: int
    """4: a line opening with a question word or Q prefix and a heading mark (":", ".",
    ")", dash, line end); 3: the same inside a line, capitalised, with ":" or a dash;
    2: a line opening with a question word alone ("Question 6 Solve ..."); 1: a line
    opening with a bare "6." or "6)"."""
    offset: int
    end: int


def _starts(text: str, pattern: re.Pattern[str]) -> list[_Start]:
    out: list[_Start] = []
    pos = 0
    while (m := pattern.search(text, pos)) is not None:
        line = m.group(1) is not None
        offset = m.start(1) if line else m.start(5)
        pos = offset + 1  # starts may share an anchor ("6. 7.")
        if not line:
            if not text[offset:].lstrip("*_")[:1].isupper():
                continue  # "as in question 6: ..." is a reference
            group = 6 if m.group(6) else 7
            number, strength, end = m.group(group), 3, m.end(group)
        elif m.group(3):
            number, strength, end = m.group(3), 4, m.end(3)
        elif m.group(2):
            number, end = m.group(2), m.end(2)
            strength = 4 if _HEADING_MARK.match(text, end) else 2
        else:
            if _after_abbreviation(text, m.start()):
                continue  # "see p. 6." or "Fig. 6." is no question 6
            number, strength, end = m.group(4), 1, m.end()
        out.append(_Start(int(number), strength, offset, end))
    return out


def _after_abbreviation(text: str, anchor: int) -> bool:
    """Does the sentence end before ``anchor`` belong to an abbreviation ("p.", "No.")?"""
    if anchor >= len(text) or text[anchor] != ".":
        return False
    last = _LAST_WORD.search(text, 0, anchor)
    return bool(last) and last.group(1).lstrip("(\"'“‘[").lower() in ABBREVIATIONS


def _ends_question(start: _Start, question: _Start) -> bool:
    if question.strength >= 2:
        return start.strength >= 2 and start.number != question.number
    # bare numbering: stop at a later number, not at steps ("1.", "2.") inside the answer
    return start.number > question.number


# --- assembling the question and its answer ----------------------------------------------

_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*$")


def _overlap(previous: str, following: str) -> int:
    """How many leading characters of ``following`` repeat the end of ``previous``.

    Chunks of one document repeat the last sentence(s) of the chunk before them, so only
    whole sentences count: the repeat must end a sentence and start one in ``previous``.
    """
    for k in range(min(len(previous), len(following)), 0, -1):
        if k < len(following) and not following[k].isspace():
            continue
        head = following[:k]
        if not _SENTENCE_END.search(head) or not previous.endswith(head):
            continue
        before = previous[: len(previous) - k]
        if not before or (before[-1].isspace() and _SENTENCE_END.search(before.rstrip())):
            return k
    return 0


def _join(body: str, piece: str) -> str:
    # a chunk starts a line: keep that visible to the next-question search
    return f"{body} {piece}" if _SENTENCE_END.search(body) else f"{body}\n{piece}"


def _truncate(body: str, max_chars: int) -> str:
    if len(body) <= max_chars:
        return body
    limit = max(max_chars - 2, 1)
    cut = max(body.rfind(" ", 0, limit + 1), body.rfind("\n", 0, limit + 1))
    return body[: cut if cut > 0 else limit].rstrip() + " …"


_BATCH = 4
_MAX_BATCHES = 25
_MAX_NUMBERS = 6
_CANDIDATES = 50


@dataclass(frozen=True)
class NumberedQuestion:
    """One numbered question with its answer, quoted from a document."""

    number: str
    text: str
    document_id: uuid.UUID
    document_title: str
    chunk_ids: list[uuid.UUID]
    """The child chunks the text came from, in order; the first is where the question starts."""
    page: int | None


async def _question_text(
    conn: AsyncConnection,
    scope: SearchScope,
    chunk: QuestionChunk,
    start: _Start,
    max_chars: int,
) -> tuple[str, list[uuid.UUID]]:
    body = chunk.text[start.offset :]
    pieces = [(chunk.id, 0)]  # (chunk, where its text starts in body)
    previous, after = chunk.text, chunk.chunk_index
    scanned = start.end - start.offset
    for _ in range(_MAX_BATCHES):
        cut = next(
            (
                s.offset
                for s in _starts(body, _ANY_START)
                if s.offset >= scanned and _ends_question(s, start)
            ),
            None,
        )
        if cut is not None:
            body = body[:cut]
            break
        if len(body) >= max_chars:
            break
        more = await following_chunks(conn, scope, chunk.document_id, after, _BATCH)
        if not more:
            break
        for nxt in more:
            piece = nxt.text[_overlap(previous, nxt.text) :].strip()
            if piece:
                body = _join(body.rstrip(), piece)
                pieces.append((nxt.id, len(body) - len(piece)))
            previous, after = nxt.text, nxt.chunk_index
    body = _truncate(body.strip(), max_chars)
    used = len(body.removesuffix(" …"))
    return body, [cid for cid, at in pieces if at < used]


async def find_numbered_questions(
    services: Services, scope: SearchScope, numbers: list[str], *, max_chars: int = 1500
) -> list[NumberedQuestion]:
    """Each requested question with its answer, from the documents ``scope`` makes visible.

    A question starts where a line (or sentence) opens with "Question 6", "Problem 6",
    "Exercise 6", "Task 6", "Q6:" or a bare "6." / "6)", or where a capitalised
    "Question 6 –" / "Q6:" follows text with no full stop, and runs to the next numbered
    question, over following chunks of the same document if need be, at most ``max_chars``
    (cut at a word). Starts with a question word beat bare numbers; among documents, the
    newest wins. At most one result per number, in the order asked; numbers not found are
    left out, and only the first few numbers are looked up.
    """
    wanted: list[int] = []
    for raw in numbers:
        raw = str(raw).strip().lstrip("#")
        if raw.isdigit() and 0 < int(raw) < 1000 and int(raw) not in wanted:
            wanted.append(int(raw))
    found: list[NumberedQuestion] = []
    if not wanted:
        return found
    async with services.engine.connect() as conn:
        for number in wanted[:_MAX_NUMBERS]:
            num = f"0?{number}"
            pattern = re.compile(_start_regex(num), re.IGNORECASE)
            candidates = await question_start_candidates(
                conn,
                scope,
                pattern=_start_regex(num),
                preferred=_start_regex(num, bare=False),
                lexemes=_lexemes(number),
                limit=_CANDIDATES,
            )
            best = _best_start(candidates, pattern, number)
            if best is None:
                continue
            chunk, start = best
            text, chunk_ids = await _question_text(conn, scope, chunk, start, max_chars)
            found.append(
                NumberedQuestion(
                    number=str(number),
                    text=text,
                    document_id=chunk.document_id,
                    document_title=chunk.document_title,
                    chunk_ids=chunk_ids,
                    page=chunk.page,
                )
            )
    return found


def _best_start(
    candidates: list[QuestionChunk], pattern: re.Pattern[str], number: int
) -> tuple[QuestionChunk, _Start] | None:
    # per document: the strongest kind of start, then the first in reading order
    per_document: dict[uuid.UUID, tuple[QuestionChunk, _Start]] = {}
    for chunk in candidates:
        for start in _starts(chunk.text, pattern):
            if start.number != number:
                continue
            held = per_document.get(chunk.document_id)
            if held is None or (start.strength, -chunk.chunk_index, -start.offset) > (
                held[1].strength,
                -held[0].chunk_index,
                -held[1].offset,
            ):
                per_document[chunk.document_id] = (chunk, start)
    if not per_document:
        return None
    # across documents: a question word beats a bare number, then the newest document
    return max(
        per_document.values(),
        key=lambda cs: (cs[1].strength >= 2, cs[0].document_created_at),
    )


def numbered_questions_block(found: list[NumberedQuestion]) -> str:
    """The found questions as a plain-text prompt block; ``""`` when nothing was found."""
    if not found:
        return ""
    parts = ["The numbered questions asked about, quoted from the user's documents:"]
    for q in found:
        source = f'"{q.document_title}"' + (f", page {q.page}" if q.page is not None else "")
        parts.append(f"Question {q.number} (from {source}):\n{q.text}")
    return "\n\n".join(parts)


async def citable_questions(
    services: Services, scope: SearchScope, found: list[NumberedQuestion]
) -> list[tuple[NumberedQuestion, RetrievedChunk]]:
    """Each found question with the chunk it starts in, as a citable retrieved chunk
    (layer ``question_number``): the answer cites the question by that chunk's id."""
    async with services.engine.connect() as conn:
        records = await fetch_chunks(conn, scope, [q.chunk_ids[0] for q in found])
    return [
        (
            q,
            RetrievedChunk(
                record=records[q.chunk_ids[0]],
                citation_id=citation_id(q.chunk_ids[0]),
                score=1.0,
                similarity=None,
                keyword_score=None,
                layer="question_number",
            ),
        )
        for q in found
        if q.chunk_ids[0] in records
    ]


def question_context(pairs: list[tuple[NumberedQuestion, RetrievedChunk]]) -> str:
    """Context blocks for the found questions, labelled with their citation ids."""
    return "\n\n".join(
        f"{chunk.citation_id} [{chunk.source} · question {q.number}]\n{q.text}"
        for q, chunk in pairs
    )
