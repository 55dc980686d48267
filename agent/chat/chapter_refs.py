"""Chapter references in a message, without the database: "summarize chapter 7", "what
happens in chapter VII", "recap the third chapter", "summary of part two", "the last
chapter", a quoted title ("what happens in 'A Scandal in Bohemia'"), and an unquoted one
matched against the stored chapter titles it is given.

A message is a chapter request when it asks for a summary or what happens (``recap``,
``overview``, ``what happens in``, ``tell me about`` ...) and names exactly one chapter.
Stored titles ("CHAPTER VII. A Mad Tea-Party") are read the same way: their number and kind
(:func:`title_number`) and their name ("A Mad Tea-Party", :func:`title_name`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

LAST = -1
"""The number of "the last chapter"."""

_UNITS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70}
_TENS |= {"eighty": 80, "ninety": 90}
_ORDINAL_UNITS = [
    "zeroth",
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
]
_ORDINAL_TENS = {w[:-1] + "ieth": n for w, n in _TENS.items()}  # twentieth, thirtieth ...

_WORD_VALUES = {w: n for n, w in enumerate(_UNITS)} | dict(_TENS)
_WORD_VALUES |= {w: n for n, w in enumerate(_ORDINAL_UNITS)} | _ORDINAL_TENS
_SPECIAL = {"last": LAST, "final": LAST, "closing": LAST, "opening": 1}


def _alternation(words: Iterable[str]) -> str:
    return "|".join(sorted(words, key=len, reverse=True))


_TENS_RE = _alternation(_TENS)
_UNIT_WORD = _alternation(_UNITS[1:10] + _ORDINAL_UNITS[1:10])
_WORD_NUMBER = rf"(?:(?:{_TENS_RE})[- ](?:{_UNIT_WORD})|{_alternation(_WORD_VALUES)})"
_ROMAN = r"(?=[ivxlcdm]+\b)m{0,3}(?:cm|cd|d?c{0,3})(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})"
# a lone "I" is a numeral only at the end of the reference ("chapter I.", "part I of ..."),
# not in "the part I liked"
_LONE_I_ENDS = r"(?=\s*(?:$|[.,;:!?)\"'”’]|of\b|in\b|from\b))"
_NUMBER = rf"(?:\d{{1,3}}(?:st|nd|rd|th)?|{_WORD_NUMBER}|{_ROMAN})"
_KINDS = {"chapter": "chapter", "chap": "chapter", "ch": "chapter", "part": "part"}
_KINDS |= {"book": "book", "story": "story", "tale": "story", "volume": "book"}
_KIND = r"(?:chapter|chap\.?|ch\.|part|book|volume|story|tale)"

# "chapter 7", "chapter VII", "part two", "chapter no. 3"
_KIND_FIRST = re.compile(
    rf"\b(?P<kind>{_KIND})\s+(?:no\.?\s*|number\s+)?(?P<num>{_NUMBER})\b(?P<lone>{_LONE_I_ENDS})?",
    re.I,
)
# "the third chapter", "the 3rd part", "the last chapter"
_NUMBER_FIRST = re.compile(
    rf"\b(?P<num>{_WORD_NUMBER}|\d{{1,3}}(?:st|nd|rd|th)|last|final|closing|opening)\s+"
    rf"(?P<kind>chapter|part|book|volume|story|tale)\b",
    re.I,
)
_QUOTED = re.compile(
    r"“([^”]{2,100})”|\"([^\"]{2,100})\"|‘([^’]{2,100})’|(?<!\w)'([^']{2,100})'(?!\w)"
)
_INTENT = re.compile(
    r"\b(summar(?:y|ies|i[sz]e[sd]?|i[sz]ing)|recap|overview|synopsis|gist|outline|rundown|"
    r"sum up|tl;?dr|what (?:happens|happened|goes on|went on|occurs)|"
    r"what(?:'s| is| was)\b.{1,80}\babout|what(?:'s| is| was) in|tell me (?:about|what)|"
    r"describe|walk me through|"
    r"go over|key (?:points|events|moments)|main (?:points|events|ideas))\b",
    re.I,
)
_CHAPTER_WORD = re.compile(r"\b(chapter|story|tale|part|section|episode)\b", re.I)
# a stored title: optional kind, a number, then the name ("CHAPTER VII. A Mad Tea-Party")
_TITLE_NUMBER = re.compile(
    rf"^\s*(?:(?P<kind>{_KIND})\s+)?(?P<num>\d{{1,3}}|{_ROMAN}|{_WORD_NUMBER})\b"
    r"(?P<sep>\s*[.:\-–—)]*)\s*",
    re.I,
)
_WORDS = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class ChapterRef:
    """One chapter a message names: by ``number`` (1-based, :data:`LAST` for the last) and
    ``kind`` (chapter, part, book, story), or by ``title`` (``kind == "title"``)."""

    kind: str
    number: int | None = None
    title: str | None = None
    phrase: str = ""
    """The reference as the user wrote it (for a clarifying question)."""


def number_value(word: str) -> int | None:
    """``7``, ``"7th"``, ``"VII"``, ``"seven"``, ``"seventh"``, ``"twenty-one"`` -> the number
    (``None`` when it is none of these)."""
    word = word.strip().lower()
    if not word:
        return None
    digits = re.fullmatch(r"(\d+)(?:st|nd|rd|th)?", word)
    if digits:
        return int(digits.group(1))
    if word in _SPECIAL:
        return _SPECIAL[word]
    parts = re.split(r"[- ]+", word)
    if all(p in _WORD_VALUES for p in parts) and len(parts) <= 2:
        if len(parts) == 2 and not (parts[0] in _TENS and _WORD_VALUES[parts[1]] < 10):
            return None
        return sum(_WORD_VALUES[p] for p in parts)
    return _roman(word)


def _roman(word: str) -> int | None:
    if not re.fullmatch(_ROMAN, word):
        return None
    values = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}
    total = 0
    for i, ch in enumerate(word):
        value = values[ch]
        total += -value if i + 1 < len(word) and values[word[i + 1]] > value else value
    return total


def _normal(text: str) -> str:
    """Lower-case words joined by single spaces (apostrophes and dashes dropped)."""
    return " ".join(_WORDS.findall(text.lower().replace("’", "'").replace("'", "")))


def asks_for_summary(message: str) -> bool:
    """Does the message ask what something is about or what happens in it?"""
    return bool(_INTENT.search(message))


def _numbered_refs(message: str) -> list[ChapterRef]:
    refs = []
    for pattern in (_KIND_FIRST, _NUMBER_FIRST):
        for m in pattern.finditer(message):
            num = m.group("num")
            is_lone_i = num.lower() == "i"
            if is_lone_i and (num != "I" or m.groupdict().get("lone") is None):
                continue  # "i" is a pronoun, "the part I liked" no numeral
            value = number_value(num)
            kind = _KINDS[m.group("kind").lower().rstrip(".")]
            if value is not None and value != 0:
                refs.append(ChapterRef(kind, value, phrase=m.group(0).strip()))
    return refs


def _quoted(message: str) -> list[str]:
    return [next(g for g in m.groups() if g).strip() for m in _QUOTED.finditer(message)]


def chapter_reference(message: str) -> ChapterRef | None:
    """The one chapter ``message`` names by number or by a quoted title, if it asks for a
    summary (``None`` when it names none, or several)."""
    if not asks_for_summary(message):
        return None
    refs = {(r.kind, r.number): r for r in _numbered_refs(message)}
    quoted = _quoted(message)
    if len(refs) == 1 and not quoted:
        return next(iter(refs.values()))
    if len(quoted) == 1 and not refs:
        return ChapterRef("title", title=quoted[0], phrase=quoted[0])
    return None


def title_number(title: str | None) -> tuple[str | None, int] | None:
    """A stored title's kind and number: ``"CHAPTER VII. A Mad Tea-Party"`` ->
    ``("chapter", 7)``, ``"Part 3"`` -> ``("part", 3)``, ``"12. The End"`` -> ``(None, 12)``."""
    if not title:
        return None
    m = _TITLE_NUMBER.match(title)
    if not m:
        return None
    kind = m.group("kind")
    num = m.group("num")
    numeral = re.fullmatch(r"\d+|[IVXLCDM]+", num)
    if kind is None and not (numeral and (m.group("sep").strip() or m.end() == len(title))):
        return None  # "One Day in June", "I Was Born": a name, not a number
    value = number_value(num)
    if value is None:
        return None
    return (_KINDS[kind.lower().rstrip(".")] if kind else None), value


def title_name(title: str | None) -> str:
    """A stored title without its number: ``"CHAPTER VII. A Mad Tea-Party"`` ->
    ``"A Mad Tea-Party"`` (``""`` when it is only a number)."""
    if not title:
        return ""
    if title_number(title) is None:
        return title.strip()
    m = _TITLE_NUMBER.match(title)
    return title[m.end() :].strip() if m else title.strip()


def title_matches(wanted: str, title: str | None) -> int:
    """How well ``wanted`` (a quoted title) names the stored ``title``: 2 the same name,
    1 a part of it, 0 not at all."""
    want, name, whole = _normal(wanted), _normal(title_name(title)), _normal(title or "")
    if not want:
        return 0
    if want in (name, whole):
        return 2
    return 1 if len(want) >= 4 and (want in name or (name and name in want)) else 0


def titles_in_message(message: str, titles: Iterable[str | None]) -> list[str]:
    """The stored titles whose name appears in ``message`` (unquoted), longest first; a
    name must have at least two words or eight letters ("Pig and Pepper", "Bohemia ...")."""
    text = f" {_normal(message)} "
    found = []
    for title in titles:
        name = re.sub(r"^(?:a|an|the) ", "", _normal(title_name(title)))
        if (len(name.split()) >= 2 or len(name) >= 8) and f" {name} " in text:
            found.append((len(name), title))
    return [t for _, t in sorted(found, key=lambda f: -f[0]) if t]


def may_name_a_title(message: str) -> bool:
    """Whether routing needs the stored chapter titles to tell: the message asks for a
    summary but names no chapter by number."""
    return asks_for_summary(message) and not _numbered_refs(message)


def names_chapter(message: str, titles: Iterable[str | None] = ()) -> bool:
    """Is ``message`` a request about one chapter? By number ("summarize chapter 7"), by a
    quoted title that is a stored title or says "chapter"/"story", or by a stored title's
    name written out (``titles``: the chapter titles of the books in scope)."""
    ref = chapter_reference(message)
    titles = list(titles)
    if ref is not None and ref.kind != "title":
        return True
    if ref is not None:
        known = any(title_matches(ref.title or "", t) for t in titles)
        return known or bool(_CHAPTER_WORD.search(message))
    return asks_for_summary(message) and bool(titles_in_message(message, titles))
