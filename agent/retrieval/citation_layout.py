"""Where an answer's citation ids sit: at the end of the sentence they support.

Small models lay citations out in ways a reader cannot follow: ids on a line of their own
after the answer ("…so clever?\\n\\n#chk_…"), under a label ("CITATION: #chk_…"), opening a
line or the answer ("#chk_…: The Rabbit …"), or the same id twice in a row. The guard
(:func:`agent.retrieval.citations.guard_citations`) first puts them where the reader and its
own per-sentence checks look: before the full stop of the sentence they belong to. The
layout rules take ids already normalised (``#chk_`` and eight lower-case hex digits).
"""

from __future__ import annotations

import re

from agent.retrieval.anchors import answer_sentences

CITATION_RE = re.compile(r"\[?#?\bchk_([0-9a-fA-F]{8})\b\]?")
"""A citation id in any spelling a small model writes (``[chk_1A2B3C4D]``, ``#chk_…``)."""
_ID = r"#chk_[0-9a-f]{8}"
_IDS = rf"{_ID}(?:[ \t,;]*{_ID})*"
_REPEATED = re.compile(rf"({_ID})(?:(?:[ \t,;]+|[ \t]+and[ \t]+)\1\b)+")
_MARK = r"(?:[-*•]|\d+[.)])"  # a list item's bullet or number
_LABEL = r"(?:citations?|sources?|references?|cited|evidence|passages?)"
# a line holding ids only, maybe as a list item or under a label: "CITATION: #chk_…"
_ID_LINE = re.compile(
    rf"^[ \t]*(?:{_MARK}[ \t]*)?(?:\**{_LABEL}\**[ \t]*:?\**[ \t]*)?[\[(]?({_IDS})[\])]?[ \t.]*$",
    re.I,
)
# a line opening with ids before its text: "- **#chk_…**: The Rabbit …"
# (a colon or dash must follow: "#chk_… mentions that …" has the id as its subject)
_OPENING_IDS = re.compile(rf"^([ \t]*(?:{_MARK}[ \t]+)?)\**({_IDS})\**[ \t]*[:\-–—][ \t]*(?=\S)")
_LEADING_IDS = re.compile(rf"^\s*((?:{_ID}[\s,;:]*)+)")


def cited_ids(answer: str) -> list[str]:
    """Normalised citation ids in order of first appearance."""
    seen: dict[str, None] = {}
    for m in CITATION_RE.finditer(answer):
        seen.setdefault("#chk_" + m.group(1).lower(), None)
    return list(seen)


def with_citation(sentence: str, cid: str) -> str:
    """``sentence`` with ``cid`` at its end, before its full stop (after a closing quote)."""
    stripped = sentence.rstrip()
    trail = sentence[len(stripped) :]
    end = len(stripped)
    while end and stripped[end - 1] in ".!?\"'”’)":
        end -= 1
    if any(q in stripped[end:] for q in "\"”’'"):  # after a closing quote, not inside it
        return f"{stripped} {cid}{trail}"
    return f"{stripped[:end]} {cid}{stripped[end:]}{trail}"


def _cite_last_sentence(line: str, ids: list[str]) -> str:
    """``line`` with the ``ids`` it does not cite yet at the end of its last sentence."""
    new = [i for i in ids if i not in line]
    if not new:
        return line
    *before, last = answer_sentences(line)
    return "".join(before) + with_citation(last, " ".join(new))


def _cite_first_sentence(text: str, ids: list[str]) -> str:
    """``text`` with the ``ids`` its first sentence does not cite at that sentence's end."""
    first, *others = answer_sentences(text)
    new = [i for i in ids if i not in first]
    if new:
        first = with_citation(first, " ".join(new))
    return first + "".join(others)


def _leading_ids_to_first_sentence(answer: str) -> str:
    """An answer opening with bare ids (a small model echoing the passages' layout) has them
    at the end of its first sentence instead."""
    m = _LEADING_IDS.match(answer)
    rest = answer[m.end() :] if m else ""
    if not m or not rest.strip():
        return answer
    return _cite_first_sentence(rest, cited_ids(m.group(1)))


def once_in_a_row(text: str) -> str:
    """``text`` with an id written twice in a row ("#chk_a #chk_a", "#chk_a and #chk_a")
    written once."""
    return _REPEATED.sub(r"\1", text)


def citations_in_place(answer: str) -> str:
    """``answer`` with each citation id at the end of the sentence it belongs to.

    * the same id twice in a row is written once;
    * a line of ids only (bare, bulleted, or labelled "Citation:", "Sources:" …) goes to the
      last sentence of the text above it;
    * ids opening a line ("#chk_…: text", "- **#chk_…** - text") go to the end of that
      line's first sentence; ids opening the answer, to its first sentence.
    """
    lines = once_in_a_row(answer).splitlines(keepends=True)
    out: list[str] = []
    for line in lines:
        only_ids = _ID_LINE.match(line.rstrip("\n"))
        above = next((i for i in range(len(out) - 1, -1, -1) if out[i].strip()), None)
        if only_ids and above is not None:
            end = out[above][len(out[above].rstrip()) :]
            out[above] = (
                _cite_last_sentence(out[above].rstrip(), cited_ids(only_ids.group(1))) + end
            )
            continue
        opening = _OPENING_IDS.match(line)
        if opening and not only_ids:
            body = line[opening.end() :]
            line = opening.group(1) + _cite_first_sentence(body, cited_ids(opening.group(2)))
        out.append(line)
    text = re.sub(r"\n{3,}", "\n\n", "".join(out)).rstrip()
    return _leading_ids_to_first_sentence(text)
