"""Turning retrieved context into model messages, and model output into a cited answer."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    convert_to_messages,
)

from agent import prompts
from agent.retrieval.anchors import all_invented, without_invented_claims
from agent.retrieval.another_kind import another_kind
from agent.retrieval.asked_amounts import gives_no_amount_asked
from agent.retrieval.asked_names import names_nothing_asked, names_unheld
from agent.retrieval.asked_years import answer_of_another_year
from agent.retrieval.citations import (
    CitableChunk,
    cited_ids,
    guard_citations,
    tidy_spacing,
    unique,
    unknown_citations,
)
from agent.retrieval.echoes import without_example_echoes
from agent.retrieval.figure_qualifiers import figure_for_something_else
from agent.retrieval.held_figures import figures_unheld
from agent.retrieval.pinned_figures import passage_texts, pin_unheld, shown_texts
from agent.retrieval.pointers import (
    says_nothing_new,
    without_absence_citations,
    without_echoed_labels,
    without_pointer_sentences,
    without_prompt_openers,
)
from agent.retrieval.possessor_names import names_the_possessor
from agent.retrieval.quotes import amount_sentence, covering_sentence, pointed_sentence
from agent.retrieval.repeats import without_repeated_sentences
from agent.retrieval.speakers import another_speakers_words
from agent.retrieval.unheld_question_names import ties_to_an_unheld_name
from agent.retrieval.unheld_words import words_unheld


@dataclass
class Answer:
    """A finished answer with everything the UI and the chat log need."""

    text: str
    route: str
    model_used: str
    tokens_used: int = 0
    citations: list[dict] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    chunk_map: dict[str, str] = field(default_factory=dict)
    retrieved_chunk_ids: list[str] = field(default_factory=list)
    retrieval_metrics: dict | None = None
    citations_removed: int = 0
    """Citations of ids the turn did not retrieve, removed by the guard."""
    said_nothing_asked: bool = False
    """The "not found" reply stands for an answer that said nothing the question asked for
    (it restated it, or left the name or amount asked unsaid): the model may finish it
    (:mod:`agent.chat.restated_answer`)."""


def answer_update(answer: Answer) -> dict:
    """The chat state's fields for a finished ``answer``, its reply message included."""
    # every path, not just the grounded ones: a reply without a context (small talk, a
    # stored summary, the web) must not cite chunk ids either, e.g. ids a prompt injection
    # or the conversation history put in the model's mouth; they are removed and counted
    stray = unknown_citations(answer.text, answer.chunk_map)
    if stray:
        answer.text = guard_citations(
            answer.text, [CitableChunk(cid, "") for cid in answer.chunk_map], min_support=10**6
        )
        answer.citations_removed += stray
    return {
        "answer": answer.text,
        "route": answer.route,
        "citations": answer.citations,
        "sources": answer.sources,
        "chunk_map": answer.chunk_map,
        "model_used": answer.model_used,
        "tokens_used": answer.tokens_used,
        "citations_removed": answer.citations_removed,
        "messages": [AIMessage(answer.text, id=str(uuid.uuid4()))],
    }


def with_persona(system: str, persona: str | None) -> str:
    """A system prompt with the chat's persona (tone and role; never the grounding rules)."""
    if not persona:
        return system
    return f"{system}\n\n{prompts.PERSONA_BLOCK.format(persona=persona.strip())}"


def _with_guidance(guidance: str, body: str) -> str:
    return f"{guidance.strip()}\n\n{body}" if guidance.strip() else body


def grounded_messages(
    name: str,
    question: str,
    context: str,
    system: str = prompts.GROUNDED_SYSTEM,
    guidance: str = "",
    persona: str | None = None,
    examples: bool = False,
) -> list[BaseMessage]:
    """System and user messages for answering from context. The system prompt stays a
    stable prefix (the local model reuses its cached tokens); ``guidance`` (the user's
    corrections and the conversation so far) opens the user message. With ``examples``
    the worked exchanges of ``prompts.GROUNDED_EXAMPLES`` follow the system prompt, part of
    the same cached prefix."""
    shown = convert_to_messages(prompts.grounded_example_messages()) if examples else []
    return [
        SystemMessage(with_persona(system.format(name=name), persona)),
        *shown,
        HumanMessage(
            _with_guidance(
                guidance, prompts.GROUNDED_USER.format(context=context, question=question)
            )
        ),
    ]


def general_messages(
    name: str, question: str, guidance: str = "", persona: str | None = None
) -> list[BaseMessage]:
    """Messages for a reply that needs no documents."""
    return [
        SystemMessage(with_persona(prompts.GENERAL_SYSTEM.format(name=name), persona)),
        HumanMessage(_with_guidance(guidance, question)),
    ]


