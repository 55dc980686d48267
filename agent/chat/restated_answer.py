"""A restated answer finished by the model (Path A, a model that can write on from given
words: the local one).

The 1.5B model often answers by restating the question over a passage that holds the
answer: "Alice gave the animals as prizes after the Caucus-race #chk_…" over "…pulled out
a box of comfits… and handed them round as prizes". The guards turn such an answer into the
plain "not found" reply (:func:`agent.chat.answering.finish_grounded`); asked again, the
model restates again. Made to write on from its own sentence followed by ", namely", it
names what it left out ("…, namely the comfits #chk_…"). The continued answer goes through
the same guards, so a name or figure no passage holds is still refused; when it again says
nothing asked for, the "not found" reply stays. The prompt is the one the answer just read,
so llama.cpp's cache holds it: the second call reads the sentence and writes a few words.

Only a restated question is finished (:func:`says_nothing_new`), and only when the question
does not plainly ask for a name (:func:`asks_for_a_name`): "What is Mr. Bennet's first
name?" (the novel never gives it) answered "…is Mr", written on, became "…is Mr, namely Mr.
Darcy", and "What is the name of Mr. Darcy's horse?" "…is black horse, namely Bromley": a
model with no name to give takes any name in sight. Nor is a refusal ("Your documents do not
say…"), an echo of the worked examples, or an answer the guards refused for what it named
(a year, a figure or a name no passage holds). Nor is a question asking for a figure (an
amount, a date, a measure): written on, the model guessed one ("…against Manchester United
in 1986, namely at minute 44", a minute the article never gives), where the numbers a
passage holds elsewhere let the guess through.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agent import prompts
from agent.chat.answering import Answer
from agent.config import Settings
from agent.retrieval.anchors import answer_sentences
from agent.retrieval.asked_amounts import asks_for_a_figure
from agent.retrieval.asked_names import ASKS_FOR_SOMEONE, asks_for_a_name, names_someone_new
from agent.retrieval.citation_layout import CITATION_RE
from agent.retrieval.citations import tidy_spacing
from agent.retrieval.pointers import is_absence_sentence, says_nothing_new

CONTINUATION = ", namely"
"""What follows the model's restated sentence: the words after it must name something."""
MAX_RESTATED_CHARS = 300
"""A longer answer is no restated question: it is not continued."""


def restated_prefix(
    settings: Settings, state: Mapping[str, Any], raw: str, answer: Answer
) -> str | None:
    """The words the model writes on from (its answer ``raw`` without citations or final
    stop, then :data:`CONTINUATION`) when ``answer``, the guarded ``raw``, is the "not
    found" reply because ``raw`` said nothing the question asked for; else ``None``."""
    if not (settings.finish_restated and answer.said_nothing_asked):
        return None
    if state.get("route") != "hybrid" or state.get("web_context"):
        return None
    question = str(state.get("question") or "")
    if asks_for_a_figure(question):
        return None  # after "namely" a figure is a guess: "…in 1986, namely at minute 44"
    if asks_for_a_name(question) or not says_nothing_new(raw, question):
        return None  # pressed for a name it lacks, the model takes any in sight (see above)
    sentence = tidy_spacing(CITATION_RE.sub(" ", raw)).strip().rstrip(" .!;:,")
    if (
        not sentence
        or "\n" in sentence
        or len(sentence) > MAX_RESTATED_CHARS
        or sentence.endswith("?")
        or any(is_absence_sentence(s) for s in answer_sentences(sentence))
    ):
        return None
    return sentence + CONTINUATION


def finished_answer(
    first: Answer,
    question: str,
    prefix: str,
    written: str,
    tokens: int,
    guard: Callable[..., Answer],
) -> Answer:
    """The answer the model's ``written`` words after ``prefix`` make, through ``guard``
    (the turn's guards, as for ``first``), when they give something ``question`` asks for:
    a word it lacks and, when it asks who or for a name, a name it lacks (not a date: "…the
    author, namely The Crazy Ones October 14, 1998"). Else ``first``, the "not found" reply.
    ``tokens``, what writing on took, are counted either way."""
    first.tokens_used += tokens
    if says_nothing_new(written, question):
        return first
    if (ASKS_FOR_SOMEONE.search(question) or asks_for_a_name(question)) and not (
        names_someone_new(written, question)
    ):
        return first
    continued = guard(prefix + written, tokens=first.tokens_used)
    return first if continued.text == prompts.NOT_ANSWERED else continued
