"""Whose words an answer quotes, when the question asks what someone says.

A novel's dialogue puts several speakers' lines in one passage, and the 1.5B model quotes
the wrong one: "What is the King's advice to the White Rabbit about reading the verses?"
got the verses the Rabbit reads (its context also held "“Begin at the beginning,” the King
said gravely, “and go on till you come to the end: then stop.”"), and "What does the Queen
of Hearts keep shouting?" got the gardener's "May it please your Majesty". The words are
the passage's, so no other check catches them.

:func:`asked_speaker` reads the speaker a question asks about ("What does/did X say, shout,
ask, call…", "What is X's advice, question, riddle, reply…"). :func:`attributed_lines`
gives each quotation of a text its speaker from the tag beside it ("…,” said the Queen",
"the King said gravely, “…"), or from the line before it when the tag sits between two
halves of one speech or closes a line that asked nothing ("“_I_ see!” said the Queen, who
had meanwhile been examining the roses. “Off with their heads!”"). A reply after a
question is not the asker's, and a line with no tag is nobody's.

:func:`another_speakers_words`: when an answer quotes only words of the passages that are
another speaker's or the narration's, and the passages hold lines of the speaker asked
about, the caller quotes the speaker's line instead: the one sharing most question words,
else the longest (a speech over an interjection such as "I see!"). Words of the narration
are replaced only by a line sharing a question word.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from agent.retrieval.citations import CITATION_RE
from agent.retrieval.focus import GAP
from agent.retrieval.quotes import COVER_PREFIX
from agent.text import content_terms, folded_words

_VERBS = (
    r"said|says|say|cried|cries|shouted|shouts|shouting|asked|asks|replied|replies|answered|"
    r"exclaimed|added|continued|went\s+on|began|whispered|muttered|remarked|repeated|"
    r"interrupted|observed|screamed|roared|growled|sighed|called(?:\s+out)?|thought|sobbed|"
    r"yelled|declared|retorted|inquired|enquired|returned|rejoined|resumed|urged|pleaded|"
    r"protested|insisted|told|ordered|read|sang"
)
# a speaker in a tag: "the Queen", "Mr. Collins", "the Mock Turtle", "her sister", "Two"
_CAPITAL = r"(?:(?:Mr|Mrs|Ms|Dr|St)\.|[A-Z][\w’'-]*)"
_NAME = (
    rf"(?:(?:(?:the|her|his|their|my|poor|a|an)\s+)?{_CAPITAL}"
    rf"(?:\s+(?:(?:of|de)\s+(?:the\s+)?)?{_CAPITAL})*"
    r"|(?:the|her|his|their|my|poor|a|an)\s+[a-z]+(?:\s+(?![a-z]+ly\b)[a-z]+)?"
    r"|he|she|they|I|we|it)"
)
_PRONOUNS = frozenset({"he", "she", "they", "i", "we", "it", "you"})
_ADVERB = r"(?:\s+\w+ly)?"
# the tag after a line: "…,” said the Queen", "…!” the Queen shouted", "…?” he asked"
_TAG_AFTER = re.compile(
    rf"^\s*[,;:—–-]*\s*(?:(?P<v1>{_VERBS}){_ADVERB}\s+(?P<w1>{_NAME})"
    rf"|(?P<w2>{_NAME}){_ADVERB}\s+(?P<v2>{_VERBS})\b)"
)
# the tag before a line: "the King said gravely, “…", "Alice said to herself: “…"
_TAG_BEFORE = re.compile(
    rf"(?P<who>{_NAME}){_ADVERB}\s+(?:{_VERBS})(?:,?\s*(?:very\s+)?\w+ly)?"
    rf"(?:\s+to\s+(?:the\s+)?[\w’'-]+)?\s*[,:]?\s*(?:—|--)?\s*$"
)
# a line cut by the passage's end ("…read:— “They told me you had been to her, …") still counts
_QUOTE = re.compile(r"“([^“”]+)(?:”|$)|\"([^\"]+)\"")
_SENTENCE_END = re.compile(r"(?<!\bMr)(?<!\bMrs)(?<!\bMs)(?<!\bDr)(?<!\bSt)[.!?)](?=\s)")
_BETWEEN_MOST = 160  # characters of narration a tag and the next line of its speaker share
_ASKED_BY = re.compile(
    r"\bwhat\s+(?:\w+\s+)?(?:does|did|do)\s+(?P<who>.+?)\s+(?:\w+ly\s+)?"
    r"(?:keep\s+|always\s+|first\s+|then\s+|finally\s+)?"
    r"(?:say|saying|shout|shouting|cry|crying|ask|asking|tell|call|calling|answer|reply|"
    r"exclaim|scream|sing|whisper|order|advise|suggest|recite|declare|remark|repeat|"
    r"mutter|roar)\b",
    re.IGNORECASE,
)
_OWNED_WORDS = re.compile(
    r"\bwhat\s+(?:is|was|are|were)\s+(?P<who>.+?)['’]s?\s+(?:\w+\s+)?"
    r"(?:advice|question|riddle|reply|answer|order|orders|remark|motto|verdict|cry|"
    r"command|sentence|words|warning|suggestion|retort|catchphrase|saying|request)\b",
    re.IGNORECASE,
)
_NAME_WORD = re.compile(r"[A-Z][\w’'-]*")
_LEAVE_OUT = frozenset({"The", "What", "Who", "Mr", "Mrs", "Miss", "Ms", "Dr", "Sir", "Lady"})


@dataclass(frozen=True)
class Line:
    """One quotation of a text: its words and its speaker as the tag names them (``None``
    when no tag does, or only a pronoun)."""

    text: str
    speaker: str | None


def _speaker_words(name: str) -> frozenset[str]:
    """The capitalised words of a speaker's name, titles and "The" left out ("the Queen of
    Hearts" -> {"queen", "hearts"}); a lower-case tag keeps its last word ("her sister")."""
    words = {w.lower() for w in _NAME_WORD.findall(name) if w.rstrip(".") not in _LEAVE_OUT}
    if not words and name.split():
        words = {name.split()[-1].lower()}
    return frozenset(words)


