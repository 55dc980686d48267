"""Sentence splitting that respects abbreviations (Dr., Inc., e.g., i.e.) and initials."""

from __future__ import annotations

import re

ABBREVIATIONS = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "sr",
        "jr",
        "st",
        "vs",
        "etc",
        "inc",
        "ltd",
        "co",
        "corp",
        "no",
        "nos",
        "fig",
        "figs",
        "vol",
        "vols",
        "ch",
        "chap",
        "pp",
        "p",
        "e.g",
        "i.e",
        "cf",
        "al",
        "approx",
        "dept",
        "est",
        "gen",
        "gov",
        "col",
        "capt",
        "lt",
        "sgt",
        "rev",
        "hon",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "mt",
        "ft",
        "op",
        "ed",
        "eds",
        "eq",
        "ref",
        "refs",
        "sec",
        "viz",
        "u.s",
        "u.k",
        "a.m",
        "p.m",
        "ph.d",
    ]
)
# end punctuation, optional closing quotes/brackets, then whitespace
_BOUNDARY = re.compile(r"[.!?…]+[\"'”’)\]]*\s+")
_LAST_TOKEN = re.compile(r"(\S+)$")


def is_abbreviation(before: str) -> bool:
    """Whether the full stop ending ``before`` closes an abbreviation ("Mr.", "e.g.") or an
    initial ("J.", "U.S."), not a sentence."""
    match = _LAST_TOKEN.search(before)
    if not match:
        return False
    token = match.group(1).lstrip("(\"'“‘[").rstrip(".").lower()
    if token in ABBREVIATIONS:
        return True
    # single initials ("J. R. Tolkien") and dotted acronyms ("U.S.")
    return bool(re.fullmatch(r"[a-z]|([a-z]\.)+[a-z]", token))


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences; never splits inside one.

    A boundary is end punctuation followed by whitespace, unless the word before it is a
    known abbreviation or an initial, or the next word starts in lower case.
    """
    text = " ".join(text.split())
    sentences: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        end = match.end()
        following = text[end : end + 1]
        if following and following.islower():
            continue
        if text[match.start()] == "." and is_abbreviation(text[start : match.start() + 1]):
            continue
        sentence = text[start:end].strip()
        if sentence:
            sentences.append(sentence)
        start = end
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences
