"""A question that asks for an amount, answered without one.

"How tall does the Caterpillar say is a very good height?" answered "The Caterpillar says it
is a very good height indeed! #chk_…": the 1.5B model wrote a sentence around the
question's words and left out the figure ("three inches") its passage gives. The reader
learns nothing, and the citation opens a paragraph as if it said more.
:func:`gives_no_amount_asked` tells such answers apart; the caller replies that the
documents were searched and do not say it.

Only questions that plainly ask for a figure count: "How many …", "How old/tall/high/far/
heavy …", "How much …" about money or weight ("How much did Wolves pay…", "How much a year
…"), "What/Which/In what year …", "What percentage/fee/sum …". "What is the price/cost/
population/ratio …" too, and a named value or rate ("What was the cutoff value …", "the
survival rate"). "How long" and "How big" may be answered in words ("for a long time",
"as large as a house"), so they count only as "How long does … take/last", which asks for
a duration: an answer naming no stretch of time ("The Beacon Traverse takes 14 km") gives
none. "What time …" asks for a time of day: "The Hatter shook his head mournfully" for
"What time is it always at the Mad Tea-Party?" gives none, "six o'clock" or "at noon" does.
"In which minute …", "On what page …" (a minute, lap, inning, page, floor or hole: a
unit that is counted; a chapter is named by its title) ask for one of those units: an
answer that names no such unit and is more than a bare figure ("Roberts scored on 16
September 1986") gives none. An answer gives an amount when it holds a number the
question lacks, a number word (three, hundred, dozen, half, twice…), a quantifier that
answers "how many" (none, no, both, several, few, many, all), or a currency sign: the check
only ever takes an answer that certainly gives none.
"""

from __future__ import annotations

import re

from agent.retrieval.citations import CITATION_RE
from agent.text import has_caseless_letters

