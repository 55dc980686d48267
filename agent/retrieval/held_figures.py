"""An amount asked for, answered with a figure no passage holds.

"How old was Odile when she retired?" answered "Odile was 89 years old when she retired
#chk_…": the story never gives her age, and the 1.5B model made one up and cited the
passage it was reading. "What price per tonne did Hartwell Ciders pay?" answered "£171 per
tonne": 171 is in the passage, but as a harvest's tonnes, never as money. A reader who
trusts the citation is misled; the reply should say the documents do not give it.

:func:`figures_unheld` tells such answers apart, for questions that plainly ask for an
amount, a time or a measure (:func:`~agent.retrieval.asked_amounts.asks_for_a_figure`:
"When did the lamp go electric?" answered "In 1952" over passages that say 1931). A figure
is held when a passage states its value: in digits ("1,931" is 1931), in words ("nineteen",
"two hundred", "the eighth"), as the sum or difference of two figures of one passage (the
model's own sum: "grew by 4" from "37 to 41"), or as the second year of a span ("2001-02"
holds 2002). A figure written as money ("£171", "EUR 160", "60
pounds") is held only where a passage gives it as money: a currency sign or word beside it,
or in its table column's heading. The check takes an answer only when none of its new
figures is held, so a right answer that adds an invented detail is left to the citation
guard.

A question for money or a measure answered only with figures that count something else
("278 goals in 84 games #chk_…" for a salary: :mod:`agent.retrieval.counted_figures`) gives
no amount asked either, held or not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from agent.retrieval.asked_amounts import asks_for_a_figure
from agent.retrieval.citations import CITATION_RE
from agent.retrieval.counted_figures import counts_another_thing, counts_something_else


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text)


_UNITS = {
    w: i
    for i, w in enumerate(
        _words(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen "
            "fourteen fifteen sixteen seventeen eighteen nineteen",
        )
    )
}
_TENS = {
    w: 10 * i
    for i, w in enumerate(_words("_ _ twenty thirty forty fifty sixty seventy eighty ninety"))
    if w != "_"
}
_ORDINALS = {
    w: i
    for i, w in enumerate(
        _words(
            "_ first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth "
            "thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth "
            "twentieth"
        )
    )
    if w != "_"
}
_SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_DIGITS = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
_CURRENCY = r"[£$€¥]|\b(?:EUR|GBP|USD|CHF|JPY|euros?|pounds?|dollars?|pence|cents?)\b"
_MONEY_BEFORE = re.compile(rf"(?:{_CURRENCY})\s*$", re.IGNORECASE)
_MONEY_AFTER = re.compile(rf"^\s*(?:million|billion|thousand|[mkb]n?\b)?\s*(?:{_CURRENCY})", re.I)
_MONEY_NEAR = re.compile(_CURRENCY + r"|\b(?:price|cost|fee|paid|pay)\b", re.IGNORECASE)
_CELL = re.compile(r"\s*\|\s*")
_YEAR_SPAN = re.compile(r"\b(1[5-9]\d\d|20\d\d)\s*[-–/]\s*(\d\d)\b")  # "2001-02", "1998/99"


def _word_values(text: str) -> set[float]:
    """The values of the numbers ``text`` writes in words ("two hundred", "forty-two", "the
    eighth", "eleven thousand")."""
    values: set[float] = set()
    total, current, open_ = 0, 0, False
    for word in re.findall(r"[a-z]+|[^\sa-z-]", text.lower()):
        if open_ and word in _UNITS and current % 100 and (current % 10 or current % 100 < 20):
            values.add(float(total + current))  # "one, two": a second number
            total, current = 0, 0
        if word in _UNITS or word in _TENS:
            current += _UNITS.get(word, 0) + _TENS.get(word, 0)
            open_ = True
        elif word in _ORDINALS:
            values.add(float(total + current + _ORDINALS[word]))
            total, current, open_ = 0, 0, False
        elif word in _SCALES and open_:
            if _SCALES[word] == 100:
                current *= 100
            else:
                total, current = total + current * _SCALES[word], 0
        elif word != "and" or not open_:
            if open_:
                values.add(float(total + current))
            total, current, open_ = 0, 0, False
    if open_:
        values.add(float(total + current))
    return values


def _value(figure: str) -> float:
    return float(figure.replace(",", ""))


def _digit_values(text: str) -> list[float]:
    return [_value(m) for m in _DIGITS.findall(text)]


def figure_values(text: str) -> set[float]:
    """Every value ``text`` states, in digits or in words."""
    return set(_digit_values(text)) | _word_values(text)


def _span_end(first: str, end: str) -> float:
    """The second year of a span written "2001-02" (2002) or "1999/00" (2000)."""
    century = int(first[:2]) + (int(end) < int(first[2:]))
    return float(century * 100 + int(end))


def _held_values(passage: str) -> set[float]:
    """What one passage states, with the sums and differences of its figures in digits."""
    digits = sorted(set(_digit_values(passage)))[:60]  # a long table: its pairs stay few
    values = figure_values(passage)
    values |= {round(a + b, 6) for a in digits for b in digits}
    values |= {round(abs(a - b), 6) for a in digits for b in digits}
    values |= {_span_end(first, end) for first, end in _YEAR_SPAN.findall(passage)}
    return values


def _money_figures(answer: str) -> set[float]:
    """The figures ``answer`` writes as money."""
    found: set[float] = set()
    for m in _DIGITS.finditer(answer):
        if _MONEY_BEFORE.search(answer[: m.start()]) or _MONEY_AFTER.match(answer[m.end() :]):
            found.add(_value(m.group(0)))
    return found


def _column_heading(passage: str, line_start: int, cell: int) -> str:
    """The heading of column ``cell`` of the pipe table whose row starts at ``line_start``."""
    rows = [r for r in re.split(r"(?<=\.)\s+|\n", passage[:line_start]) if "|" in r]
    if not rows:
        return ""
    heading = _CELL.split(rows[0].strip(" ."))
    return heading[cell] if cell < len(heading) else ""


def _as_money_in(value: float, passage: str) -> bool:
    """Whether ``passage`` gives ``value`` as money: a currency sign or word beside it, or
    in its table column's heading."""
    for m in _DIGITS.finditer(passage):
        if _value(m.group(0)) != value:
            continue
        before, after = passage[max(0, m.start() - 40) : m.start()], passage[m.end() : m.end() + 15]
        if _MONEY_BEFORE.search(before[-8:]) or _MONEY_AFTER.match(after):
            return True
        row_start = max(
            passage.rfind(". ", 0, m.start()) + 2, passage.rfind("\n", 0, m.start()) + 1
        )
        row = passage[row_start : m.start()]
        if "|" in row:
            heading = _column_heading(passage, row_start, row.count("|"))
            if _MONEY_NEAR.search(heading):
                return True
        elif _MONEY_NEAR.search(before.split(";")[-1]):  # "Price (EUR): 160"
            return True
    return False


def figures_unheld(answer: str, question: str, passages: Iterable[str]) -> bool:
    """Whether ``answer`` gives an amount ``question`` asks for only in figures that no
    passage holds, or a sum of money or a count asked for only in figures of something else
    (see the module docs)."""
    if not asks_for_a_figure(question):
        return False
    plain = CITATION_RE.sub(" ", answer)
    new = figure_values(plain) - figure_values(question)
    if not new:
        return False  # no figure to check: gives_no_amount_asked's case
    if counts_something_else(plain, question):
        return True  # "278 goals" for a salary: no figure of what was asked
    texts = list(passages)
    if counts_another_thing(plain, question, texts):
        return True  # "fourteen CF patients" for the volunteers a passage names
    money = _money_figures(plain)
    if any(_as_money_in(value, t) for value in new & money for t in texts):
        return False
    held = set().union(*(_held_values(t) for t in texts)) if new - money else set()
    return not (new - money) & held
