"""Chapter requests on real books (Alice in Wonderland, Pride and Prejudice) through the chat
graph, with the extractive model: the right chapter's stored summary, citations into that
chapter, the chapter's passages when no summary is stored, and the list of chapters when a
reference fits several chapters or none."""

from __future__ import annotations

import re
import uuid

import pytest
from langchain_core.messages import HumanMessage
from sqlalchemy import text

from agent.chat.chapters import chapter_turn, load_library, match_chapters
from agent.db import summaries as store
from agent.db.scope import SearchScope
from agent.ingest.pipeline import ingest_bytes, ingest_file
from agent.ingest.sentences import split_sentences
from agent.library.accounts import resolve_user
from agent.retrieval.citations import cited_ids
from agent.summaries.builder import summarize_document
from agent.summaries.writers import ExtractiveSummaryWriter
from graphs.chat import graph
from graphs.context import Context
from tests.support.fakes import RecordingModel, answer_with
from tests.support.paths import ALICE, PRIDE

MAD_TEA_PARTY = "CHAPTER VII. A Mad Tea-Party"


def _ask(question: str):
    return {"messages": [HumanMessage(question)]}


def _plain(answer: str) -> str:
    """The answer without its citation ids."""
    return re.sub(r"\s*#chk_[0-9a-f]{8}", "", answer)


@pytest.fixture(scope="module")
async def library(services):
    """A reader with Alice (summarized by the extractive writer) and Pride and Prejudice
    (no summaries): ``(user, alice id, pride id)``."""
    user = await resolve_user(services, f"chapters-{uuid.uuid4().hex[:6]}")
    alice = await ingest_file(services, user.id, ALICE)
    pride = await ingest_file(services, user.id, PRIDE)
    await summarize_document(services, alice.document_id, writer=ExtractiveSummaryWriter())
    return user, alice.document_id, pride.document_id


@pytest.fixture
def recorder(monkeypatch):
    return answer_with(monkeypatch, RecordingModel(prompts=[]))


async def _chapter_summaries(services, document_id) -> dict[str | None, str]:
    async with services.engine.connect() as conn:
        stored = await store.chapter_summaries(conn, document_id)
    return {c.chapter_title: c.summary for c in stored}


async def _chapter_of_chunks(services, chunk_ids: list[str]) -> set[tuple[uuid.UUID, str]]:
    """(document, chapter title) of the chunks, read from their parents."""
    async with services.engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT c.document_id, p.chapter_title FROM child_chunks c "
                "JOIN parent_chunks p ON p.id = c.parent_id WHERE c.id = ANY(:ids)"
            ),
            {"ids": [uuid.UUID(i) for i in chunk_ids]},
        )
        return {(r.document_id, r.chapter_title) for r in rows}


def _assert_cites_only(state, document_id, chapter: str) -> None:
    """The answer cites, and the turn was given, only passages of that chapter."""
    ids = cited_ids(state["answer"])
    assert ids, state["answer"]
    assert set(ids) == {c["id"] for c in state["citations"]} <= set(state["chunk_map"])
    for c in state["citations"]:
        assert c["chapter"] == chapter and c["document_id"] == str(document_id)
        assert state["chunk_map"][c["id"]] == c["chunk_id"]


async def test_a_chapter_is_answered_from_its_stored_summary(services, library, recorder):
    user, alice, _ = library
    summaries = await _chapter_summaries(services, alice)
    chat_id = str(uuid.uuid4())
    state = await graph.ainvoke(
        _ask("Summarize chapter 7"),
        context=Context(user=user.name, book=str(alice), chat_id=chat_id),
    )
    assert state["route"] == "chapter_summary"
    assert state["model_used"] == "chapter_summary_path"
    assert MAD_TEA_PARTY in state["route_reason"] and "stored summary" in state["route_reason"]
    # the model was given chapter VII's summary, not its neighbours'
    prompt = recorder.prompts[-1][-1].content
    assert summaries[MAD_TEA_PARTY] in prompt
    assert summaries["CHAPTER VI. Pig and Pepper"] not in prompt
    assert summaries["CHAPTER VIII. The Queen’s Croquet-Ground"] not in prompt
    # ... answered from it, with citations into the chapter
    first = split_sentences(summaries[MAD_TEA_PARTY])[0]
    assert first.rstrip(".") in _plain(state["answer"]), state["answer"]
    _assert_cites_only(state, alice, MAD_TEA_PARTY)
    assert await _chapter_of_chunks(services, list(state["chunk_map"].values())) == {
        (alice, MAD_TEA_PARTY)
    }
    async with services.engine.connect() as conn:
        saved = (
            await conn.execute(
                text(
                    "SELECT route, model_used, retrieved_chunk_ids FROM chat_messages "
                    "WHERE chat_id = :c AND role = 'assistant'"
                ),
                {"c": uuid.UUID(chat_id)},
            )
        ).one()
    assert saved.route == "chapter_summary" and saved.model_used == "chapter_summary_path"
    assert {str(i) for i in saved.retrieved_chunk_ids} == set(state["chunk_map"].values())


