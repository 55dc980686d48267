"""Question-focused passages: each retrieved passage cut to the sentences that match the
question, with their neighbours, before a model reads it.

A small CPU model pays for every prompt token before its first answer token (~10-20 ms
each on 2 cores), and is misled by the sentences around the answer. Most of a passage is
neither the answer nor what frames it. :func:`focus_passages` keeps, per passage, the
sentences that share the most question words and figures (weighted by how rare each word is
across the passages, so a word every passage has, the book's hero say, counts for little),
plus ``neighbours`` sentences either side, in the passage's order; a gap is shown as ``…``.
The passage keeps its citation id: every kept sentence is still under it. With
:func:`focus_by_holder`, a kept sentence goes under the sibling chunk that holds it instead,
so a citation opens the paragraph that says it.

No model call: it costs well under a millisecond per passage.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence

from agent.ingest.sentences import split_sentences
from agent.retrieval.attribute_words import with_attribute_words
from agent.retrieval.named_reach import with_a_naming_sentence
from agent.text import content_terms

GAP = "…"

# a number as written: "1.3.1", "3,960", "6:30", "12"; the content words leave out every
# token under three characters, and split a version or a decimal into such tokens
_FIGURE = re.compile(r"\d+(?:[.,:]\d+)*")


def _terms(text: str) -> set[str]:
    """The content words of ``text`` and its figures whole ("1.3.1" is not "1.3.0"), which
    tell apart sentences that share every other word (a release's version, a season's year)."""
    return content_terms(text) | {f.replace(",", "") for f in _FIGURE.findall(text)}


def _weights(question: str, sentences: list[list[str]]) -> dict[str, float]:
    """Each question word (or figure) held anywhere: 1, plus its inverse sentence frequency
    across every passage. The 1 makes a sentence holding more of the question's words win
    over one holding fewer, rarer ones: the table row "Region: DACH; Units Y1 (base):
    41,200" (its column names in every row) over a note under the table that says "in its
    first year" for "the DACH region in the first year, base case". A measure the question
    asks about counts as one of its words ("height" for "how tall": a table row's column)."""
    wanted = _terms(with_attribute_words(question))
    every = [_terms(s) for passage in sentences for s in passage]
    df = Counter(t for terms in every for t in terms & wanted)
    n = max(len(every), 1)
    return {t: 1.0 + math.log(1 + n / df[t]) for t in wanted if df[t]}


REPEAT_WEIGHT = 0.5
"""What a question word already held by a picked sentence weighs in the next pick."""


def _score(
    held: set[str], weights: Mapping[str, float], covered: frozenset[str] | set[str] = frozenset()
) -> float:
    """The weights of the question words a sentence holds (those in ``covered`` count
    ``REPEAT_WEIGHT`` of theirs)."""
    return sum(weights.get(t, 0.0) * (REPEAT_WEIGHT if t in covered else 1.0) for t in held)


def _best(terms: list[set[str]], weights: Mapping[str, float], hits: int) -> list[int]:
    """Indexes of up to ``hits`` sentences that together match the question best.

    A sentence scores the weights of the question words it holds, and must score at least
    half the best. They are picked one by one; in the next pick a word the sentences
    already picked hold counts ``REPEAT_WEIGHT`` of its weight, so a sentence bringing the
    question's other words ("no respect" after "the crazy ones") wins over one repeating
    the same ones (ties: the earlier)."""
    scores = [_score(held, weights) for held in terms]
    best = max(scores, default=0.0)
    if best <= 0:
        return []
    left = [i for i, score in enumerate(scores) if score >= best / 2]
    chosen: list[int] = []
    covered: set[str] = set()
    while left and len(chosen) < hits:
        pick = max(left, key=lambda i: (_score(terms[i], weights, covered), -i))
        chosen.append(pick)
        covered |= terms[pick]
        left.remove(pick)
    return chosen


def _kept(
    chosen: list[int],
    neighbours: int,
    lengths: list[int],
    limit: int | None = None,
) -> list[int]:
    """Indexes of the ``chosen`` sentences with ``neighbours`` either side, in order. With a
    ``limit``, the neighbours farthest from a chosen sentence are left out first while the
    kept ones (``lengths``: of each sentence) run over ``limit`` characters."""
    distance: dict[int, int] = {}
    for i in chosen:
        for j in range(max(i - neighbours, 0), min(i + neighbours + 1, len(lengths))):
            distance[j] = min(distance.get(j, neighbours + 1), abs(j - i))
    # a lone sentence between two nearer ones is what joins them (the reply two lines
    # after a question, when a line of narration comes between): it goes no sooner than they
    for j in list(distance):
        if distance[j] > 1 and max(distance.get(j - 1, 2), distance.get(j + 1, 2)) <= 1:
            distance[j] = 1
    if limit is not None:  # nearest first; after a best sentence before the one before it
        order = sorted(distance, key=lambda j: (distance[j], -j))
        total = 0
        for j in order:
            total += lengths[j] + 1
            if total > limit and distance[j] > 0:
                distance.pop(j)
    return sorted(distance)


_ASKS = re.compile(r"\?[\"'”’)\]]*$")


def _with_replies(
    keep: list[int], sentences: list[str], lengths: list[int], limit: int | None
) -> list[int]:
    """``keep`` with the reply to each kept question: in a dialogue or a transcript it is
    the sentence after it, or after the question that follows ("All those in favour?" "And
    those against?" "Seven in favour, two against."), while the run is within ``limit``
    characters."""
    kept = set(keep)
    total = sum(lengths[i] + 1 for i in kept)
    for i in sorted(keep):
        reply = i + 1
        while reply < len(sentences) and reply - i <= 2 and _ASKS.search(sentences[reply - 1]):
            if reply not in kept:
                if limit is not None and total + lengths[reply] + 1 > limit:
                    break
                kept.add(reply)
                total += lengths[reply] + 1
            reply += 1
    return sorted(kept)


def _joined(sentences: list[str], keep: list[int], shown: frozenset[int] | None = None) -> str:
    """The kept sentences, ``…`` where sentences are left out (those in ``shown``, kept
    under another passage, are not left out)."""
    shown = frozenset(keep) if shown is None else shown
    parts: list[str] = []
    for n, i in enumerate(keep):
        if (n == 0 or i != keep[n - 1] + 1) and i > 0 and i - 1 not in shown:
            parts.append(GAP)
        parts.append(sentences[i])
    if keep and keep[-1] < len(sentences) - 1 and keep[-1] + 1 not in shown:
        parts.append(GAP)
    return " ".join(parts)


ORNAMENT = re.compile(r"(?<!\S)(?:[*=~#_-]\s*){3,}(?!\S)")
"""A scene break or rule (``* * *``, ``-----``): tokens for the model, no words."""

# an old book's name left out, "They were in ---- Street", "Mr. ----": a few dashes after a
# word that ends no sentence, or after a title; dropped, the model read "in Street"
_ELISION = re.compile(r"-{2,6}")
_BEFORE_ELISION = re.compile(r"(?:[^\W\d_]|\b(?:Mr|Mrs|Messrs|Miss|Dr|Sir|Lady|Lord|St)\.)\s*$")


def _without_ornaments(text: str) -> str:
    """``text`` with its :data:`ORNAMENT` runs blanked, but not a name's elision dashes."""

    def blank(match: re.Match[str]) -> str:
        run = match.group(0)
        elided = _ELISION.fullmatch(run.strip()) and _BEFORE_ELISION.search(
            text[max(0, match.start() - 8) : match.start()]
        )
        return run if elided else " "

    return ORNAMENT.sub(blank, text)


def _sentences(text: str) -> list[str]:
    """A passage's sentences, without ornaments."""
    return split_sentences(" ".join(_without_ornaments(text).split()))


def _span(window: list[str], whole: list[str]) -> tuple[int, int] | None:
    """Indexes of the first and last sentences of ``whole`` that ``window`` (a piece of the
    same text, maybe cut mid-sentence at either end) shows; ``None`` when it is not found."""
    found = []
    start = 0
    for sentence in window:
        core = sentence.strip(GAP + " ")
        at = next((i for i in range(start, len(whole)) if core and core in whole[i]), None)
        if at is not None:
            found.append(at)
            start = at
    return (found[0], found[-1]) if found else None


def _focus(
    question: str,
    passages: Mapping[str, str],
    hits: int,
    neighbours: int,
    wholes: Mapping[str, str] | None = None,
    most: int | None = None,
) -> dict[str, tuple[list[str], list[int]]]:
    """Each passage's sentences and the indexes of those kept (all of a short passage).

    ``wholes[cid]``: the text the passage was cut from (its parent). The best sentences are
    still picked within the passage, but their neighbours come from the whole text, so a
    best sentence at the passage's edge keeps the sentences after it (the name the next
    line gives, "What is his name?" "Bingley."). ``most``: characters a focused passage may
    keep; the neighbours farthest from a best sentence go first (long sentences keep fewer
    neighbours)."""
    split = {cid: _sentences(text) for cid, text in passages.items()}
    weights = _weights(question, list(split.values()))
    focused: dict[str, tuple[list[str], list[int]]] = {}
    for cid, shown in split.items():
        sentences, lo, hi = shown, 0, len(shown) - 1
        whole = _sentences(wholes[cid]) if wholes and wholes.get(cid) else []
        span = _span(shown, whole) if len(whole) > len(shown) else None
        if span is not None:
            sentences, (lo, hi) = whole, span
        short = hi - lo + 1 <= hits + 2 * neighbours
        if short and span is None:
            focused[cid] = (sentences, list(range(len(sentences))))
            continue
        terms = [_terms(s) if lo <= i <= hi else set() for i, s in enumerate(sentences)]
        fallback = list(range(lo, hi + 1 if short else lo + hits))
        # as long as the passage at most: its neighbours may cross its edges, not grow it
        limit = len(passages[cid]) if span is not None else None
        if most:
            limit = min(limit or most, most)
        lengths = [len(x) for x in sentences]
        kept = _with_replies(
            _kept(_best(terms, weights, hits), neighbours, lengths, limit),
            sentences,
            lengths,
            limit,
        )
        kept = with_a_naming_sentence(question, sentences, kept, lengths, limit)
        focused[cid] = (sentences, kept or fallback)
    return focused


def focus_passages(
    question: str,
    passages: Mapping[str, str],
    *,
    hits: int = 2,
    neighbours: int = 1,
    wholes: Mapping[str, str] | None = None,
    most: int | None = None,
) -> dict[str, str]:
    """Each passage (by citation id) cut to the sentences that answer ``question`` best and
    their ``neighbours`` (see the module docs). A passage none of whose sentences shares a
    question word keeps its first ``hits`` sentences; a short one is kept whole. ``most``:
    characters a focused passage may keep (its farthest neighbours go first)."""
    focused = _focus(question, passages, hits, neighbours, wholes, most)
    return {
        cid: _joined(sentences, keep) or passages[cid] for cid, (sentences, keep) in focused.items()
    }


def _held(sentence: str, text: str) -> int:
    """How many characters of ``sentence`` ``text`` holds: all of it, else the start it
    ends with or the end it opens with (a sentence running across two chunks)."""
    if sentence in text:
        return len(sentence)
    edge = min(24, len(sentence))
    held = 0
    at = text.rfind(sentence[:edge])
    if at >= 0 and sentence.startswith(text[at:]):
        held = len(text) - at
    at = text.find(sentence[-edge:])
    if at >= 0 and sentence.endswith(text[: at + edge]):
        held = max(held, at + edge)
    return held


def _holder(sentence: str, pieces: Sequence[tuple[str, str]]) -> str:
    """The citation id of the piece holding ``sentence``, or most of it when it runs across
    two pieces (the first of equals; the first piece's when none holds any: a sentence cut
    at the window's edge)."""
    core = sentence.strip(GAP + " ")
    if not core:
        return pieces[0][0]
    held = [_held(core, text) for _, text in pieces]
    best = max(range(len(pieces)), key=lambda i: (held[i], -i))
    return pieces[best][0] if held[best] else pieces[0][0]


def focus_by_holder(
    question: str,
    passages: Mapping[str, str],
    pieces: Mapping[str, Sequence[tuple[str, str]]],
    *,
    hits: int = 2,
    neighbours: int = 1,
    wholes: Mapping[str, str] | None = None,
    most: int | None = None,
) -> dict[str, list[tuple[str, str]]]:
    """:func:`focus_passages`, with each kept sentence under the chunk that holds it.

    A passage is a window of a parent around the retrieved child, so its best sentences
    may lie in a sibling child: cited under the retrieved child's id, they would open a
    paragraph that does not say them. ``pieces[cid]`` are ``(citation id, text)`` of the
    chunks the passage ``cid`` was cut from, its own chunk first. Returns, per passage,
    ``(citation id, focused text)`` for each chunk holding kept sentences, in order of
    their first kept sentence.
    """
    focused = _focus(question, passages, hits, neighbours, wholes, most)
    runs: dict[str, list[tuple[str, str]]] = {}
    for cid, (sentences, keep) in focused.items():
        if not sentences:
            runs[cid] = [(cid, passages[cid])]
            continue
        own = [(pid, " ".join(text.split())) for pid, text in pieces.get(cid) or [(cid, "")]]
        holders = {i: _holder(sentences[i], own) for i in keep}
        order = list(dict.fromkeys(holders[i] for i in keep))
        shown = frozenset(keep)
        runs[cid] = [
            (pid, _joined(sentences, [i for i in keep if holders[i] == pid], shown))
            for pid in order
        ]
    return runs


def lone_word_passages(
    question: str, texts: Mapping[str, str], keep: Collection[str] = ()
) -> list[str]:
    """The passages (ids of ``texts``, in rank order) a question with one content word
    needs: those up to the first whose text holds that word, and the ids in ``keep`` (the
    sides of a conflict). "Who is Dinah?" or "What is Pemberley?" ranks every passage by
    that one word, so a later passage can only repeat it; for the CPU model it is ~100-200
    prompt tokens more and a second guess to mix in. A question of more words keeps all."""
    wanted = _terms(with_attribute_words(question))
    ids = list(texts)
    if len(wanted) != 1:
        return ids
    first = next((n for n, cid in enumerate(ids) if wanted <= _terms(texts[cid])), None)
    if first is None:  # no passage holds it: each is a guess of the embedder's
        return ids
    return ids[: first + 1] + [cid for cid in ids[first + 1 :] if cid in keep]
