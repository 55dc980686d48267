"""The subjects a comparison sets side by side, each searched for on its own.

One search for "Compare the Queen of Hearts and Lady Catherine de Bourgh as domineering
figures" ranks the passages nearest the whole sentence: in two novels, four passages on Lady
Catherine and none on the Queen. A comparison reads well only from passages on each side, so
:func:`compared_subjects` finds its subjects and :func:`subject_query` makes one query for
each ("the Queen of Hearts domineering figures", "Lady Catherine de Bourgh domineering
figures"); the deep search shares its passages between them
(:mod:`~agent.retrieval.subject_search`).

The forms read: "compare (and contrast) A and/with/to B", "contrast A with B", "the
difference(s) or similarities between A and B", "how does A differ from (compare with) B",
"how do A and B differ", "A compared with B", "A versus B", and one question asked of two
subjects ("How do A and B each react to …?"); a list names more ("A, B and C"). Possessive
subjects ("Compare Jane's and Elizabeth's characters") keep the thing owned as the topic, and
so does a thing said once before named owners ("the personalities of Jane and Elizabeth",
"the character of Jane with that of Elizabeth", "the views of Charlotte and Elizabeth on
marriage": the topic "views on marriage"); a head noun said once is both subjects' ("the Q1
and Q2 budgets"). Pronouns and clauses are no subjects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent.text import STOPWORDS

_TAIL = r"(?P<rest>(?:\s+(?:as|in|on|for|regarding|when|by|at|over|about|across)\b.*)?)"
_END = r"\W*$"
_FORMS = (
    # "Compare the Hatter and the March Hare", "contrast A with B in …"
    re.compile(
        r"^\W*(?:(?:please|can you|could you)\s+)?"
        r"(?:compare(?:\s+(?:and|&)\s+contrast)?|contrast)\s+(?:between\s+)?"
        r"(?P<a>.+?)\s+(?:and|with|to|versus|vs\.?|against)\s+(?P<b>.+?)" + _TAIL + _END,
        re.I,
    ),
    # "What are the differences between A and B?", "similarities between A and B"
    re.compile(
        r"\b(?:differences?|similarit(?:y|ies)|contrasts?|distinction)\s+between\s+"
        r"(?P<a>.+?)\s+and\s+(?P<b>.+?)" + _TAIL + _END,
        re.I,
    ),
    # "How does A differ from B?", "How is A different from B?", "How did A compare with B?"
    re.compile(
        r"^\W*(?:how|in what ways?|where)\s+(?:does|do|did|is|are|was|were)\s+(?P<a>.+?)\s+"
        r"(?:differ|different|compare[ds]?)\s+(?:from|with|to|against)\s+(?P<b>.+?)" + _TAIL + _END,
        re.I,
    ),
    # "How do Mr. Collins and Mr. Wickham differ?", "How are A and B alike?"
    re.compile(
        r"^\W*(?:how|in what ways?)\s+(?:do|did|does|are|were|is)\s+(?P<a>.+?)\s+and\s+"
        r"(?P<b>.+?)\s+(?:differ|different|similar|alike|compare)\b" + _TAIL + _END,
        re.I,
    ),
    # "How do Alice and Elizabeth Bennet each react to authority?"
    re.compile(
        r"^\W*(?:how|what|why|in what ways?|when|where)\s+(?:do|did|does|are|were|would)\s+"
        r"(?P<a>.+?)\s+and\s+(?P<b>.+?)\s+each\b(?!\s+other\b)(?P<rest>.*?)" + _END,
        re.I,
    ),
    # "A compared with B", "A versus B", "A vs. B"
    re.compile(
        r"^\W*(?:(?:how|what)\s+(?:about|is|are|does|do)\s+)?(?P<a>.+?)\s+"
        r"(?:compared\s+(?:with|to)|versus|vs\.?)\s+(?P<b>.+?)" + _TAIL + _END,
        re.I,
    ),
)
_POSSESSIVE = re.compile(r"[’']s?\b")
# words that say "compare", not what is compared
_COMPARING = frozenset(
    [
        "compare",
        "compared",
        "comparing",
        "comparison",
        "contrast",
        "contrasted",
        "differ",
        "differs",
        "different",
        "difference",
        "differences",
        "similar",
        "similarity",
        "similarities",
        "alike",
        "versus",
        "vs",
        "between",
        "each",
        "both",
        "please",
    ]
)
_PRONOUNS = frozenset(
    [
        "it",
        "its",
        "they",
        "them",
        "their",
        "this",
        "that",
        "these",
        "those",
        "he",
        "she",
        "him",
        "her",
        "one",
    ]
)
# a question word or a verb's auxiliary: the phrase is a clause, not a subject
_CLAUSE_WORDS = frozenset(
    ["what", "which", "who", "whom", "how", "why", "when", "where", "does", "do", "did"]
    + ["is", "are", "was", "were", "has", "have", "had"]
)
_MOST_WORDS = 6  # a longer "subject" is a clause the patterns misread


@dataclass(frozen=True)
class Comparison:
    """What a comparison sets side by side, and what it compares them on."""

    subjects: tuple[str, ...]
    topic: str
    """The question's other words ("domineering figures"; empty when it names none)."""


