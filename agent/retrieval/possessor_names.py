"""An answer that names the question's owner as what it owns.

"Who is the Rabbit's servant that Alice calls for?" answered "The Rabbit's servant is the
White Rabbit #chk_…": the 1.5B model, not finding the servant's name, gave back the one name
the question held. The answer names someone, so the "names nothing asked" check lets it
through, and its citation opens a paragraph that does not say who the servant is.
:func:`names_the_possessor` tells such answers apart; the caller replies that the documents
do not say it.

An answer counts when, once the question's own possessive ("the Rabbit's") is left out, its
only name is the owner's: the same words ("Darcy's friend is Darcy"), or, for an owner the
question writes with "the" (a descriptive name: "the Rabbit", "the Queen"), a longer name
holding it ("the White Rabbit"). Another title marks another person ("Mr. Darcy's sister is
Miss Darcy", "Mr. Bennet's wife is Mrs. Bennet"), and a name with words of its own
("Elizabeth Bennet" for "Mr. Bennet's daughter"), a second name, a quotation or a number the
question lacks is an answer. The owner named twice ("the White Rabbit, namely the Rabbit") is
still only the owner.
"""

from __future__ import annotations

import re

from agent.retrieval.asked_names import ASKS_WHO, asks_for_a_name, quotes_or_adds_a_number
from agent.retrieval.citations import CITATION_RE
from agent.retrieval.name_words import SENTENCE_WORDS, TITLES

# "the Rabbit's", "Mr. Darcy's", "Colonel Fitzwilliam's": an owner named in the question
_OWNER = re.compile(r"\b(?P<the>the\s+)?(?P<name>(?:[A-Z][\w-]*\.?\s+)*[A-Z][\w-]*)['’]s\b")
# a run of capitalised words, with "of"/"de" inside ("Queen of Hearts", "Lady Catherine de Bourgh")
_RUN = re.compile(r"[A-Z][\w-]*(?:\.?\s+(?:(?:of|de|the)\s+)?[A-Z][\w-]*)*")
_WORD = re.compile(r"[^\W\d_][\w-]*")
_JOINERS = frozenset({"of", "de", "the"})


def _names(text: str) -> list[tuple[set[str], set[str]]]:
    """Each run of capitalised words in ``text`` as (its name words, its titles), lower-cased;
    sentence words ("The") and runs of titles alone are left out."""
    runs = []
    for run in _RUN.findall(text):
        words = [w.lower() for w in _WORD.findall(run) if w.lower() not in _JOINERS]
        titles = {w for w in words if w in TITLES}
        names = {w for w in words if w not in TITLES and w not in SENTENCE_WORDS}
        if names:
            runs.append((names, titles))
    return runs


def names_the_possessor(answer: str, question: str) -> bool:
    """Whether ``answer`` to a question asking who or what owns something of a named owner
    ("Who is the Rabbit's servant?") names only that owner (see the module docs)."""
    if not (ASKS_WHO.search(question) or asks_for_a_name(question)):
        return False
    plain = CITATION_RE.sub(" ", answer)
    if quotes_or_adds_a_number(plain, question):
        return False
    for owner in _OWNER.finditer(question):
        named = _names(owner["name"])
        if len(named) != 1:
            continue
        owned, owner_titles = named[0]
        last = _WORD.findall(owner["name"])[-1]
        rest = re.sub(rf"\b(?:{re.escape(owner['name'])}|{re.escape(last)})['’]s\b", " ", plain)
        runs = _names(rest)
        if runs and all(
            last.lower() in names and titles <= owner_titles and (owner["the"] or names <= owned)
            for names, titles in runs
        ):  # the owner, however often named ("the White Rabbit, namely the Rabbit")
            return True
    return False
