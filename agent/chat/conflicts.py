"""Conflicting passages in an answer (seeds 000 and 002): the model is told which passages
disagree, and an answer that does not give both sides with their citations gets a
deterministic "Conflict detected" section listing each version with its ``#chk_`` id and
asking which source to trust.

Conflicts are the JSON form of :class:`agent.retrieval.conflicts.Conflict` (``first``,
``second``, ``kind``, values, sentences, sources), as kept in the turn's state.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from agent import prompts
from agent.chat.answering import Answer
from agent.retrieval.citations import cited_ids, unique
from agent.retrieval.conflicts import Passage, find_conflicts, is_negated

_TRUST_QUESTION = re.compile(r"[^.!?\n]*\btrust\b[^.!?\n]*\?", re.IGNORECASE)
# the prompt's heading with nothing but ids after it: "CONFLICT DETECTED\n#chk_a and #chk_b"
_EMPTY_ALARM = re.compile(
    r"^[ \t]*[*#_ ]*conflicts? detected[\s:.*_]*(?:#chk_[0-9a-f]{8}(?:\s*(?:and|&|,|;)\s*|[ \t.*])*)+$",
    re.IGNORECASE | re.MULTILINE,
)


def asks_which_to_trust(text: str) -> bool:
    """Whether ``text`` asks a question about trusting a source (not merely says "trust")."""
    return _TRUST_QUESTION.search(text) is not None


def passages(retrieved: Iterable[dict]) -> list[Passage]:
    """Citation payloads (``chunk_payload``) as passages for the conflict detector."""
    return [
        Passage(c["id"], str(c.get("document_id") or ""), c.get("text") or "", c.get("source", ""))
        for c in retrieved
        if str(c.get("id", "")).startswith("#chk_")
    ]


def detect(retrieved: Iterable[dict]) -> list[dict]:
    """The conflicts among citation payloads, JSON-ready."""
    return [c.as_dict() for c in find_conflicts(passages(retrieved))]


def shown(conflicts: Sequence[dict] | None, retrieved: Iterable[dict]) -> list[dict]:
    """The conflicts whose two sides are both among ``retrieved`` (the answer's context)."""
    ids = {c["id"] for c in retrieved}
    return [c for c in conflicts or () if c["first"] in ids and c["second"] in ids]


def _said(conflict: dict, side: str) -> str:
    """What one side says: its value, or for a negation ("yes"/"no" alone says nothing)
    its sentence, quoted."""
    if conflict["kind"] == "negation":
        return f'"{conflict[f"{side}_sentence"].rstrip(".")}"'
    return conflict[f"{side}_value"]


def states_both(text: str, conflict: dict) -> bool:
    """Whether ``text`` gives both versions of ``conflict``, not only cites them: each value,
    or for a negation the negation ("runs" / "does not run": the other side is the topic)."""
    if conflict["kind"] == "negation":
        return is_negated(text)
    said = " ".join(text.lower().split())
    return all(conflict[f"{side}_value"].lower() in said for side in ("first", "second"))


def conflict_note(conflicts: Sequence[dict]) -> str:
    """What the model is told after the passages: which ones disagree, on what."""
    if not conflicts:
        return ""
    pairs = "\n".join(
        prompts.CONFLICT_PAIR.format(
            first=c["first"],
            first_value=_said(c, "first"),
            second=c["second"],
            second_value=_said(c, "second"),
        )
        for c in conflicts
    )
    return prompts.CONFLICT_NOTE.format(pairs=pairs)


def _label(source: str, citation: str) -> str:
    return f"{source} ({citation})" if source else citation


def conflict_section(conflicts: Sequence[dict]) -> str:
    """The deterministic section: each version with its id, then which source to trust."""
    lines = [prompts.CONFLICT_HEADING]
    for c in conflicts:
        lines.append(f'- {_label(c["first_source"], c["first"])}: "{c["first_sentence"]}"')
        lines.append(f'- {_label(c["second_source"], c["second"])}: "{c["second_sentence"]}"')
    lines.append(trust_question(conflicts))
    return "\n".join(lines)


def trust_question(conflicts: Sequence[dict]) -> str:
    """The question asking which source of each conflict to trust."""
    return " ".join(
        prompts.CONFLICT_QUESTION.format(
            first_value=_said(c, "first"),
            second_value=_said(c, "second"),
            first=_label(c["first_source"], c["first"]),
            second=_label(c["second_source"], c["second"]),
        )
        for c in conflicts
    )


def show_conflicts(answer: Answer, conflicts: Sequence[dict], retrieved: list[dict]) -> Answer:
    """``answer`` giving both sides of every conflict in its context with their citations
    and asking which source to trust: what the model left out is added as a section."""
    conflicts = shown(conflicts, retrieved)
    if not conflicts:
        return answer
    cited = set(cited_ids(answer.text))
    missing = [c for c in conflicts if not {c["first"], c["second"]} <= cited]
    if missing:
        answer.text = f"{answer.text.rstrip()}\n\n{conflict_section(missing)}"
    elif not asks_which_to_trust(answer.text) or not all(
        states_both(answer.text, c) for c in conflicts
    ):  # the question that names both versions
        answer.text = f"{answer.text.rstrip()}\n\n{trust_question(conflicts)}"
    have = {c["id"] for c in answer.citations}
    by_id = {c["id"]: c for c in retrieved}
    added = [
        {k: v for k, v in by_id[cid].items() if k != "context_text"}
        for cid in cited_ids(answer.text)
        if cid in by_id and cid not in have
    ]
    answer.citations = [*answer.citations, *added]
    answer.sources = unique([*answer.sources, *(c["source"] for c in added)])
    return answer


_ALARM_HEADING = re.compile(r"^[ \t]*[*#_ ]*conflicts? detected\b", re.IGNORECASE)
# a line that opens another part of the answer ("**Conclusion**", "### Summary", "Answer:")
_NEXT_HEADING = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]|\*\*[^*\n]{2,60}\*\*[ \t]*:?[ \t]*$|\w[\w ]{1,40}:[ \t]*$)"
)


