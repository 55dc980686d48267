"""Names and numbers a sentence states: what its citation must contain.

A small model often copies the right name from one passage and cites another passage near
it. Content-word overlap cannot tell the two apart when both share the question's words
("Alice", "cat"), but the name or the figure the sentence adds can: the cited passage must
contain it. These helpers find those anchors and the words a passage offers for them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from agent.ingest.sentences import is_abbreviation
from agent.retrieval.name_words import LABEL_WORDS, SENTENCE_WORDS

_WORD = re.compile(r"[A-Za-z][A-Za-z]*|\d+(?:[.,:]\d+)*")
_FIRST_WORD = re.compile(r"^\W*([A-Za-z]+)")
# capitalised words that are never names: sentence openers and a label's words ("Mr" is
# kept: "Miss Bingley" and "Mr. Bingley" are two people)
_NOT_NAMES = SENTENCE_WORDS | LABEL_WORDS


# after a sentence's end (not before its citation), after the quote it closes when a new
# sentence follows, at a paragraph break (a small model often leaves out the full stop), or
# after a line ending in a colon
_BOUNDARY = re.compile(
    r"(?<=[.!?…])(?=\s(?!\s*#chk_))|(?<=[.!?][\"”’])(?=\s+[A-Z])|(?<=\S)(?=[ \t]*\n\s*\n(?!\s*#chk_))"
    r"|(?<=:)(?=[ \t]*\n)"  # a heading's or a lead-in's line ends there
)
# a numbered list's marker ("2.", at a line's start) opens its item's sentence: one dropped
# takes its marker
_LIST_MARKER = re.compile(r"(?:^|\n)[ \t]*\d{1,3}\.$")
# a line that only leads into what follows ("Let's look at the facts step by step:")
_LEAD_IN = re.compile(r":\s*$")


def answer_sentences(text: str) -> list[str]:
    """``text`` cut after each sentence's end, the pieces joining back into ``text``: a
    citation right after the full stop stays with its sentence, and an abbreviation ("Mr.",
    "St."), an initial or a numbered list's marker ("2.") does not end one."""
    pieces, start = [], 0
    for boundary in _BOUNDARY.finditer(text):
        before = text[start : boundary.start()]
        if before.endswith(".") and (is_abbreviation(before) or _LIST_MARKER.search(before)):
            continue
        pieces.append(text[start : boundary.start()])
        start = boundary.start()
    pieces.append(text[start:])
    return [p for p in pieces if p]


def _number(token: str) -> str:
    return token.replace(",", "")


def anchors(sentence: str, names: Iterable[str] = ()) -> set[str]:
    """The lower-cased names (capitalised words after the first one) and numbers of
    ``sentence``: what a passage it cites must contain. Every sentence opens with a
    capital, so its first word counts only when it is one of ``names`` (lower-cased, e.g.
    :func:`names_in` the passages)."""
    first = _FIRST_WORD.match(sentence)
    skip = first.end(1) if first else 0
    found: set[str] = set()
    if first and first.group(1)[0].isupper() and first.group(1).lower() in set(names):
        found.add(first.group(1).lower())
    for m in _WORD.finditer(sentence):
        token = m.group(0)
        if token[0].isdigit():
            if len(token) > 1:  # "7 chapters" or a list's "1." is no claim worth checking
                found.add(_number(token))
        elif (
            m.start() >= skip
            and token[0].isupper()
            and not (len(token) > 1 and token.isupper())  # headings, shouting, acronyms
            and token.lower() not in _NOT_NAMES
        ):
            found.add(token.lower())
    return found


def names_in(text: str) -> set[str]:
    """Lower-cased words ``text`` capitalises inside a sentence: the names it uses."""
    found: set[str] = set()
    for sentence in re.split(r"(?<=[.!?:;\"“”])\s+", text):
        found |= {a for a in anchors(sentence) if not a[0].isdigit()}
    return found


def anchor_vocabulary(text: str) -> set[str]:
    """Every word and number of ``text``, lower-cased, for matching :func:`anchors`."""
    return {_number(t).lower() for t in _WORD.findall(text)}


def held_by_most(word: str, vocabularies: Sequence[set[str]]) -> bool:
    """Whether more than half of ``vocabularies`` (each an :func:`anchor_vocabulary`) hold
    ``word``: the subject the passages are all about ("Roberts" in his article), which tells
    no passage apart and qualifies nothing."""
    return 2 * sum(word in v for v in vocabularies) > len(vocabularies)


def vocabulary_of(texts: Iterable[str]) -> set[str]:
    """:func:`anchor_vocabulary` of all ``texts`` together."""
    return set().union(*(anchor_vocabulary(t) for t in texts))


def missing_anchors(sentence: str, known: Iterable[str]) -> set[str]:
    """The anchors of ``sentence`` found in none of the ``known`` texts (an invented name or
    figure, when ``known`` is everything the model was shown)."""
    return anchors(sentence) - vocabulary_of(known)


def without_invented_claims(answer: str, known: Iterable[str]) -> tuple[str, int]:
    """``answer`` without its sentences that state a name or number found in none of the
    ``known`` texts (the passages shown, the question): a small model's invention around a
    right passage. Returns the text and how many sentences were dropped; nothing is dropped
    when every sentence would be, lines that only lead into the rest ("…step by step:")
    aside (the caller decides what an empty answer means)."""
    sentences = _invented_sentences(answer, known)
    kept = [s for s, invented in sentences if not invented]
    if all(_LEAD_IN.search(s) for s in kept) or len(kept) == len(sentences):
        return answer, 0
    return "".join(kept).strip(), len(sentences) - len(kept)


def all_invented(answer: str, known: Iterable[str]) -> bool:
    """Whether every sentence of ``answer`` states a name or number found in none of the
    ``known`` texts (what :func:`without_invented_claims` leaves as it is)."""
    sentences = [(s, invented) for s, invented in _invented_sentences(answer, known) if s.strip()]
    return bool(sentences) and all(invented for _, invented in sentences)


def _invented_sentences(answer: str, known: Iterable[str]) -> list[tuple[str, bool]]:
    """Each sentence of ``answer`` with whether it states a name or number found in none of
    the ``known`` texts."""
    texts = list(known)
    vocabulary = vocabulary_of(texts)
    names = set().union(*(names_in(t) for t in texts))
    return [
        (s, bool(anchors(_uncited(s), names) - vocabulary))
        for s in answer_sentences(answer.strip())
    ]


def _uncited(sentence: str) -> str:
    return re.sub(r"\[?#?\bchk_[0-9a-fA-F]{8}\b\]?|#web_\d+", " ", sentence)
