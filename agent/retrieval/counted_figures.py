"""A sum of money or a measure asked for, answered with figures that count something else.

"What was Iwan Roberts' salary at Gillingham?" answered "…was 278 goals in 84 games
#chk_…", "How much does a celebration cake cost?" with "…can be ordered at least seven days
ahead… in three sizes", "How tall is the lighthouse?" with "…its keepers lived in the two
cottages…": the 1.5B model found no salary, price or height in its passages and gave the
figures it did find. Each figure stands before a noun it counts (goals, days, sizes,
cottages), where a sum of money is followed by its currency, a scale or a rate ("500 pounds
a week", "10,000 a year", "£1.2 million") and a measure by its unit ("340 metres", "six
feet", "89 years old"). :func:`counts_something_else` tells such answers apart: every figure
the answer adds, in digits or in words, counts a noun that is no unit of what was asked. A
figure with nothing after it ("It is 340.") or a word of another kind ("paid 10,000 for
him") is never taken, nor a question that a count may answer: "How many …", "How long is
the book?" ("300 pages"), "How big …" ("big enough for 20 boats").

A head count asked for ("What was the attendance at his debut?", "What is the population of
…?", "How many people live in …?") is answered by people ("300 residents", "1,200
attended", "a crowd of 21,000"); "…was 142 games" or "About 20 boats" counts something else.
There a figure counts something else only before a plural noun that names no people and no
unit: a verb after it ("300 live there") is never taken.

"How many healthy volunteers were included in the study?" answered "The study included
fourteen CF patients #chk_…": the abstract counts its patients and names its volunteers
without a count. :func:`counts_another_thing` takes a count answered so: the answer never
names the thing the question counts (its noun after "how many", one the passages name), and
each figure it adds stands before another plural noun. When no passage names the thing
asked, the answer's noun may be the passages' word for it ("How many children…?" "…three
daughters") and is left.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from agent.retrieval.citations import CITATION_RE
from agent.text import STOPWORDS


def _words(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"[a-z%]+", text))


_ASKS_MONEY = re.compile(
    r"\b(?:salary|salaries|wages?|fees?|price|cost|fare|rent|budget|income|revenue|turnover|"
    r"profit|dividend|paid|pay|earn(?:s|ed)?|spen[dt]|charge[ds]?)\b",
    re.IGNORECASE,
)
_ASKS_MEASURE = re.compile(
    r"\bhow\s+(?:tall|high|far|heavy|deep|wide|old)\b|"
    r"\bwhat\s+(?:is|was|are|were)\s+(?:the|its|their|his|her)\s+(?:[\w'’-]+\s+){0,2}?"
    r"(?:height|weight|length|distance|depth|width|age|size|area)\b",
    re.IGNORECASE,
)
_HOW_MANY = re.compile(r"\bhow\s+many\b", re.IGNORECASE)
_PEOPLE_WORDS = (
    "people persons fans spectators supporters residents inhabitants citizens members "
    "employees staff workers visitors students pupils attendees viewers souls men women "
    "children adults families households voters"
)
_ASKS_HEADCOUNT = re.compile(
    rf"\bhow\s+many\s+(?:{'|'.join(_PEOPLE_WORDS.split())})\b|"
    r"\bwhat\s+(?:is|was|are|were)\s+(?:the|its|their|his|her)\s+(?:[\w'’-]+\s+){0,2}?"
    r"(?:attendance|population|turnout|headcount|workforce)\b",
    re.IGNORECASE,
)
_SCALES = _words("hundred hundreds thousand thousands million millions billion billions bn m k")
_MONEY_UNITS = _SCALES | _words(
    """pounds pound pence penny p pa dollars dollar cents cent euros euro eur gbp usd yen
    francs shillings guineas crowns rupees per each every weekly monthly yearly annually"""
)
_MEASURE_UNITS = _SCALES | _words(
    """metres metre meters meter m cm mm km kilometres kilometers miles mile yards yard feet
    foot ft inches inch kg kilograms kilos grams g pounds lb lbs stone stones tonnes tonne tons
    ton ounces oz litres liters l ml gallons pints acres hectares ha square cubic storeys
    stories floors years year yrs months month weeks week days day hours hour hrs minutes
    minute mins seconds second secs old high tall long deep wide across mph knots degrees
    percent per cent % times sq stops blocks steps paces laps generations"""
)
_HEADCOUNT_UNITS = _MEASURE_UNITS | _words(_PEOPLE_WORDS)
_NUMBER_WORD = (
    r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|"
    r"fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|"
    r"eighty|ninety|hundred|thousand|million|billion|dozen)"
)
# a figure as written, in digits ("1,931", "2.60") or words ("forty-five thousand")
_FIGURE = re.compile(
    rf"\d+(?:[.,]\d+)*|\b{_NUMBER_WORD}(?:(?:[\s-]+|\s+and\s+){_NUMBER_WORD})*\b", re.IGNORECASE
)
_NEXT_WORD = re.compile(r"\s+([A-Za-z%]+)")
_CURRENCY_BEFORE = re.compile(r"[£$€¥]\s*$|\b(?:EUR|GBP|USD)\s*$")


def _asked_units(question: str) -> frozenset[str] | None:
    """The words that may follow a figure answering ``question``: money's, a measure's, a
    head count's, or ``None`` when it asks for none of them (or counts things: "How many
    …")."""
    if _ASKS_HEADCOUNT.search(question):
        return _HEADCOUNT_UNITS
    if _HOW_MANY.search(question):
        return None
    if _ASKS_MONEY.search(question):
        return _MONEY_UNITS
    if _ASKS_MEASURE.search(question):
        return _MEASURE_UNITS
    return None