def _one_source_alarms(raw: str) -> str:
    """``raw`` without each "CONFLICT DETECTED" section that cites fewer than two passages:
    its heading, the paragraph under it, and a question after it about which source to
    trust. Sources cannot disagree with one passage or none: the 1.5B model heads with it
    a gap it sees ("The passage does not provide any information about why the mill shut
    down") or one passage's own words ("Fourteenth … Fifteenth"), under an answer that
    said the opposite."""
    lines = raw.split("\n")
    kept: list[str] = []
    i = 0
    while i < len(lines):
        if not _ALARM_HEADING.match(lines[i]):
            kept.append(lines[i])
            i += 1
            continue
        end = i + 1
        if not _ALARM_HEADING.sub("", lines[i]).strip(" \t*_:.-"):  # the paragraph is below
            while end < len(lines) and not lines[end].strip():
                end += 1
        while end < len(lines) and lines[end].strip() and not _NEXT_HEADING.match(lines[end]):
            end += 1
        section = "\n".join(lines[i:end])
        if len(set(cited_ids(section))) >= 2:
            kept.extend(lines[i:end])
        else:
            after = end
            while after < len(lines) and not lines[after].strip():
                after += 1
            if after < len(lines) and asks_which_to_trust(lines[after]):
                end = after + 1
        i = end
    return "\n".join(kept)


def without_false_alarm(raw: str) -> str:
    """``raw`` without a false conflict alarm, for a context whose passages do not
    disagree: a "CONFLICT DETECTED" heading followed by bare ids and no versions (the 1.5B
    model writes one now and then: in 2 of 60 hybrid answers, an alarm that says nothing
    and cites passages for it), or a section citing fewer than two passages
    (:func:`_one_source_alarms`). An answer that is nothing else is left as it is."""
    text = _one_source_alarms(_EMPTY_ALARM.sub("", raw))
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return text if text and text != raw.strip() else raw