@pytest.mark.parametrize(
    ("question", "chapter"),
    [
        ("what happens in chapter VII", MAD_TEA_PARTY),
        ("What happens in 'A Mad Tea-Party'?", MAD_TEA_PARTY),
        ("What happens in A Mad Tea-Party?", MAD_TEA_PARTY),  # unquoted, found in the titles
        ("recap the third chapter", "CHAPTER III. A Caucus-Race and a Long Tale"),
        ("give me a summary of chapter twelve", "CHAPTER XII. Alice’s Evidence"),
        ("summarize the last chapter", "CHAPTER XII. Alice’s Evidence"),
    ],
)
async def test_every_way_of_naming_a_chapter(services, library, question, chapter):
    user, alice, _ = library
    summaries = await _chapter_summaries(services, alice)
    state = await graph.ainvoke(_ask(question), context=Context(user=user.name, book=str(alice)))
    assert state["route"] == "chapter_summary", state["route_reason"]
    assert state["model_used"] == "chapter_summary_path"
    assert chapter in state["route_reason"]
    said = _plain(state["answer"])
    assert any(s.rstrip(".") in said for s in split_sentences(summaries[chapter])), said
    _assert_cites_only(state, alice, chapter)


async def test_chapters_line_up_with_the_stored_summaries(services, library):
    """Every chapter the path resolves carries the stored summary of the same index and title
    (the path groups sections as the summary job does)."""
    user, alice, _ = library
    lib = await load_library(services, SearchScope(user_id=user.id, document_ids=(alice,)))
    chapters = next(iter(lib.values()))
    async with services.engine.connect() as conn:
        stored = await store.chapter_summaries(conn, alice)
    assert [(c.index, c.title) for c in chapters] == [
        (s.chapter_index, s.chapter_title) for s in stored
    ]
    titled = [c for c in chapters if c.title]
    assert len(titled) == 12
    for number, chapter in enumerate(titled, start=1):
        found = match_chapters(f"summarize chapter {number}", lib)
        assert found == [chapter]


async def test_without_a_summary_the_chapter_s_passages_answer(services, library, recorder):
    """Only Pride and Prejudice has a chapter 40, and it has no summaries: its passages."""
    user, _, pride = library
    assert not await _chapter_summaries(services, pride)
    state = await graph.ainvoke(_ask("Summarize chapter 40"), context=Context(user=user.name))
    assert state["route"] == "chapter_summary"
    assert state["model_used"] == "chapter_passages_path"
    assert "no summary stored" in state["route_reason"]
    _assert_cites_only(state, pride, "CHAPTER XL.")
    prompt = recorder.prompts[-1][-1].content
    assert "Stored summary" not in prompt
    # the passages given come from the chapter, in reading order, spread over it, and the
    # answer quotes them
    async with services.engine.connect() as conn:
        rows = (
            await conn.execute(
                text(
                    "SELECT c.id, c.text FROM child_chunks c JOIN parent_chunks p "
                    "ON p.id = c.parent_id WHERE c.document_id = :d AND p.chapter_title = :t "
                    "ORDER BY c.chunk_index"
                ),
                {"d": pride, "t": "CHAPTER XL."},
            )
        ).all()
    order = {str(r.id): i for i, r in enumerate(rows)}
    given = [order[cid] for cid in state["chunk_map"].values()]
    assert given == sorted(given) and given[0] == 0 and len(given) >= 2
    chapter_text = " ".join(" ".join(r.text.split()) for r in rows)
    quoted = [s for s in split_sentences(_plain(state["answer"])) if s]
    assert quoted and all(s.rstrip(".") in chapter_text for s in quoted), quoted


async def test_an_ambiguous_chapter_gets_the_candidates_and_a_question(services, library):
    user, alice, pride = library
    state = await graph.ainvoke(_ask("summarize chapter 2"), context=Context(user=user.name))
    assert state["route"] == "chapter_summary" and state["model_used"] == "chapter_list"
    assert "CHAPTER II. The Pool of Tears" in state["answer"]
    assert "CHAPTER II." in state["answer"].replace("CHAPTER II. The Pool", "")
    async with services.engine.connect() as conn:
        titles = await conn.execute(
            text("SELECT id, title FROM documents WHERE id = ANY(:ids)"), {"ids": [alice, pride]}
        )
        for row in titles:  # each candidate names its book
            assert row.title in state["answer"]
    assert "Which one" in state["answer"]
    assert state["citations"] == [] and not cited_ids(state["answer"])
    # choosing the book, or naming it, settles it
    chosen = await graph.ainvoke(
        _ask("summarize chapter 2"), context=Context(user=user.name, book=str(alice))
    )
    assert chosen["model_used"] == "chapter_summary_path"
    _assert_cites_only(chosen, alice, "CHAPTER II. The Pool of Tears")
    named = await graph.ainvoke(
        _ask("summarize chapter 2 of Pride and Prejudice"), context=Context(user=user.name)
    )
    assert named["model_used"] == "chapter_passages_path"
    _assert_cites_only(named, pride, "CHAPTER II.")
    # a missing chapter of a named book lists that book's chapters only
    missing = await graph.ainvoke(
        _ask("summarize chapter 99 of Pride and Prejudice"), context=Context(user=user.name)
    )
    assert missing["model_used"] == "chapter_list" and "CHAPTER XXIX." in missing["answer"]
    assert "- PREFACE" in missing["answer"]  # the editor's preface is a part of its own
    assert "The Pool of Tears" not in missing["answer"] and "more" in missing["answer"]