_MONEY_OR_WEIGHT = (
    r"pa(?:y|id|ys)|cost|costs|fee|worth|earn(?:s|ed)?|income|money|price|charge[ds]?|"
    r"spen[dt]|sold|sell|owe[ds]?|weigh(?:s|ed)?|a\s+year|per\s+(?:year|annum|week)"
)
_ASKS_AMOUNT = re.compile(
    r"\bhow\s+(?:many|old|tall|high|far|heavy)\b|"
    rf"\bhow\s+much\b[^?]*\b(?:{_MONEY_OR_WEIGHT})\b|"
    r"\b(?:what|which)\s+(?:year|percentage|per\s*cent|percent|fee|sum|amount|salary|price)\b|"
    r"\bwhat\s+(?:is|was|are|were)\s+(?:(?:the|its|their|his|her)\s+)?(?:[\w'’-]+\s+){0,3}?"
    r"(?:price|cost|fee|fare|salary|wage|rent|population|turnover|revenue|income|profit|"
    r"surplus|dividend|budget|percentage|age|height|weight|distance|attendance|turnout|ratio)\b|"
    # a named value or rate ("the cutoff value", "the survival rate"), not "the value of
    # trust" nor "the core values"
    r"\bwhat\s+(?:is|was|are|were)\s+(?:the|its|their|his|her)\s+(?:[\w'’-]+\s+){1,3}?"
    r"(?:value|rates?)\b",
    re.IGNORECASE,
)
_ASKS_DURATION = re.compile(
    r"\bhow\s+long\s+(?:does|did|do|will|would|should|can|could)\b[^?]*\b(?:take|last)\b", re.I
)
_TIME_WORDS = re.compile(
    r"\b(?:seconds?|minutes?|mins?|hours?|hrs?|h|days?|nights?|weeks?|fortnights?|months?|"
    r"years?|decades?|centur(?:y|ies)|mornings?|afternoons?|evenings?|overnight|ages|"
    r"forever|moments?|instant|while)\b",
    re.IGNORECASE,
)
# a counted unit asked for: its answer names the unit ("in the 67th minute", "page 4")
_COUNTED_UNITS = r"minute|lap|inning|page|floor|hole"
_ASKS_COUNTED_UNIT = re.compile(
    rf"^\W*(?:(?:in|on|at|during)\s+)?(?:what|which)\s+({_COUNTED_UNITS})s?\b", re.IGNORECASE
)
# the time of day asked for: its answer names a time ("six o'clock", "at noon", "tea-time")
_ASKS_CLOCK = re.compile(r"^\W*(?:at\s+|by\s+)?what\s+time\b", re.IGNORECASE)
_CLOCK_WORDS = re.compile(
    r"\b(?:o['’]clock|noon|midday|midnight|dawn|daybreak|sunrise|sunset|dusk|nightfall|"
    r"mornings?|afternoons?|evenings?|nights?|tea-?time|breakfast|lunch(?:time)?|dinner|"
    r"supper|a\.?m\.?|p\.?m\.?|half past|quarter (?:past|to))(?!\w)",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_NUMBER_WORDS = frozenset(
    re.findall(
        r"\w+",
        """zero one two three four five six seven eight nine ten eleven twelve thirteen
        fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty
        seventy eighty ninety hundred hundreds thousand thousands million millions billion
        billions dozen dozens score half halves quarter quarters third thirds once twice
        thrice double triple single none no neither both several few many all each every
        couple pair nought nil""",
    )
)
_CURRENCY = re.compile(r"[£$€¥]")
_WORD = re.compile(r"[^\W\d_]+")


# a time or a measure asked for, which an answer may give in words ("on a hot day", "a long
# way"): what a figure it does give must be held for (:mod:`agent.retrieval.held_figures`)
_ASKS_FIGURE = re.compile(
    r"^\W*(?:(?:and|so|but)\s+)?when\b|"
    r"\bwhen\s+(?:did|was|were|is|are|does|do|will|would|had|has|have)\b[^?]*\?\W*$|"
    r"\b(?:what|which|in\s+what|in\s+which|on\s+what|on\s+which)\s+"
    r"(?:time|date|day|month|decade|century|season)\b|"
    r"\bhow\s+(?:long|big|large|wide|deep|far|fast|often|soon|small|short|late|early)\b|"
    r"\b(?:by\s+)?what\s+(?:(?:is|was)\s+the\s+)?(?:score|scoreline|margin)\b",
    re.IGNORECASE,
)


def asks_for_a_figure(question: str) -> bool:
    """Whether ``question`` asks for an amount (:func:`asks_for_an_amount`), a time ("When
    did …", "What date …") or a measure ("How long is …", "How far …"): a figure its answer
    gives is one the passages must hold, though an answer in words may give none."""
    return asks_for_an_amount(question) or bool(_ASKS_FIGURE.search(question))


def asks_for_an_amount(question: str) -> bool:
    """Whether ``question`` plainly asks for a figure (see the module docs)."""
    return bool(
        _ASKS_AMOUNT.search(question)
        or _ASKS_DURATION.search(question)
        or _ASKS_COUNTED_UNIT.search(question)
        or _ASKS_CLOCK.search(question)
    )


def _amount_words(text: str) -> set[str]:
    return {w for w in (m.lower() for m in _WORD.findall(text)) if w in _NUMBER_WORDS}


def _names_the_unit(answer: str, unit: str) -> bool:
    """Whether ``answer`` names ``unit`` (or its common short form), or is a bare figure
    ("67th.", "Page 4"): a few words holding a number or a number word."""
    short = {"minute": r"min|mins", "page": r"p|pp"}.get(unit.lower())
    if re.search(rf"\b(?:{unit}s?{'|' + short if short else ''})\b", answer, re.IGNORECASE):
        return True
    if re.search(r"\d+\s*['’]", answer):  # "67'": a match report's minute
        return True
    words = _WORD.findall(answer)
    return len(words) <= 3 and bool(_NUMBER.search(answer) or _amount_words(answer))


def gives_no_amount_asked(answer: str, question: str) -> bool:
    """Whether ``answer`` leaves a question asking for an amount (:func:`asks_for_an_amount`)
    without one: no number, number word or quantifier the question lacks, and no currency
    sign."""
    if not asks_for_an_amount(question):
        return False
    plain = CITATION_RE.sub(" ", answer)
    if has_caseless_letters(plain):
        return False  # a caseless script: its number words are not ours to read
    if _ASKS_DURATION.search(question) and not _ASKS_AMOUNT.search(question):
        return not _TIME_WORDS.search(plain)
    if _ASKS_CLOCK.search(question):  # "one" is mostly a pronoun ("one of the trees")
        hour_words = _amount_words(plain) - _amount_words(question) - {"one"}
        return not (_CLOCK_WORDS.search(plain) or _NUMBER.search(plain) or hour_words)
    if unit := _ASKS_COUNTED_UNIT.search(question):
        return not _names_the_unit(plain, unit[1])
    if _CURRENCY.search(plain) or set(_NUMBER.findall(plain)) - set(_NUMBER.findall(question)):
        return False
    return not _amount_words(plain) - _amount_words(question)