def _subject(phrase: str) -> str | None:
    """``phrase`` as a subject to search for, or ``None`` when it is none (a pronoun, a
    clause, nothing)."""
    phrase = _POSSESSIVE.sub("", phrase).strip(" ,;:\"'“”‘’")
    words = phrase.split()
    if not words or len(words) > _MOST_WORDS:
        return None
    if all(w.lower() in STOPWORDS or w.lower() in _PRONOUNS for w in words):
        return None
    if any(w.lower() in _CLAUSE_WORDS for w in words):
        return None  # "What Top-5 accuracy does DPR reach (compared with BM25)"
    return phrase


def _owned(first: str, second: str) -> tuple[str, str]:
    """The second subject and the thing both own, when the first is possessive ("Jane's
    and Elizabeth's characters" -> "Elizabeth", "characters")."""
    if not re.search(r"[’']s?$", first.strip()):
        return second, ""
    parts = re.split(r"[’']s?\s+", second, maxsplit=1)
    return (parts[0], parts[1]) if len(parts) == 2 else (second, "")


def _with_shared_head(first: str, second: str) -> str:
    """The first subject with the noun both share when the question says it once ("the Q1
    and Q2 budgets", "the first and second chapters": "Q1 budgets"), else as it is."""
    own = [w for w in first.split() if w.lower() not in STOPWORDS]
    other = [w for w in second.split() if w.lower() not in STOPWORDS]
    if len(own) == 1 and len(other) == 2 and other[1].islower():
        return f"{first} {other[1]}"
    return first


_OF_HEAD = re.compile(
    r"^(?:(?:the|a|an)\s+)?(?P<head>[a-z][\w'’-]*(?:\s+[a-z][\w'’-]*){0,2})\s+of\s+(?P<owner>.+)$"
)
_THAT_OF = re.compile(r"^(?:that|those)\s+of\s+", re.I)
_ARTICLES = frozenset(["the", "a", "an"])


def name_like(word: str) -> bool:
    """A capitalised word or one with a digit ("Dormouse", "DPR", "Q2"): a name's word."""
    return word[:1].isupper() or any(ch.isdigit() for ch in word)


def _names_something(phrase: str) -> bool:
    """Whether ``phrase``'s first word past an article is a name ("the Dormouse", "DPR",
    "Q2"), not a common noun ("the last chapter", "inflation")."""
    words = [w for w in phrase.split() if w.lower() not in _ARTICLES]
    return bool(words) and name_like(words[0])


def _of_head(listed: list[str], last: str) -> tuple[list[str], str, str]:
    """The subjects without the thing compared when the question says it once, before the
    first ("the personalities of Jane and Elizabeth", "the performance of BM25 and DPR":
    "personalities", "performance"), and "that of B" as B; the head is ``""`` when there
    is none. Only names are owners this way: "the first chapter of the book and the last
    chapter" compares two chapters, and "the Queen of Hearts" is one name."""
    last = _THAT_OF.sub("", last)
    found = _OF_HEAD.match(listed[0].strip())
    if not found or not all(_names_something(p) for p in (found["owner"], *listed[1:], last)):
        return listed, last, ""
    return [found["owner"], *listed[1:]], last, found["head"]


_NAME_THEN_TOPIC = re.compile(
    r"^(?P<name>.+?)\s+(?P<topic>(?:on|about|to|towards?|regarding|in|at|for)\s+.+)$"
)


def _without_topic(last: str) -> tuple[str, str]:
    """The last subject and the topic said after it ("Elizabeth on marriage" of "How do
    the views of Charlotte and Elizabeth on marriage differ?"), when the words before the
    preposition are a name; else ``last`` and ``""`` ("the cost of living")."""
    found = _NAME_THEN_TOPIC.match(last.strip())
    if not found:
        return last, ""
    name = [w for w in found["name"].split() if w.lower() not in _ARTICLES]
    if not name or not all(name_like(w) for w in name):
        return last, ""
    return found["name"], found["topic"]


def compared_subjects(question: str) -> Comparison | None:
    """The subjects ``question`` compares (two, or more listed: "Compare Alice, the Hatter
    and the Queen") and the topic it compares them on, or ``None`` when it compares nothing
    (see the module docs for the forms read)."""
    text = " ".join(question.split())
    for form in _FORMS:
        found = form.search(text)
        if not found:
            continue
        last, owned = _owned(found["a"], found["b"])
        listed = [p for p in re.split(r",\s+(?:and\s+)?", found["a"]) if p.strip(" ,")]
        listed, last, head = _of_head(listed, last)
        last, said_after = _without_topic(last)
        owned = f"{head} {owned} {said_after}".strip()
        subjects = tuple(_subject(_with_shared_head(p, last)) for p in listed) + (_subject(last),)
        if None in subjects or len({s.lower() for s in subjects}) < len(subjects):
            continue
        rest = f"{owned} {found['rest'] or ''}"
        topic = " ".join(
            w for w in re.findall(r"[\w’'-]+", rest) if w.lower() not in _COMPARING
        ).strip()
        topic = re.sub(r"^(?:as|in|on|for|regarding|when|by|at|over|about|across)\s+", "", topic)
        return Comparison(subjects, topic)  # type: ignore[arg-type]
    return None


def subject_query(comparison: Comparison, subject: str) -> str:
    """The search query for one ``subject`` of ``comparison``: the subject, then the topic."""
    return " ".join(f"{subject} {comparison.topic}".split())