@pytest.mark.parametrize(
    "question", ["Summarize chapter 99", "summarize the chapter 'The Walrus Dance'"]
)
async def test_a_missing_chapter_gets_the_list_of_chapters(services, library, question):
    user, alice, _ = library
    state = await graph.ainvoke(_ask(question), context=Context(user=user.name, book=str(alice)))
    assert state["route"] == "chapter_summary" and state["model_used"] == "chapter_list"
    assert "couldn't find" in state["answer"]
    for title in (
        "CHAPTER I. Down the Rabbit-Hole",
        MAD_TEA_PARTY,
        "CHAPTER XII. Alice’s Evidence",
    ):
        assert title in state["answer"]
    assert "Which chapter" in state["answer"] and state["citations"] == []


async def test_parts_of_a_book_without_chapter_titles(services, new_user):
    """A book without chapter headings is summarized in parts: "summary of part two" is the
    second part, from the user's only book."""
    user = await new_user("parts")
    body = "\n".join(
        line for line in ALICE.read_text().splitlines() if not line.startswith("CHAPTER")
    )
    book = await ingest_bytes(services, user.id, body.encode(), "alice-untitled.txt")
    await summarize_document(services, book.document_id, writer=ExtractiveSummaryWriter())
    async with services.engine.connect() as conn:
        parts = await store.chapter_summaries(conn, book.document_id)
    assert len(parts) >= 3 and all(p.chapter_title is None for p in parts)
    state = await graph.ainvoke(_ask("summary of part two"), context=Context(user=user.name))
    assert state["route"] == "chapter_summary" and state["model_used"] == "chapter_summary_path"
    assert "Part 2" in state["route_reason"]
    assert split_sentences(parts[1].summary)[0].rstrip(".") in _plain(state["answer"])
    assert state["citations"]
    # the cited chunks lie in the second part's sections
    per_part = services.settings.summary_parents_per_part
    async with services.engine.connect() as conn:
        indexes = (
            await conn.execute(
                text(
                    "SELECT p.chunk_index FROM child_chunks c JOIN parent_chunks p "
                    "ON p.id = c.parent_id WHERE c.id = ANY(:ids)"
                ),
                {"ids": [uuid.UUID(c["chunk_id"]) for c in state["citations"]]},
            )
        ).scalars()
        assert all(per_part <= i < 2 * per_part for i in indexes)


async def test_without_chapters_the_request_falls_back_to_passages(services, new_user):
    user = await new_user("nochapters")
    await ingest_bytes(
        services, user.id, b"A short note: the walrus counted the oysters at dawn.", "n.txt"
    )
    state = await graph.ainvoke(_ask("Summarize chapter 3"), context=Context(user=user.name))
    assert state["route"] == "hybrid"
    assert "no book in scope has chapters" in state["route_reason"]


@pytest.mark.parametrize("spec", ["local", "openai:gpt-4o-mini"])
async def test_the_cpu_model_reads_a_shorter_chapter_prompt(services, library, spec):
    # the 1.5B model reads ~100 prompt tokens/s on 2 cores: a chapter request gives it the
    # stored summary and a few short passages to cite, a hosted model the full budget
    user, alice, _ = library
    settings = services.settings
    scope = SearchScope(user_id=user.id, document_ids=(alice,))
    turn = await chapter_turn(services, "Summarize chapter 7", scope, spec=spec)
    summary = (await _chapter_summaries(services, alice))[MAD_TEA_PARTY]
    prompt = turn.messages[-1].content
    assert summary in prompt and turn.retrieved
    read = len(summary) + sum(len(p["context_text"]) for p in turn.retrieved)
    budget = max(settings.context_budget(spec, "chapter"), len(summary) + 400)
    assert read <= budget + 50 * len(turn.retrieved)  # a cut ends at a word boundary
    if spec == "local":
        assert settings.context_budget(spec, "chapter") < settings.context_budget(spec)
    else:  # more of the chapter's passages than the CPU model's whole chapter budget
        assert read > settings.local_chapter_context_chars