def counts_something_else(answer: str, question: str) -> bool:
    """Whether ``answer`` gives the sum of money or the measure ``question`` asks for only in
    figures that each count something else (see the module docs)."""
    units = _asked_units(question)
    if units is None:
        return False
    plain = CITATION_RE.sub(" ", answer)
    asked = {m.group(0).lower() for m in _FIGURE.finditer(question)}
    figures = [m for m in _FIGURE.finditer(plain) if m.group(0).lower() not in asked]
    plural = units is _HEADCOUNT_UNITS  # people are counted by verbs too: "1,200 attended"
    return bool(figures) and all(_counts_a_noun(plain, m, units, plural) for m in figures)


_HOW_MANY_WORDS = re.compile(r"\bhow\s+many\s+((?:[A-Za-z'’-]+\s*){1,6})", re.IGNORECASE)
_COUNT_ENDS = _words(
    "are is was were do does did have has had can could will would of in with at on for from "
    "by to that who which"
)
_STEM = 5
"""Letters two words must share to be one noun ("volunteer", "volunteers")."""
_AFTER_FIGURE = 3
"""Words after a figure that may be its noun ("fourteen CF patients")."""


def _stem(word: str) -> str:
    return word.lower()[:_STEM]


def _plural(word: str) -> bool:
    # "patients", not "fibrosis", "virus" nor "class"
    w = word.lower()
    return len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "is", "us"))


def counts_another_thing(answer: str, question: str, passages: Iterable[str]) -> bool:
    """Whether ``answer`` to a "How many …?" ``question`` counts only something else than
    what the question counts, which ``passages`` name (see the module docs)."""
    noun = _counted_noun(question)
    if noun is None:
        return False
    if noun.lower() in _words(_PEOPLE_WORDS) or noun.lower() in STOPWORDS:
        return False  # a head count: "300 residents" answers "how many people"
    plain = CITATION_RE.sub(" ", answer)
    said = {_stem(w) for w in re.findall(r"[A-Za-z]+", plain)}
    if _stem(noun) in said:
        return False
    held = {_stem(w) for t in passages for w in re.findall(r"[A-Za-z]+", t)}
    if _stem(noun) not in held:
        return False
    in_question = {m.group(0).lower() for m in _FIGURE.finditer(question)}
    figures = [m for m in _FIGURE.finditer(plain) if m.group(0).lower() not in in_question]
    return bool(figures) and all(_before_a_plural(plain, m) for m in figures)


def _counted_noun(question: str) -> str | None:
    """The noun "how many" counts in ``question``: the first plural of the words before a verb
    or a preposition ("how many healthy volunteers were"), else the last of them ("how many
    children did"); ``None`` without "how many"."""
    found = _HOW_MANY_WORDS.search(question)
    if found is None:
        return None
    words = re.findall(r"[A-Za-z]+", found.group(1))
    end = next((i for i, w in enumerate(words) if w.lower() in _COUNT_ENDS), len(words))
    phrase = words[:end] or words[:1]
    return next((w for w in phrase if _plural(w)), phrase[-1])


def _before_a_plural(text: str, figure: re.Match) -> bool:
    """Whether one of the few words after ``figure`` in ``text`` is a plural noun."""
    after = re.findall(r"[A-Za-z]+", text[figure.end() :])[:_AFTER_FIGURE]
    return any(_plural(w) and w.lower() not in STOPWORDS for w in after)


def _counts_a_noun(
    text: str, figure: re.Match, units: frozenset[str], plural: bool = False
) -> bool:
    """Whether ``figure`` in ``text`` stands before a noun it counts: a word that is no
    function word and none of ``units`` (with ``plural``, a plural one: "games", not
    "live"), with no currency sign before the figure."""
    if _CURRENCY_BEFORE.search(text[: figure.start()]):
        return False
    word = _NEXT_WORD.match(text, figure.end())
    if word is None:
        return False
    w = word.group(1).lower()
    if plural and not (len(w) > 3 and w.endswith("s") and not w.endswith("ss")):
        return False
    return w not in STOPWORDS and w not in units