def asked_speaker(question: str) -> str | None:
    """The named speaker ``question`` asks the words of ("What does the Queen keep
    shouting?" -> "the Queen"; "What is the King's advice…?" -> "the King"), or ``None``.
    Only a capitalised name counts: "What does the report say?" asks no speaker."""
    for pattern in (_OWNED_WORDS, _ASKED_BY):
        match = pattern.search(question)
        if match and _NAME_WORD.search(match.group("who")):
            who = match.group("who").strip()
            if _speaker_words(who) and who.split()[0].lower() not in _PRONOUNS:
                return who
    return None


def _tag_speaker(name: str | None) -> str | None:
    if not name or name.split()[0].lower() in _PRONOUNS:
        return None
    return name.strip()


def _only_the_tag(between: str) -> bool:
    """Whether the narration ``between`` two lines is the first line's tag and nothing
    more: "said the Queen, who had been examining the roses." ("The Hatter opened his eyes
    very wide…; but all he said was," after a line is another sentence)."""
    end = _SENTENCE_END.search(between)
    return (
        len(between) <= _BETWEEN_MOST
        and _TAG_AFTER.match(between) is not None
        and (end is None or not between[end.end() :].strip())
    )


def attributed_lines(text: str) -> list[Line]:
    """The quotations of ``text`` in order, each with its speaker (see the module docs).
    A focused passage's gap (``…``) ends what a tag can reach."""
    lines: list[Line] = []
    for piece in text.split(GAP):
        quotes = list(_QUOTE.finditer(piece))
        previous: tuple[str, str | None, int] | None = None  # words, speaker, end
        for n, match in enumerate(quotes):
            words = (match.group(1) or match.group(2)).strip()
            after_end = quotes[n + 1].start() if n + 1 < len(quotes) else len(piece)
            after = piece[match.end() : after_end]
            before = piece[previous[2] if previous else 0 : match.start()]
            tag = _TAG_AFTER.match(after)
            speaker = _tag_speaker(tag and (tag.group("w1") or tag.group("w2")))
            tagged = bool(tag)
            if not tagged and (lead := _TAG_BEFORE.search(before)):
                speaker, tagged = _tag_speaker(lead.group("who")), True
            # "The White Rabbit put on his spectacles." after "“Read them,” said the King."
            # begins something else
            near = previous is not None and _only_the_tag(before)
            # the second half of a speech, or more of a line that asked nothing
            if (
                not tagged
                and near
                and previous[1]
                and not previous[0].rstrip(" ,.!—–-").endswith("?")
            ):
                speaker = previous[1]
            if (
                near
                and speaker is not None
                and speaker == previous[1]
                and words[:1].islower()
                and not previous[0].endswith((".", "!", "?"))
            ):  # “Begin at the beginning,” the King said gravely, “and go on…”: one line
                words = f"{lines.pop().text} {words}"
            lines.append(Line(words, speaker))
            previous = (words, speaker, match.end())
    return lines