def finish_grounded(
    raw: str,
    retrieved: list[dict],
    *,
    route: str,
    model_used: str,
    tokens_used: int,
    question: str | None = None,
) -> Answer:
    """Guard the citations of a generated answer and collect citations and sources.

    ``retrieved`` are the :func:`chunk_payload` dicts of the chunks that were in the context.
    A sentence said twice keeps its first copy only (:func:`without_repeated_sentences`).
    With the ``question``, sentences copied from the worked examples go first (an answer
    made only of them becomes the plain "not answered" reply: :func:`without_example_echoes`),
    then those stating a name or number that neither it nor any passage holds
    (:func:`without_invented_claims`; on the hybrid path an answer citing nothing whose
    every sentence is such becomes the plain "not answered" reply), and a citation goes
    to the passage holding what its sentence adds to the question. A passage label the
    model echoed at a sentence's start is dropped (:func:`without_echoed_labels`).

    On the hybrid path: sentences after the first that only say where the answer is written
    ("This is stated in the passage #chk_…") are dropped (:func:`without_pointer_sentences`);
    openers naming the prompt's passages ("According to the context passage, …") go
    (:func:`without_prompt_openers`); a sentence that says what the passages leave out loses
    its citations (:func:`without_absence_citations`); and an answer that says nothing the
    question did not (a restated question: :func:`says_nothing_new`) becomes the plain "not
    answered" reply, as does one that leaves a question asking for a name or an amount
    without one (:func:`names_nothing_asked`, :func:`gives_no_amount_asked`) or is about a
    year or a version no passage names (:func:`pin_unheld`) or gives the amount asked for
    only in figures no passage holds (:func:`figures_unheld`) or states for something else
    (:func:`figure_for_something_else`), or says what the passages state of another year
    than the one asked (:func:`answer_of_another_year`), or the name or person
    asked for only in names no passage holds (:func:`names_unheld`), or ties what it says
    to a name of the question no passage holds (:func:`ties_to_an_unheld_name`), or adds to
    the question only words no passage holds (:func:`words_unheld`); one that is only a
    citation id becomes the sentence of that passage which best matches the question,
    quoted (:func:`pointed_sentence`), and one about another amount than the one asked
    for, the passages' sentence stating the amount asked for (:func:`amount_sentence`). An
    answer about another kind of what is asked ("bread flour" for "rye flour") says so
    (:func:`another_kind`), one quoting another speaker's words than those asked for, the
    line of the speaker asked about (:func:`another_speakers_words`), and a "not answered"
    reply over a passage sentence holding every word of the question quotes that sentence
    (:func:`covering_sentence`).
    """
    citable = [CitableChunk(c["id"], c.get("context_text") or c["text"]) for c in retrieved]
    # every id the model wrote outside the context counts, even in a sentence dropped below
    removed = unknown_citations(raw, (c.citation_id for c in citable))
    raw = without_repeated_sentences(raw)  # a looping model's second copy says nothing new
    if question is not None and citable:
        shown = [question, *(c.text for c in citable)]
        raw = without_example_echoes(raw, shown) or prompts.NOT_ANSWERED
        if route == "hybrid" and "chk_" not in raw and all_invented(raw, shown):
            raw = prompts.NOT_ANSWERED  # "£9 an hour * 12 hours = £108": no passage says it
        raw, _ = without_invented_claims(raw, shown)
    raw = without_echoed_labels(raw, [c["source"] for c in retrieved if c.get("source")])
    if route == "hybrid":  # a fact's answer; deep reasoning and summaries discuss passages
        raw = without_prompt_openers(without_pointer_sentences(raw))
    text = guard_citations(raw, citable, question=question or "")
    said_nothing = False
    if route == "hybrid":  # "X is not stated in the passage #chk_…" cites nothing to check
        text = without_absence_citations(text)
        read = shown_texts(retrieved)  # what the model read, labels included
        whole = passage_texts(retrieved)  # and the whole chunks its citations open
        if question and (
            pin_unheld(question, whole)
            or figures_unheld(text, question, read)
            or figure_for_something_else(text, question, read)
            or answer_of_another_year(text, question, read)
            or names_unheld(text, question, read)
            or ties_to_an_unheld_name(text, question, read)
            or words_unheld(text, question, whole)
        ):
            text = prompts.NOT_ANSWERED  # another year's figure, or what no passage gives
        elif question and (kind := _another_kind(text, question, retrieved)):
            text = kind
        elif question and (line := another_speakers_words(text, question, _read_by_id(citable))):
            speaker, words, citation = line
            text = prompts.SPEAKERS_LINE.format(
                speaker=speaker[:1].upper() + speaker[1:], line=words, citation=citation
            )
        elif question and _answers_nothing(text, question):
            said_nothing = text != prompts.NOT_ANSWERED  # the model's words, not a refusal
            text = _quoted_or_not_answered(text, citable, question)
        elif question and (other := amount_sentence(text, _read_by_id(citable), question)):
            text = prompts.QUOTED_ANSWER.format(sentence=other[0], citation=other[1])
        if text == prompts.NOT_ANSWERED and question:  # the question's words, all in one
            text = _covering_quote(question, citable) or text
    by_id = {c["id"]: c for c in retrieved}
    cited = [by_id[cid] for cid in cited_ids(text) if cid in by_id]
    return Answer(
        text=text,
        route=route,
        model_used=model_used,
        tokens_used=tokens_used,
        citations=[{k: v for k, v in c.items() if k != "context_text"} for c in cited],
        sources=unique(c["source"] for c in (cited or retrieved)),
        chunk_map={c["id"]: c["chunk_id"] for c in retrieved},
        retrieved_chunk_ids=[c["chunk_id"] for c in retrieved],
        citations_removed=removed,
        said_nothing_asked=said_nothing and text == prompts.NOT_ANSWERED,
    )


