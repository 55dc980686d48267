"""Conflicting passages (seeds 000 and 002): two passages of different documents that state
different values for the same thing, found cheaply, without a model call.

Each passage is split into sentences; each sentence into its *topic* (content words, and the
names it mentions) and its *values*: dates (a month or weekday, with its day), years, other
numbers (digits or number words), names (runs of capitalised words) and whether it is
negated. Two sentences of different documents conflict when their topics overlap enough
(at least two shared terms, covering at least 60% of the smaller topic and 40% of the
larger) and either both state
a value of the same kind and each has one the other lacks (1921 / 1932, Vienna / Geneva), or
one is negated and the other is not, with near-identical topics ("has a moat" / "has no
moat").

:func:`keep_both_sides` then chooses which passages a search keeps so that no budget drops
one side of a conflict: pairs first, the rest trimmed from the lowest ranked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from itertools import combinations
from typing import TypeVar

from agent.ingest.sentences import split_sentences
from agent.text import STOPWORDS

T = TypeVar("T")

MIN_SHARED = 2
MIN_COVER = 0.6
"""Shared topic terms / the smaller topic's terms."""
MIN_WIDE_COVER = 0.4
"""Shared topic terms / the larger topic's terms."""
NEGATION_COVER = 0.75

_ORDINAL = re.compile(r"(st|nd|rd|th)$")
_POSSESSIVE = re.compile(r"['’]s$")
_YEAR = re.compile(r"1\d{3}|20\d{2}")
_TOKEN = re.compile(r"\d+(?:[.,:]\d+)*(?:st|nd|rd|th)?|[A-Za-z][A-Za-z'’-]*")


def _words(text: str) -> list[str]:
    return text.split()


_MONTHS = _words(
    "january february march april may june july august september october november december"
)
_WEEKDAYS = _words("monday tuesday wednesday thursday friday saturday sunday")
_DATE_WORDS = frozenset(_MONTHS + [d + "s" for d in _WEEKDAYS] + _WEEKDAYS) - {"may"}
_NUMBER_WORDS = {
    w: str(n)
    for n, w in enumerate(
        _words(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen "
            "fourteen fifteen sixteen seventeen eighteen nineteen twenty"
        )
    )
    if w != "one"  # mostly a pronoun ("one of them")
} | {"thirty": "30", "forty": "40", "fifty": "50", "hundred": "100", "thousand": "1000"}
_NEGATIONS = frozenset(_words("not no never cannot nor neither none nothing"))
_LIGHT = STOPWORDS | frozenset(
    _words(
        "about above according after again all also although any because been before being "
        "both can could during each either every few from here however into just like many "
        "more most much only other our over said say says should since some such than then "
        "these those though told under until upon very while would yet"
    )
)
_LABELS = frozenset(
    _words(
        "act book chapter part section page pages number no figure fig table step item line "
        "verse scene volume vol question exercise room platform gate route"
    )
)
"""Words whose next number is an identifier ("chapter 7"), not a value that may differ."""
KINDS = ("date", "year", "number", "name")


@dataclass(frozen=True)
class Passage:
    """One retrieved passage: its citation id, its document and its text."""

    citation_id: str
    document_id: str
    text: str
    source: str = ""


@dataclass(frozen=True)
class Conflict:
    """Two passages that disagree: which, on what kind of value, and in which sentences."""

    first: str
    second: str
    kind: str
    """``date``, ``year``, ``number``, ``name`` or ``negation``."""
    first_value: str
    second_value: str
    first_sentence: str
    second_sentence: str
    first_source: str = ""
    second_source: str = ""

    @property
    def ids(self) -> tuple[str, str]:
        """The citation ids of both sides."""
        return self.first, self.second

    def as_dict(self) -> dict:
        """JSON-ready form (turn metadata, API answers)."""
        return asdict(self)


@dataclass(frozen=True)
class _Facts:
    """What one sentence says: its topic terms, its values by kind, and its polarity."""

    sentence: str
    topic: frozenset[str]
    values: dict[str, dict[str, str]]
    """kind -> normalised value -> the value as written."""
    negated: bool


def _stem(word: str) -> str:
    """A crude stem, so that "opens", "opened" and "open" meet."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed"):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _number(token: str) -> str | None:
    """A numeral's normalised value ("1,200" -> "1200", "3rd" -> "3"), or ``None``."""
    low = token.lower()
    if low in _NUMBER_WORDS:
        return _NUMBER_WORDS[low]
    if not token[0].isdigit():
        return None
    return _ORDINAL.sub("", low).replace(",", "")