def _keys(words: set[str] | frozenset[str]) -> set[str]:
    """Words by their first :data:`~agent.retrieval.quotes.COVER_PREFIX` letters, as the
    covering-sentence quote matches them ("shouting", "shouted")."""
    return {w[:COVER_PREFIX] for w in words}


def _same_speaker(speaker: str | None, asked: frozenset[str]) -> bool:
    return speaker is not None and bool(_speaker_words(speaker) & asked)


def _owner(words: str, passages: Mapping[str, str], lines: Mapping[str, list[Line]]) -> str | None:
    """Who says ``words`` in the passages (``lines``: each one's :func:`attributed_lines`):
    a line's speaker (``""`` for a line without one), ``"narration"`` for words outside
    every line, ``None`` when no passage holds them."""
    wanted = folded_words(words)
    if len(wanted.split()) < 2:
        return None
    for line in (line for held in lines.values() for line in held):
        said = folded_words(line.text)
        if wanted in said or (len(said.split()) >= 3 and said in wanted):
            return line.speaker or ""
    return "narration" if any(wanted in folded_words(t) for t in passages.values()) else None


def another_speakers_words(
    answer: str, question: str, passages: Mapping[str, str]
) -> tuple[str, str, str] | None:
    """``(speaker, line, citation id)`` to quote for an answer giving another speaker's
    words than those ``question`` asks for (see the module docs); ``None`` when the question
    asks no speaker's words, the answer quotes the speaker's own, quotes nothing of the
    passages, or no passage holds a line of the speaker.

    ``passages`` maps a ``#chk_…`` id to the text the model read under it, best first."""
    speaker = asked_speaker(question)
    if speaker is None:
        return None
    asked = _speaker_words(speaker)
    lines = {cid: attributed_lines(text) for cid, text in passages.items()}
    own = [
        (line, cid)
        for cid, held in lines.items()
        for line in held
        if _same_speaker(line.speaker, asked)
    ]
    if not own:
        return None
    plain = CITATION_RE.sub(" ", answer)
    quoted = [m.group(1) or m.group(2) for m in _QUOTE.finditer(plain)]
    owners = [_owner(q, passages, lines) for q in quoted]
    known = [o for o in owners if o]  # the line's speaker, or the narration
    if not known or any(o != "narration" and _same_speaker(o, asked) for o in known):
        return None
    if any(o == "" for o in owners):  # a line no tag gives anyone may be the speaker's
        return None
    wanted = _keys(content_terms(question)) - _keys(asked)

    def fit(pair: tuple[Line, str]) -> tuple[int, int]:
        line = pair[0]
        return len(wanted & _keys(content_terms(line.text))), len(line.text.split())

    line, cid = max(own, key=fit)
    if all(o == "narration" for o in known) and not fit((line, cid))[0]:
        return None  # words of the story, and no line of the speaker's is about the question
    return speaker, line.text, cid
