"""Sentences that point at the passages instead of saying anything.

A small model often follows its answer with "This can be found in the passage #chk_…,
which states: …" or "This information is stated in the first context passage". The reader
never saw "the context passage" (it is the prompt's word), and the citation such a sentence
carries is usually a second, weaker one, often on a quote that does not hold the answer.
:func:`without_pointer_sentences` drops them after an answer's first sentence; a citation
they carried goes to the sentence before them when that one cites nothing.

A sentence that says what the passages leave out ("The budget is not explicitly stated in
this passage #chk_…") cites nothing it could be checked against: :func:`without_absence_citations`
takes its citations off.
"""

from __future__ import annotations

import re

from agent.retrieval.anchors import answer_sentences
from agent.retrieval.citation_layout import with_citation
from agent.retrieval.citations import CITATION_RE, cited_ids, tidy_spacing
from agent.text import content_terms, folded_words

_PLACE = (
    r"(?:(?:first|second|third|last|same|relevant|above|provided|given|cited|following) )*"
    r"(?:context(?: passages?)?|passages?|excerpts?|citations?(?: ids?)?|sources?)"
)
# how a pointer sentence opens: "This ...", "The information ...", "In the first passage ..."
_OPENING = re.compile(
    r"^[\W\d_]*(?:this|that|it|these|both|"
    r"(?:the|this|that) (?:information|answer|fact|detail|scene|quote|statement)s?|"
    rf"(?:(?:in|from|as|according to) )?(?:the|this|that|each|both) {_PLACE})\b",
    re.IGNORECASE,
)
# "1. #chk_1a2b3c4d states: ..." (a list of quotes)
_QUOTING_ID = re.compile(
    r"^[\W\d_]*#chk_[0-9a-f]{8}\W*(?:states?|says|mentions?|reads)\s*[:,]?\s*[\"“]",
    re.IGNORECASE,
)
_REFERENCE = re.compile(rf"\b{_PLACE}\b", re.IGNORECASE)
# where, not what: "can be found in", "is stated in"; or a quote follows ("states: "...")
_POINTING = re.compile(
    r"\b(?:can|could|may) be (?:\w+ )?(?:found|seen|inferred|read)\b|"
    r"\b(?:is|are|was|were) (?:\w+ )?(?:found|stated|mentioned|shown|described|given|"
    r"confirmed|supported|indicated|explained)\b|"
    r"\b(?:states?|says|reads|mentions?|notes?)\s*[:,]?\s*[\"“]",
    re.IGNORECASE,
)


_WORDS = re.compile(r"\w")


def is_pointer_sentence(sentence: str) -> bool:
    """Whether ``sentence`` only says where something is written ("This is stated in the
    passage #chk_…"): it opens on a pointer, names a passage (or cites one) and says it
    is written there, or quotes it."""
    if _QUOTING_ID.match(sentence):
        return True
    plain = CITATION_RE.sub(" ", sentence)
    names_a_passage = _REFERENCE.search(plain) or CITATION_RE.search(sentence)
    return bool(_OPENING.match(plain) and names_a_passage and _POINTING.search(plain))


def without_pointer_sentences(answer: str) -> str:
    """``answer`` without the pointer sentences after its first sentence (see the module
    docs); a dropped sentence's citations go to the sentence before it if that has none."""
    sentences = answer_sentences(answer)
    kept = sentences[:1]
    dropped = False
    for sentence in sentences[1:]:
        # what is left of a dropped sentence (its closing quote) goes with it
        if not is_pointer_sentence(sentence) and not (dropped and not _WORDS.search(sentence)):
            kept.append(sentence)
            dropped = False
            continue
        dropped = True
        ids = cited_ids(sentence)
        if ids and not cited_ids(kept[-1]):
            kept[-1] = with_citation(kept[-1], " ".join(ids))
    return "".join(kept).rstrip() if len(kept) < len(sentences) else answer


# "is not (explicitly) stated", "does not mention", "no information about": what is missing
_ABSENT = re.compile(
    r"\b(?:not|no|never)\b(?:\s+(?:\w+ly|any|specific|further|clear|direct))*\s+"
    r"(?:mention|stat|specif|provid|contain|say|said|includ|give|discuss|indicat|describ|"
    r"information|details?|answer)\w*",
    re.IGNORECASE,
)
_CONTRAST = re.compile(r"\b(?:but|however|although|though|yet|while|instead)\b", re.IGNORECASE)
_DOCUMENTS = re.compile(rf"{_REFERENCE.pattern}|\b(?:documents?|texts?)\b", re.IGNORECASE)