def _dates(tokens: list[str], values: dict[str, dict[str, str]]) -> set[int]:
    """Record each month or weekday with its adjacent day number; the indices used."""
    used: set[int] = set()
    for i, token in enumerate(tokens):
        low = token.lower()
        if low not in _DATE_WORDS and not (low == "may" and token[0] == "M" and i > 0):
            continue
        used.add(i)
        name = _stem(low) if low.endswith("days") else low
        day, written = "", token
        for j in (i - 1, i + 1, i - 2):
            number = _number(tokens[j]) if 0 <= j < len(tokens) else None
            if number and number.isdigit() and 1 <= int(number) <= 31 and j not in used:
                day = number
                written = " ".join(tokens[min(i, j) : max(i, j) + 1])
                used.add(j)
                break
        values.setdefault("date", {})[f"{name} {day}".strip()] = written
    return used


def _name_runs(tokens: list[str], used: set[int]) -> list[tuple[int, int]]:
    """Spans of consecutive capitalised words that are not common words (names); a single
    capitalised word opening the sentence is not taken for one ("Records show...")."""
    runs: list[tuple[int, int]] = []
    start = None
    for i, token in enumerate([*tokens, ""]):
        is_name = bool(token) and token[0].isupper() and i not in used
        is_name = is_name and token.lower() not in _LIGHT and token.lower() not in _NUMBER_WORDS
        if is_name and start is None:
            start = i
        elif not is_name and start is not None:
            if start > 0 or i > 1:
                runs.append((start, i))
            start = None
    return runs


@lru_cache(maxsize=4096)
def _passage_facts(text: str) -> tuple[_Facts, ...]:
    """The facts of each sentence of a passage (cached: a search checks the same passages
    at two stages, and later searches see them again)."""
    return tuple(_facts(s) for s in split_sentences(" ".join(text.split())))


def is_negated(text: str) -> bool:
    """Whether ``text`` holds a negation ("not", "no", "never", "doesn't"...)."""
    return _facts(text).negated


def _facts(sentence: str) -> _Facts:
    """Split one sentence into its topic, values and polarity."""
    tokens = _TOKEN.findall(sentence)
    values: dict[str, dict[str, str]] = {}
    used = _dates(tokens, values)
    for start, end in _name_runs(tokens, used):
        written = _POSSESSIVE.sub("", " ".join(tokens[start:end]))
        values.setdefault("name", {})[written.lower()] = written
        used.update(range(start, end))
    topic: set[str] = set(values.get("name", {}))  # names are part of what it is about
    negated = False
    for i, token in enumerate(tokens):
        low = token.lower()
        number = _number(token) if i not in used else None
        if number is not None and i > 0 and tokens[i - 1].lower() in _LABELS:
            topic.add(f"{tokens[i - 1].lower()} {number}")  # "chapter 7" names a thing
        elif number is not None:
            kind = "year" if _YEAR.fullmatch(number) else "number"
            values.setdefault(kind, {})[number] = token
        elif low in _NEGATIONS or low.endswith(("n't", "n’t")):
            negated = True
        elif i not in used and low not in _LIGHT and len(low) > 2:
            topic.add(_stem(_POSSESSIVE.sub("", low)))
    return _Facts(sentence, frozenset(topic), values, negated)


def _differing(a: _Facts, b: _Facts, wide: float) -> tuple[str, str, str] | None:
    """The kind and the two values on which two same-topic sentences differ, if any;
    ``wide``: the share of the larger topic they have in common (a negation counts only
    when nearly everything else is the same)."""
    for kind in KINDS:
        mine, theirs = a.values.get(kind, {}), b.values.get(kind, {})
        only_mine = [w for v, w in mine.items() if v not in theirs]
        only_theirs = [w for v, w in theirs.items() if v not in mine]
        if only_mine and only_theirs:
            return kind, ", ".join(only_mine), ", ".join(only_theirs)
    if a.negated != b.negated and wide >= NEGATION_COVER:
        return "negation", "no" if a.negated else "yes", "no" if b.negated else "yes"
    return None


