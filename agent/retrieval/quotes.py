"""An answer made of citation ids alone, turned into the sentence those ids point at.

A small model sometimes answers with nothing but "#chk_4654e6e4": it found the passage
and said nothing. The passage it named usually holds the answer, so the reader is shown
that passage's sentence sharing the most words with the question, quoted and cited,
rather than being told nothing was found.

:func:`amount_sentence` does the same for an answer about another amount: "How much dividend
is paid to members?" answered "The new cold store at Ashby Lane cost £310,000, part-funded
by a £120,000 rural development grant #chk_…" while the passage above it says "…of which
£60,000 is paid to members as a dividend". When a question asks for an amount and every
sentence of a long answer that states a figure shares no word with the question, the
passages' sentence that states a figure and shares the most question words is quoted.

:func:`covering_sentence` answers for a model that said "not found" over a passage holding
the question's own words: "In how many human lymphomas did BMAL1 expression correlate
inversely with MYC levels?" got "Your documents do not contain enough information" over
"We show furthermore that BMAL1 expression levels correlate inversely with MYC levels in
102 human lymphomas." A sentence holding every content word of the question (by their
first :data:`COVER_PREFIX` letters: "expression", "expressed"), adding one of its own, and
the figure or the name the question asks for, is quoted. One question word it lacks ("in
how many mouse lymphomas") and it is not; the words of an allowance asked for ("How many
keeping-in-touch days are allowed?") need not be there ("…days, up to 10 in total, …").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping

from agent.ingest.sentences import split_sentences
from agent.retrieval.anchors import anchor_vocabulary, anchors
from agent.retrieval.asked_amounts import asks_for_a_figure, asks_for_an_amount
from agent.retrieval.asked_names import ASKS_FOR_SOMEONE, asks_for_a_name
from agent.retrieval.citations import CITATION_RE, cited_ids
from agent.retrieval.focus import GAP
from agent.retrieval.held_figures import figure_values
from agent.text import content_terms

_DIGITS = re.compile(r"\d+(?:[.,]\d+)*")
OFF_TOPIC_WORDS = 8
"""Content words an answer must have before its figures' sentences sharing no question word
mark it as about another amount ("EUR 160 #chk_…" shares none and answers)."""
_GAP = re.compile(rf"\s*{re.escape(GAP)}\s*")  # where a focused passage left sentences out
COVER_PREFIX = 5
"""Letters a sentence's word must share with a question word to hold it."""
COVER_MIN_WORDS = 3
"""Content words a question needs before a sentence holding them all answers it."""
# "how many": the question's form, no content; "How many days are allowed?": an allowance
# asked for, which a sentence gives as "up to 10 days" without the word
_ASKING_WORDS = frozenset({"many", "much", "allowed", "permitted"})


def is_bare_citation(answer: str) -> bool:
    """Whether ``answer`` holds citation ids and nothing else but punctuation."""
    return bool(cited_ids(answer)) and not re.search(r"\w", CITATION_RE.sub(" ", answer))


def pointed_sentence(
    answer: str, passages: Mapping[str, str], question: str
) -> tuple[str, str] | None:
    """The sentence, and its citation id, that a bare-citation ``answer`` points at.

    ``passages`` maps a ``#chk_…`` id to the text the model read under it. Of the cited
    passages' sentences, the one sharing the most question words wins (the earlier on a
    tie); it must share two (one, for a one-word question). ``None`` when ``answer`` is
    more than ids or no sentence qualifies."""
    if not is_bare_citation(answer):
        return None
    wanted = content_terms(question)
    best: tuple[int, str, str] | None = None
    for cid in cited_ids(answer):
        for sentence in _sentences(passages.get(cid, "")):
            score = len(wanted & content_terms(sentence))
            if best is None or score > best[0]:
                best = (score, sentence, cid)
    if best is None or best[0] < min(2, len(wanted)) or not wanted:
        return None
    return best[1], best[2]


def _sentences(text: str) -> list[str]:
    """``text``'s sentences; a line ("Author: …") or a focused passage's gap ends one."""
    pieces = [p for line in text.splitlines() for p in _GAP.split(line)]
    return [s for piece in pieces for s in split_sentences(" ".join(piece.split()))]


def amount_sentence(
    answer: str, passages: Mapping[str, str], question: str
) -> tuple[str, str] | None:
    """The passage sentence, and its citation id, to quote for an answer about another
    amount than the question's (see the module docs); ``None`` when the answer is not such
    or no sentence states a figure and shares a question word."""
    if not asks_for_an_amount(question):
        return None
    wanted = content_terms(question)
    asked = set(_DIGITS.findall(question))
    plain = CITATION_RE.sub(" ", answer)
    if len(content_terms(plain)) < OFF_TOPIC_WORDS:
        return None
    stating = [s for s in _sentences(plain) if set(_DIGITS.findall(s)) - asked]
    if not stating or any(wanted & content_terms(s) for s in stating):
        return None
    held = [(cid, s, content_terms(s)) for cid, text in passages.items() for s in _sentences(text)]
    # a question word few sentences hold says more ("turnover" over the report's "2025")
    df = Counter(t for _, _, terms in held for t in terms & wanted)
    best: tuple[float, str, str] | None = None
    for cid, sentence, terms in held:
        score = sum(1 / df[t] for t in terms & wanted)
        if score and set(_DIGITS.findall(sentence)) - asked and (best is None or score > best[0]):
            best = (score, sentence, cid)
    return (best[1], best[2]) if best else None


def _keys(text: str) -> set[str]:
    return {t[:COVER_PREFIX] for t in content_terms(text) if t not in _ASKING_WORDS}


def covering_sentence(question: str, passages: Mapping[str, str]) -> tuple[str, str] | None:
    """The first passage sentence, and its citation id, that holds every content word of
    ``question`` and what it asks for (see the module docs); ``None`` when none does.

    ``passages`` maps a ``#chk_…`` id to the text the model read under it, best first."""
    wanted = _keys(question)
    if len(wanted) < COVER_MIN_WORDS:
        return None
    figure = asks_for_a_figure(question)
    name = asks_for_a_name(question) or bool(ASKS_FOR_SOMEONE.search(question))
    for cid, text in passages.items():
        for sentence in _sentences(text):
            held = _keys(sentence)
            if not wanted <= held or held <= wanted:
                continue
            if figure and not figure_values(sentence) - figure_values(question):
                continue
            if name and not anchors(sentence) - anchor_vocabulary(question):
                continue
            return sentence, cid
    return None
