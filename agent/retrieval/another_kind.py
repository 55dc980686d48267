"""An answer about another kind of the thing asked for.

"How much rye flour does the recipe use?" over a recipe that only has bread flour was
answered "The recipe uses 450 g of bread flour #chk_…"; "What is the sick leave
entitlement?" over a parental leave policy, "Birth parents are entitled to 26 weeks of paid
leave"; "Who finished the payroll migration?" over a stand-up where Tom finished the
billing migration, "Tom Becker finished the payroll migration". The question qualifies a
noun ("rye flour", "sick leave", "payroll migration") with a word no passage holds, the
passages hold the noun under another qualifier ("bread flour", "paid leave", "billing
migration"), and the 1.5B model answers with that one: in the answer's words ("bread
flour"), or keeping the question's ("payroll migration") for what a passage says of the
other. The names and figures are all held, so the other checks let it through.

:func:`another_kind` finds such answers. The question's qualifier must open its noun phrase
(after "the", "much", a possessive…): "Roberts find removed" or "employees give before" is a
verb before a word, not a kind of thing. Words the passages hold under a near spelling
("parental" for "parents") count as held.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from agent.retrieval.citations import CITATION_RE
from agent.text import STOPWORDS

_TOKEN = re.compile(r"[A-Za-z][A-Za-z'’-]*|\d+")
_NOUN_PHRASE_OPENERS = frozenset(
    [
        "the",
        "a",
        "an",
        "this",
        "that",
        "these",
        "those",
        "my",
        "your",
        "his",
        "her",
        "its",
        "our",
        "their",
        "which",
        "what",
        "whose",
        "much",
        "many",
        "any",
        "some",
        "no",
        "each",
        "every",
        "s",
    ]
)
"""Words after which the next one opens a noun phrase ("s": a possessive's, "the firm's")."""
_QUANTIFIERS = frozenset(
    ["many", "much", "few", "several", "more", "most", "less", "least", "other", "same"]
)
"""Words that count or compare, which qualify no kind of thing."""
HELD_PREFIX = 5
"""Letters a passage word must share with the question's qualifier to hold it."""


@dataclass(frozen=True)
class AnotherKind:
    """What the question asks for, and the kind of it a passage speaks of instead."""

    asked: str
    """The question's phrase, as written ("rye flour")."""
    said: str
    """The passages' phrase ("bread flour")."""
    citation_id: str
    """The passage holding :attr:`said`."""
    answer_keeps_it: bool
    """Whether the answer says :attr:`asked` of what the passage says of :attr:`said`."""


def _words(text: str) -> list[str]:
    # a possessive's "s" stands apart: "the firm's payroll" -> the, firm, s, payroll
    return [w for t in _TOKEN.findall(text) for w in re.split(r"['’]", t) if w]


def _key(word: str) -> str:
    word = word.lower()
    return word[:-1] if len(word) > 4 and word.endswith("s") else word


def _content(word: str) -> bool:
    return word.isalpha() and len(word) > 2 and word.lower() not in STOPWORDS


def _qualified_nouns(question: str) -> list[tuple[str, str, bool]]:
    """``(qualifier, noun, last)`` of ``question``: two lower-case content words in a row,
    the first opening a noun phrase and neither a quantifier nor an adverb; ``last``: no
    content word follows the noun ("the payroll migration?", not "the wealthy young man")."""
    words = _words(question)
    pairs = []
    after = [*words[2:], ""]
    for before, qualifier, noun, next_word in zip(
        ["the", *words], words, words[1:], after, strict=False
    ):
        if before.lower() not in _NOUN_PHRASE_OPENERS:
            continue
        if not (qualifier.islower() and noun.islower() and _content(qualifier) and _content(noun)):
            continue
        if qualifier in _QUANTIFIERS or qualifier.endswith("ly"):
            continue
        pairs.append((qualifier, noun, not _content(next_word)))
    return pairs


def _held(word: str, vocabulary: set[str]) -> bool:
    prefix = word.lower()[:HELD_PREFIX]
    return any(v.startswith(prefix) for v in vocabulary)


def _kinds_of(noun: str, words: list[str]) -> list[str]:
    """The content words right before ``noun`` in ``words`` (lower-cased)."""
    key = _key(noun)
    return [
        a.lower() for a, b in zip(words, words[1:], strict=False) if _key(b) == key and _content(a)
    ]


def another_kind(
    answer: str, question: str, passages: Iterable[tuple[str, str]]
) -> AnotherKind | None:
    """The kind of thing ``answer`` speaks of instead of the one ``question`` asks for, when
    none of ``passages`` (``(citation id, text)``) holds the question's qualifier and one of
    them holds its noun under another (see the module docs); else ``None``."""
    plain = CITATION_RE.sub(" ", answer)
    said_words = _words(plain)
    said = {_key(w) for w in said_words}
    read = [(cid, _words(text)) for cid, text in passages]
    vocabulary = {w.lower() for _, words in read for w in words}
    for qualifier, noun, last in _qualified_nouns(question):
        if _key(noun) not in said or _held(qualifier, vocabulary):
            continue
        keeps = _key(qualifier) in said
        if keeps and not last:
            continue  # "the wealthy young man": an adjective the book words otherwise
        # the answer's own kind of the noun, or (keeping the question's) any other
        wanted = set() if keeps else set(_kinds_of(noun, said_words)) - {qualifier.lower()}
        if not keeps and not wanted:
            continue
        for cid, words in read:
            kinds = [k for k in _kinds_of(noun, words) if keeps or k in wanted]
            if kinds:
                return AnotherKind(f"{qualifier} {noun}", f"{kinds[0]} {noun}", cid, keeps)
    return None