def _cover(a: _Facts, b: _Facts, shared: int) -> tuple[float, float]:
    """How much of the smaller and of the larger topic two sentences sharing ``shared``
    terms have in common; ``(0, 0)`` when that is too little of the larger one (a short
    exclamation against a long sentence)."""
    small, large = sorted((len(a.topic), len(b.topic)))
    if shared < MIN_SHARED or shared < MIN_WIDE_COVER * large:
        return 0.0, 0.0
    return shared / small, shared / large


def _could_differ(a: _Facts, b: _Facts) -> bool:
    """Whether two sentences state a value of the same kind, or differ in polarity."""
    return a.negated != b.negated or not a.values.keys().isdisjoint(b.values)


def _sentence_pairs(facts: list[_Facts], documents: list[str]) -> dict[tuple[int, int], int]:
    """Pairs of sentences (indices, in order) of different documents sharing at least
    ``MIN_SHARED`` topic terms, with how many they share; found through the terms, not by
    comparing every pair (``documents``: each sentence's document)."""
    by_term: dict[str, list[int]] = {}
    for i, fact in enumerate(facts):
        for term in fact.topic:
            by_term.setdefault(term, []).append(i)
    shared: dict[tuple[int, int], int] = {}
    for ids in by_term.values():
        if all(documents[i] == documents[ids[0]] for i in ids):
            continue  # a term of one document's sentences only pairs nothing
        for x, y in combinations(ids, 2):
            if documents[x] != documents[y]:
                shared[(x, y)] = shared.get((x, y), 0) + 1
    return {pair: n for pair, n in shared.items() if n >= MIN_SHARED}


def find_conflicts(passages: Sequence[Passage]) -> list[Conflict]:
    """Every pair of passages from different documents that disagree, in passage order
    (the better-ranked passage first in each pair), each on the sentences with the widest
    shared topic."""
    unique = list({p.citation_id: p for p in passages}.values())
    if len({p.document_id for p in unique}) < 2:
        return []  # passages of one document are never set against each other
    owner: list[int] = []
    facts: list[_Facts] = []
    for i, p in enumerate(unique):
        for fact in _passage_facts(p.text):
            owner.append(i)
            facts.append(fact)
    best: dict[tuple[int, int], tuple[float, Conflict]] = {}
    documents = [unique[i].document_id for i in owner]
    for (x, y), shared in _sentence_pairs(facts, documents).items():
        first, second = unique[owner[x]], unique[owner[y]]
        if not _could_differ(facts[x], facts[y]):
            continue
        cover, wide = _cover(facts[x], facts[y], shared)
        key = (owner[x], owner[y])
        if cover < MIN_COVER or (key in best and cover <= best[key][0]):
            continue
        differing = _differing(facts[x], facts[y], wide)
        if differing is not None:
            kind, mine, theirs = differing
            best[key] = (
                cover,
                Conflict(
                    first.citation_id,
                    second.citation_id,
                    kind,
                    mine,
                    theirs,
                    facts[x].sentence,
                    facts[y].sentence,
                    first.source,
                    second.source,
                ),
            )
    return [best[key][1] for key in sorted(best)]


def keep_both_sides(
    chosen: Sequence[T], pool: Sequence[T], k: int, passage: Callable[[T], Passage]
) -> tuple[list[T], list[Conflict]]:
    """At most ``max(k, 2)`` items: both sides of each conflict that involves a ``chosen``
    item (partners taken from ``pool``, best-ranked conflicts first), then the other chosen
    items in order; with the conflicts kept.

    Budgets (diversity, the top k) thus never drop one side of a detected conflict: the
    others are trimmed first.
    """
    by_id = {passage(item).citation_id: item for item in [*chosen, *pool]}
    order = list(by_id)
    picked = {passage(item).citation_id for item in chosen}
    conflicts = [
        c
        for c in find_conflicts([passage(item) for item in by_id.values()])
        if c.first in picked or c.second in picked
    ]
    room = max(k, 2) if conflicts else k
    keep: list[str] = []
    kept: list[Conflict] = []
    for conflict in conflicts:
        missing = [cid for cid in conflict.ids if cid not in keep]
        if len(keep) + len(missing) <= room:
            keep += missing
            kept.append(conflict)
    for item in chosen:
        cid = passage(item).citation_id
        if len(keep) < room and cid not in keep:
            keep.append(cid)
    return [by_id[cid] for cid in sorted(keep, key=order.index)], kept
