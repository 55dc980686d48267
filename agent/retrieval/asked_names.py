"""A question that asks for a name, answered without one.

"What is the name of Mr. Darcy's estate in Derbyshire?" answered "Mr. Darcy's estate in
Derbyshire is a noble one #chk_…": the 1.5B model wrote a sentence around the question's own
words when its passages did not give the name. The reader learns nothing, and the citation
opens a paragraph without the name. :func:`names_nothing_asked` tells such answers apart; the
caller replies that the documents were searched and do not say it.

Only questions that plainly ask for a name count ("What is the name of …", "What was his
first name?", "What name did she give …", "What is the lizard called?"); a "Who …?" or
"Whose name …?" question may be answered by a description ("the narrator's aunt"), so it
never does. An answer names something when it holds a capitalised word the question does not
(a title such as "Mr" or a sentence's "The" does not count), a quotation, a number the
question lacks, or letters of a script without case: the check only ever takes an answer
that certainly names nothing new. A "Who …?" answer naming no one that cites nothing (the
guard found no passage saying it) is such too: "The Crazy Ones was written by the author of
this text." says nothing the documents say.

:func:`names_unheld` takes the other side: "What is the name of Mr. Darcy's younger
sister?" answered "…is Mary #chk_…" when no passage shown names Mary. For a question asking
for a name, a person, a thing or a place ("Who …", "Whom …", "Whose …", "Which …", "Where
…": "Iwan Roberts was born in Cardiff" over passages that say Bangor), an answer whose
every new name is in no passage (nor in a passage's label, where a chapter's title is) gives
the model's guess, not the documents' answer. The first word of a sentence counts as a name
when the passages use it as one, or when the answer is only a few words ("Georgiana.").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from agent.retrieval.anchors import anchor_vocabulary, anchors, names_in, vocabulary_of
from agent.retrieval.citations import CITATION_RE
from agent.retrieval.name_words import SENTENCE_WORDS, TITLES
from agent.text import has_caseless_letters

_ASKS_NAME = re.compile(
    r"^\W*what(?:'s|’s|\s+(?:is|was|are|were))\b[^?]*?\bnames?\s*(?:of\b|\?|$)|"
    r"^\W*(?:what|which)\s+names?\b|"  # "What name did she give…", "Which name…"
    r"^\W*what\s+(?:is|was|are|were)\b[^?]*\b(?:called|named)\s*\??\s*$",
    re.IGNORECASE,
)
ASKS_WHO = re.compile(r"^\W*(?:who|whom|whose|which|where)\b", re.IGNORECASE)
# a person asked for (ASKS_WHO also takes "which" and "where": a club, a place)
ASKS_FOR_SOMEONE = re.compile(r"^\W*(?:who|whom|whose)\b", re.IGNORECASE)
_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_NUMBER = re.compile(r"\d+")
_QUOTED = re.compile(r"[\"“][^\"”]{2,}[\"”]")
# capitalised, yet no name: sentence openers, titles and the question's own name words
_NOT_NAMES = SENTENCE_WORDS | TITLES | {"name", "named", "called"}
_NOBODY = frozenset({"nobody", "none", "no", "nothing", "neither", "unknown", "noone", "anyone"})
BARE_NAME_WORDS = 4
"""Words of an answer that is a name alone ("Georgiana Darcy."): its first word is a name."""


def asks_for_a_name(question: str) -> bool:
    """Whether ``question`` plainly asks for a name ("What is the name of …?", "What was
    his first name?", "What is the lizard called?")."""
    return bool(_ASKS_NAME.search(question.strip()))


def _key(word: str) -> str:
    """``word`` lower-cased without a possessive ("Darcy's" -> "darcy")."""
    return re.sub(r"['’]s?$", "", word.lower())


def quotes_or_adds_a_number(answer: str, question: str) -> bool:
    """Whether ``answer`` (its citations left out) holds a quotation or a number
    ``question`` lacks: either gives something, whatever its names."""
    return bool(
        _QUOTED.search(answer) or set(_NUMBER.findall(answer)) - set(_NUMBER.findall(question))
    )


def names_nothing_asked(answer: str, question: str) -> bool:
    """Whether ``answer`` leaves a question asking for a name (:func:`asks_for_a_name`), or
    one asking who citing nothing (:data:`ASKS_FOR_SOMEONE`), without one: no capitalised word
    the question lacks, no quotation, no new number and no letters of a caseless script
    (see the module docs)."""
    plain = CITATION_RE.sub(" ", answer)
    uncited = plain == answer
    if not (asks_for_a_name(question) or (uncited and ASKS_FOR_SOMEONE.search(question))):
        return False
    if quotes_or_adds_a_number(plain, question):
        return False
    if has_caseless_letters(plain):
        return False  # Chinese, Japanese, Arabic…: no capitals to go by
    return not _has_new_name_word(plain, question, _NOT_NAMES)


def _has_new_name_word(text: str, question: str, not_names: frozenset[str]) -> bool:
    """Whether ``text`` holds a capitalised word ``question`` lacks that is none of
    ``not_names`` (lower-cased, possessives aside)."""
    asked = {_key(w) for w in _WORD.findall(question)}
    return any(
        w[0].isupper() and (k := _key(w)) not in asked and k not in not_names
        for w in _WORD.findall(text)
    )


_CALENDAR = frozenset(
    [
        "january",
        "february",
        "march",
        "april",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
    ]
)  # "May" is a name as often as a month
_NOT_NAMES_OR_DATES = _NOT_NAMES | _CALENDAR


def names_someone_new(text: str, question: str) -> bool:
    """Whether ``text`` (citations aside) quotes something or holds a capitalised word
    ``question`` lacks that is no sentence word, title, month or weekday: a name the question
    did not give ("Mr. Gardiner", not "The Crazy Ones October 14")."""
    plain = CITATION_RE.sub(" ", text)
    return bool(_QUOTED.search(plain)) or _has_new_name_word(plain, question, _NOT_NAMES_OR_DATES)


def names_unheld(answer: str, question: str, passages: Iterable[str]) -> bool:
    """Whether ``answer`` to a question for a name or a person (see the module docs) names
    only what none of ``passages`` (each with its label) holds: at least one name the
    question lacks, and every such name in no passage."""
    if not (asks_for_a_name(question) or ASKS_WHO.search(question)):
        return False
    texts = list(passages)
    plain = CITATION_RE.sub(" ", answer)
    known = anchor_vocabulary(question)
    words = _WORD.findall(plain)
    found = anchors(plain, set().union(*(names_in(t) for t in texts)))
    if (
        0 < len(words) <= BARE_NAME_WORDS
        and words[0][0].isupper()
        and _key(words[0]) not in _NOBODY
    ):
        # "Georgiana.": a bare name opens the answer; "PANC-1 cells": a code, read as the
        # passages' words are (its letters, "panc")
        found.add(re.split(r"[-‐–]", _key(words[0]))[0])
    new = {a for a in found if not a[0].isdigit() and a not in known and a not in _NOT_NAMES}
    return bool(new) and not new & vocabulary_of(texts)