def is_absence_sentence(sentence: str) -> bool:
    """Whether ``sentence`` only says that the passages (or documents) do not hold
    something: a negated "mention", "state", "contain"... naming them, and no "but" that
    would go on to say what they do hold."""
    plain = CITATION_RE.sub(" ", sentence)
    return bool(_ABSENT.search(plain) and _DOCUMENTS.search(plain) and not _CONTRAST.search(plain))


def without_absence_citations(answer: str) -> str:
    """``answer`` with no citation on a sentence that says what the passages leave out."""
    sentences = answer_sentences(answer)
    absent = [is_absence_sentence(s) for s in sentences]
    if not any(a and cited_ids(s) for a, s in zip(absent, sentences, strict=True)):
        return answer
    kept = [
        tidy_spacing(CITATION_RE.sub("", s)) if a else s
        for a, s in zip(absent, sentences, strict=True)
    ]
    return "".join(kept).rstrip()


# "[label]" opening a sentence, after the id it was shown with ("#chk_… [label]") or alone
_BRACKETED = re.compile(
    r"(^|(?<=[.!?]\s)|(?<=\n))\s*(#chk_[0-9a-fA-F]{8}\s*)?\[([^\[\]\n]{2,400})\]\s*[:\-–—]?\s*"
)
_PAGE = re.compile(r"\(p\. \d+\)")


def _label_parts(label: str) -> set[str]:
    return {folded_words(p) for p in _PAGE.sub(",", label).split(",")}


def without_echoed_labels(answer: str, labels: list[str]) -> str:
    """``answer`` without the passage labels it opens a sentence with ("[Report, Budget
    (p. 3)] The budget is …"): a small model echoes the ``#chk_… [label]`` line the prompt
    shows over each passage. Bracketed text elsewhere, or made of anything but the labels'
    parts (title, chapter, section, page), stays."""
    parts = set().union(*(_label_parts(label) for label in labels)) - {""} if labels else set()
    if not parts:
        return answer

    def drop(m: re.Match) -> str:
        inner = _label_parts(m.group(3)) - {""}
        if not inner or not inner <= parts:
            return m.group(0)
        return m.group(1) + (m.group(2) or "")  # the id stays: the guard places it

    stripped = _BRACKETED.sub(drop, answer)
    return stripped if re.search(r"\w", CITATION_RE.sub("", stripped)) else answer


# what an answer says about the passages rather than about the question's subject
_ABOUT_PASSAGES = frozenset(
    [
        "information",
        "passage",
        "context",
        "provided",
        "provide",
        "stated",
        "state",
        "mentioned",
        "mention",
        "cited",
        "cite",
        "citation",
        "text",
        "document",
        "given",
        "explicitly",
        "specifically",
        "answer",
        "question",
        "relevant",
        "following",
        "found",
        "according",
        "specific",
        "detail",
        "described",
        "describe",
        "source",
        "excerpt",
        "page",
        "can",
        "could",
        "may",
        "might",
        "would",
    ]
)
_NUMBER = re.compile(r"\d+")
_PAGE_NUMBER = re.compile(r"\b(?:pages?|p\.)\s*\d+", re.IGNORECASE)
_VERDICT = re.compile(r"\b(?:yes|no|not|never|none|neither|nor)\b", re.IGNORECASE)


# irregular verbs' past forms and their base: "Alice gave the animals prizes" restates
# "What does Alice give the animals as prizes?"
_IRREGULAR_PASTS = {
    past: base
    for base, *pasts in (
        line.split()
        for line in """
        bear bore borne; beat beaten; become became; begin began begun; bend bent;
        bind bound; blow blew blown; break broke broken; bring brought; build built; buy bought;
        catch caught; choose chose chosen; come came; draw drew drawn; drink drank drunk;
        drive drove driven; eat ate eaten; fall fell fallen; feel felt; fight fought;
        find found; fly flew flown; forget forgot forgotten; get got gotten; give gave given;
        go went gone;
        grow grew grown; hear heard; hold held; keep kept; know knew known; lead led;
        leave left; lose lost; make made; mean meant; meet met; pay paid; ride rode ridden;
        rise rose risen; run ran; say said; see saw seen; seek sought; sell sold; send sent;
        shake shook shaken; shine shone; shoot shot; shrink shrank shrunk; sing sang sung;
        sink sank sunk; sit sat; sleep slept; slide slid; spin spun; spring sprang sprung;
        stick stuck; sting stung; strike struck; swear swore sworn; sweep swept; tear tore torn;
        weep wept; freeze froze frozen; feed fed; flee fled; dig dug; hang hung; hide hid hidden;
        speak spoke spoken; spend spent; stand stood; steal stole stolen; swim swam swum;
        take took taken; teach taught; tell told; think thought; throw threw thrown;
        understand understood; wake woke woken; wear wore worn; win won; write wrote written
        """.replace("\n", " ").split(";")
        if line.strip()
    )
    for past in pasts
}