def _answers_nothing(text: str, question: str) -> bool:
    """Whether ``text`` only restates ``question``, or leaves the name or amount it plainly
    asks for unsaid (or names only the question's owner of what is asked)."""
    return (
        says_nothing_new(text, question)
        or names_nothing_asked(text, question)
        or gives_no_amount_asked(text, question)
        or names_the_possessor(text, question)
    )


def _another_kind(text: str, question: str, retrieved: list[dict]) -> str | None:
    """The reply to an answer about another kind of what ``question`` asks for ("bread
    flour" for "rye flour": :func:`another_kind`): what the documents lack, and the kind
    they hold, with the answer's words when they are the passage's; else ``None``."""
    passages = zip((c["id"] for c in retrieved), passage_texts(retrieved), strict=True)
    kind = another_kind(text, question, passages)
    if kind is None:
        return None
    reply = prompts.ANOTHER_KIND.format(asked=kind.asked, said=kind.said)
    return f"{reply} {kind.citation_id}." if kind.answer_keeps_it else f"{reply}: {text}"


def _covering_quote(question: str, citable: list[CitableChunk]) -> str | None:
    """The passages' sentence holding every word of ``question``, quoted
    (:func:`covering_sentence`), or ``None``."""
    covering = covering_sentence(question, _read_by_id(citable))
    if covering is None:
        return None
    return prompts.QUOTED_ANSWER.format(sentence=covering[0], citation=covering[1])


def _read_by_id(citable: list[CitableChunk]) -> dict[str, str]:
    return {c.citation_id: c.text for c in citable}


def _quoted_or_not_answered(text: str, citable: list[CitableChunk], question: str) -> str:
    """The sentence a bare-citation answer points at, quoted; else "not answered"."""
    pointed = pointed_sentence(text, _read_by_id(citable), question)
    if pointed is None:
        return prompts.NOT_ANSWERED
    sentence, citation = pointed
    return prompts.QUOTED_ANSWER.format(sentence=sentence, citation=citation)


_WEB_ID = re.compile(r"#web_(\d+)\b")


def web_messages(
    name: str, question: str, results: str, persona: str | None = None
) -> list[BaseMessage]:
    """Messages for answering from web results (cited as ``#web_N``)."""
    return [
        SystemMessage(with_persona(prompts.WEB_ANSWER_SYSTEM.format(name=name), persona)),
        HumanMessage(f"Web results:\n\n{results}\n\nQuestion: {question}"),
    ]


def finish_web(raw: str, citations: list[dict], *, model_used: str, tokens_used: int) -> Answer:
    """Drop ``#web_N`` ids that were not among the results; keep the cited results."""
    known = {c["id"] for c in citations}
    text = _WEB_ID.sub(lambda m: m.group(0) if m.group(0) in known else "", raw)
    text = tidy_spacing(text).strip()
    used = {f"#web_{n}" for n in _WEB_ID.findall(text)}
    cited = [c for c in citations if c["id"] in used]
    return Answer(
        text=text,
        route="web_search",
        model_used=model_used,
        tokens_used=tokens_used,
        citations=cited,
        sources=unique(c["url"] for c in (cited or citations)),
    )


def mixed_messages(
    name: str,
    question: str,
    context: str,
    web_results: str,
    guidance: str = "",
    persona: str | None = None,
) -> list[BaseMessage]:
    """Messages for answering from document passages and web results together."""
    body = prompts.MIXED_ANSWER_USER.format(
        context=context or "(none)", web=web_results, question=question
    )
    return [
        SystemMessage(with_persona(prompts.MIXED_ANSWER_SYSTEM.format(name=name), persona)),
        HumanMessage(_with_guidance(guidance, body)),
    ]


def finish_mixed(
    raw: str,
    retrieved: list[dict],
    web: list[dict],
    *,
    route: str,
    model_used: str,
    tokens_used: int,
) -> Answer:
    """Guard both kinds of citation: ``#chk_`` against the chunks, ``#web_N`` against the
    results; citations and sources list the documents first, then the web."""
    answer = finish_grounded(
        raw, retrieved, route=route, model_used=model_used, tokens_used=tokens_used
    )
    from_web = finish_web(answer.text, web, model_used=model_used, tokens_used=tokens_used)
    answer.text = from_web.text
    answer.citations = answer.citations + from_web.citations
    documents = answer.sources if any(c.get("kind") != "web" for c in answer.citations) else []
    answer.sources = unique([*documents, *from_web.sources])
    return answer
