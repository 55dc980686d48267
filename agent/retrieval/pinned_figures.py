"""A question pinned to a year, a version or a code that none of its passages names.

"How many volunteers did the trust train in 2023?" over a report that gives only 2024's
figure, or "When was loamstack 2.8.0 released?" over a changelog without 2.8.0: the 1.5B
model answers with the other year's number or the other release's date, and cites it. The
passages touch on the question but do not answer it, so the caller replies that the
documents were searched and do not say it (a near-miss question, common when people ask
about one year's report or one release for another).

Only a year the question is *about* counts: "in 2023", "during early 2023", "in June
2024", "2023's budget", "the 2023 season", "FY2023". A year that bounds a comparison ("before 1900", "since
2019", "between 2019 and 2021") may be answered by a passage naming another year, and "for
2000 copies" is a count, so neither does. A version counts when it is written as one:
dotted thrice ("2.8.0"), after a "v" ("v2", "v2.1") or after "version"/"release"
("version 4"). A pin counts as named when it stands in a passage, or in the title of the
passage's document, as a number of its own ("2023" in "2023-24", "12/03/2023" or
"FY2023"; "v2" as "v2", "V2" or "version 2"), not inside a longer one, or inside a span of
years written short ("2004" in "the 2003–04 season": "in February 2004" over a passage
telling of "February of that season").

A code is a name made of capitals and digits: a model ("the Hearthline S2"), a site
("S4u"), a part or a serial ("MP2-0448", "TM-07"). "How many units did the Hearthline S2
sell?" over a deck about the S4 was answered with the S4's forecast. It counts as named
when a passage holds it as a word of its own, in any case, its hyphen optional ("S4" is
not named by "S4u"). Quarters and halves ("Q3", "H1") are often written out ("the third
quarter"), so they are no pins.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

_YEAR = re.compile(r"(?<![\d.,£$€])(1[5-9]\d\d|20\d\d)(?!\d|[.,]\d)")
# the words before a year the question is about ("in 2023", "the 2023 season", "FY2023")
_ABOUT = re.compile(
    r"(?:\b(?:in|during|for|of|the|at|on|within|throughout|year|its|their|his|her|this|that)"
    r"\s+(?:(?:early|late|mid)[\s-]+)?(?:(?:\d{1,2}(?:st|nd|rd|th)?\s+)?"
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?,?\s+)?|\bfy\s*)$",
    re.IGNORECASE,
)
# ... or after it ("2023's budget"); a count ("for 2000 copies") is no year
_OWNED = re.compile(r"^['’]s\b")
_COUNTED = re.compile(r"^\s+(?!(?:is|was|has|does|as|plus|minus)\b)[a-z]+s\b")
_DOTTED = re.compile(r"(?<![\w.])v?(\d+\.\d+\.\d+)(?![\w]|\.\d)", re.IGNORECASE)
# capitals, then digits, with an optional letter and a hyphenated number ("S4u", "MP2-0448")
_CODE = re.compile(r"(?<![\w.-])([A-Z]{1,5}-?\d+[a-zA-Z]?(?:-\d+)?)(?![\w-]|\.\d)")
_NO_CODE = re.compile(r"^(?:[QH]\d|FY\d+|V\d+)$", re.IGNORECASE)
_NUMBERED = re.compile(r"\b(?:v|version\s+|release\s+)(\d+(?:\.\d+)?)(?![\w]|\.\d)", re.I)


def pinned_years(question: str) -> set[str]:
    """The years ``question`` is about (see the module docs); bounds of a comparison and
    the years of a range are left out."""
    years = set()
    for m in _YEAR.finditer(question):
        before, after = question[max(0, m.start() - 24) : m.start()], question[m.end() :]
        if (_ABOUT.search(before) or _OWNED.match(after)) and not _COUNTED.match(after):
            years.add(m.group(1))
    return years


def pinned_versions(question: str) -> set[str]:
    """The versions ``question`` names ("2.8.0", "v2", "version 4"), as their numbers."""
    return {m.group(1) for m in (*_DOTTED.finditer(question), *_NUMBERED.finditer(question))}


def pinned_codes(question: str) -> set[str]:
    """The codes ``question`` names ("S2", "S4u", "MP2-0448"; see the module docs)."""
    return {c for c in _CODE.findall(question) if not _NO_CODE.match(c)}


def _code_named(code: str, text: str) -> bool:
    parts = re.findall(r"[A-Za-z]+|\d+", code)
    spelled = r"[-\s]?".join(re.escape(p) for p in parts)
    return re.search(rf"(?<![\w-]){spelled}(?![\w]|-\w)", text, re.IGNORECASE) is not None


# a span of years with its end cut to two digits ("the 2003–04 season", "1914-18"); a date
# ("2003-04-15") is none
_SPAN = re.compile(r"(?<![\d.,])(1[5-9]|20)(\d\d)\s*[-–—/]\s*(\d\d)(?![\d]|[-/.]\d)")


def _year_named(year: str, text: str) -> bool:
    """Whether ``text`` names ``year`` as a number of its own, or inside a span of years
    written short ("2003–04" names 2003 and 2004)."""
    if re.search(rf"(?<!\d){year}(?!\d)", text):
        return True
    wanted = int(year)
    for m in _SPAN.finditer(text):
        start, end = int(m.group(1) + m.group(2)), int(m.group(1) + m.group(3))
        if start < end and start <= wanted <= end:
            return True
    return False


def _version_named(version: str, text: str) -> bool:
    number = re.escape(version)
    if version.count(".") >= 2:
        return re.search(rf"(?<![\d.]){number}(?![\d]|\.\d)", text) is not None
    return re.search(rf"\b(?:v|version\s+|release\s+){number}(?![\d]|\.\d)", text, re.I) is not None


def unheld_pins(question: str, passages: Iterable[str]) -> list[str]:
    """The years, versions and codes ``question`` is about (:func:`pinned_years`,
    :func:`pinned_versions`, :func:`pinned_codes`) that no passage names, sorted."""
    pins = [(y, _year_named) for y in pinned_years(question)]
    pins += [(v, _version_named) for v in pinned_versions(question)]
    pins += [(c, _code_named) for c in pinned_codes(question)]
    if not pins:
        return []
    texts = list(passages)
    return sorted(pin for pin, named in pins if not any(named(pin, text) for text in texts))


def pin_unheld(question: str, passages: Iterable[str]) -> bool:
    """Whether ``question`` is about a year, a version or a code that no passage names."""
    return bool(unheld_pins(question, passages))


def passage_texts(payloads: Iterable[Mapping]) -> list[str]:
    """Each passage payload (:func:`agent.retrieval.types.chunk_payload`) as the text a pin
    may stand in: its label (a report's year is often only in its document's title), the
    text the model read and the chunk's whole text."""
    return [
        " ".join(filter(None, (p.get("source"), p.get("context_text"), p.get("text"))))
        for p in payloads
    ]


def shown_texts(payloads: Iterable[Mapping]) -> list[str]:
    """Each passage payload as the model was shown it: its label and the text it read (the
    chunk's whole text when it read all of it). A name or figure it wrote that is in none
    came from elsewhere, even when the rest of a chunk happens to hold it."""
    return [
        " ".join(filter(None, (p.get("source"), p.get("context_text") or p.get("text"))))
        for p in payloads
    ]