def word_stems(text: str) -> set[str]:
    """The content-word stems of ``text``: endings cut, irregular pasts made their base
    ("gave" -> "give", "shrank" -> "shrink")."""
    # "trained" restates "train", "mentions" "mentioned", "gave" "give"; "went" is "go",
    # a word too short to be a content term of the question it restates
    stems = {
        _IRREGULAR_PASTS.get(w) or (re.sub(r"(?:ing|ed|es|s)$", "", w) if len(w) > 4 else w)
        for w in content_terms(text)
    }
    return {s for s in stems if len(s) > 2}


_ABOUT_PASSAGES_STEMS = frozenset(word_stems(" ".join(_ABOUT_PASSAGES)))
# words that join a restated question's parts and add nothing ("The estate is entailed,
# and thus it will inherit Longbourn because the estate is entailed")
_CONNECTIVE_STEMS = frozenset(
    word_stems("thus therefore hence also indeed because since then actually simply namely")
)


# a yes-or-no question opens with an auxiliary and asks for no wh-word ("Is Mr. Bingley
# rich?", "Did Roberts play for Leicester City?"); "Can you tell me who Dinah is?" asks one
_YES_OR_NO = re.compile(
    r"^\W*(?:is|are|was|were|am|do|does|did|can|could|will|would|shall|should|has|have|had|"
    r"may|might|must)\b(?!.*\b(?:who|whom|whose|what|which|where|when|why|how)\b)",
    re.IGNORECASE | re.DOTALL,
)


def asks_yes_or_no(question: str) -> bool:
    """Whether ``question`` is a yes-or-no question (see ``_YES_OR_NO``)."""
    return bool(_YES_OR_NO.match(question.strip()))


def added_stems(answer: str, question: str) -> set[str]:
    """The content-word stems ``answer`` adds to ``question``'s, words about passages and
    connectives ("thus", "namely") aside."""
    return word_stems(answer) - word_stems(question) - _ABOUT_PASSAGES_STEMS - _CONNECTIVE_STEMS


def added_numbers(answer: str, question: str) -> set[str]:
    """The numbers ``answer`` holds that ``question`` does not."""
    return set(_NUMBER.findall(answer)) - set(_NUMBER.findall(question))


def says_nothing_new(answer: str, question: str) -> bool:
    """Whether ``answer`` only restates ``question`` or points at passages: no word or number
    beyond the question's and the passages' vocabulary ("The Caterpillar is smoking when
    Alice meets it #chk_…", "This information is cited from #chk_…", a bare id). A yes-or-no
    question restated as a statement answers it ("Mr. Bingley is rich" for "Is Mr. Bingley
    rich?"), so there only the words about passages count as nothing."""
    if asks_yes_or_no(question):
        question = ""
    plain = _PAGE_NUMBER.sub(" ", CITATION_RE.sub(" ", answer))  # where, not what
    words = added_stems(plain, question)
    numbers = added_numbers(plain, question)
    verdict = _VERDICT.search(plain) and not _VERDICT.search(question)
    return not words and not numbers and not verdict


# "According to the context passage, …", "In #chk_1a2b3c4d, …": the prompt's words opening
# a sentence (the reader never saw "the context")
_PROMPT_OPENER = re.compile(
    r"^(\s*)(?:according to|based on|as (?:stated|mentioned|described) in|in|from) "
    r"(?:the |this )?(?:provided |given |first |second |relevant )?"
    r"(?:context(?: passages?)?|passages?|excerpts?|(#chk_[0-9a-f]{8}))"
    r"(?: \(?(#chk_[0-9a-f]{8})\)?)?\s*,\s*",
    re.IGNORECASE,
)


def without_prompt_openers(answer: str) -> str:
    """``answer`` without the openers that name the prompt's passages ("According to the
    context passage, X" -> "X"); an id the opener named goes to the end of its sentence
    when the sentence cites nothing else."""
    out = []
    for sentence in answer_sentences(answer):
        m = _PROMPT_OPENER.match(sentence)
        rest = sentence[m.end() :] if m else ""
        if not m or not re.search(r"\w", CITATION_RE.sub("", rest)):
            out.append(sentence)
            continue
        rest = m.group(1) + rest[0].upper() + rest[1:]
        named = [i for i in (m.group(2), m.group(3)) if i]
        out.append(with_citation(rest, " ".join(named)) if named and not cited_ids(rest) else rest)
    return "".join(out)
