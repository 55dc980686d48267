"""Pre-computed summaries: all three levels, model versioning, resume after failure or kill,
the per-document lock, the background worker, the table of contents and delete cascade."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import uuid

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from sqlalchemy import text

from agent.db import summaries as store
from agent.ingest.pipeline import ingest_bytes
from agent.library.documents import delete_user_document, document_summaries
from agent.summaries.builder import (
    NothingToSummarize,
    SummaryBusy,
    fit_to_budget,
    group_chapters,
    summarize_document,
)
from agent.summaries.worker import SummaryWorker
from agent.summaries.writers import LLMSummaryWriter, Summary, clean_labels, parse_summary
from tests.support.fakes import CountingWriter
from tests.support.programs import ROOT, program_env
from tests.support.samples import book_text


async def _ingest_book(services, user, **kwargs):
    data = book_text(**kwargs).encode()
    result = await ingest_bytes(services, user.id, data, "tale.txt")
    assert result.parents >= 3
    return result


async def _state(services, doc_id):
    async with services.engine.connect() as conn:
        row = (
            await conn.execute(
                text(
                    "SELECT summary_status, summary_done, summary_total, summary_model, "
                    "global_summary, summary_error FROM documents WHERE id = :d"
                ),
                {"d": doc_id},
            )
        ).one()
        parents = await store.parents_for_summary(conn, doc_id)
        chapters = await store.chapter_summaries(conn, doc_id)
    return row, parents, chapters


async def test_all_three_levels_are_written_with_their_model(services, new_user):
    user = await new_user("sum")
    result = await _ingest_book(services, user)
    row, _, _ = await _state(services, result.document_id)
    assert row.summary_status == "pending"  # searchable now, summaries later
    writer = CountingWriter()
    seen = []
    report = await summarize_document(
        services, result.document_id, writer=writer, progress=seen.append
    )
    row, parents, chapters = await _state(services, result.document_id)
    assert report.sections == len(parents) == writer.sections == report.sections_written
    assert [c.chapter_title for c in chapters] == [None, "CHAPTER 1.", "CHAPTER 2.", "CHAPTER 3."][
        -len(chapters) :
    ]
    assert writer.chapters == len(chapters) and writer.books == 1
    assert all(p.concise_summary and p.summary_model == "fake-writer" for p in parents)
    assert all(c.model == "fake-writer" and "tides" in c.topic_labels for c in chapters)
    assert row.summary_status == "done" and row.summary_model == "fake-writer"
    assert row.global_summary.startswith("Executive summary")
    assert row.summary_done == row.summary_total == len(parents) + len(chapters) + 1
    assert seen[-1].stage == "book" and seen[-1].done == seen[-1].total
    assert [p.done for p in seen] == sorted(p.done for p in seen)


async def test_same_model_keeps_and_new_model_rewrites(services, new_user):
    user = await new_user("sum")
    result = await _ingest_book(services, user)
    await summarize_document(services, result.document_id, writer=CountingWriter("model-a"))
    again = CountingWriter("model-a")
    report = await summarize_document(services, result.document_id, writer=again)
    assert again.sections == again.chapters == again.books == 0
    assert not report.book_written
    other = CountingWriter("model-b")
    await summarize_document(services, result.document_id, writer=other)
    row, parents, chapters = await _state(services, result.document_id)
    assert other.sections == len(parents) and other.books == 1
    assert {p.summary_model for p in parents} == {c.model for c in chapters} == {"model-b"}
    forced = CountingWriter("model-b")
    await summarize_document(services, result.document_id, writer=forced, force=True)
    assert forced.sections == len(parents)


async def test_a_failed_run_resumes_where_it_stopped(services, new_user):
    user = await new_user("sum")
    result = await _ingest_book(services, user)
    with pytest.raises(RuntimeError, match="model went away"):
        await summarize_document(services, result.document_id, writer=CountingWriter(fail_after=2))
    row, parents, _ = await _state(services, result.document_id)
    assert row.summary_status == "failed" and "model went away" in row.summary_error
    assert row.summary_done == 2 and sum(bool(p.concise_summary) for p in parents) == 2
    resumed = CountingWriter()
    report = await summarize_document(services, result.document_id, writer=resumed)
    assert resumed.sections == report.sections_written == len(parents) - 2
    row, _, _ = await _state(services, result.document_id)
    assert row.summary_status == "done" and row.summary_error is None


async def test_a_document_is_summarized_by_one_worker_at_a_time(services, new_user):
    user = await new_user("sum")
    result = await _ingest_book(services, user)
    async with services.engine.connect() as raw:
        conn = await raw.execution_options(isolation_level="AUTOCOMMIT")
        assert await store.try_lock_document(conn, result.document_id)
        with pytest.raises(SummaryBusy):
            await summarize_document(services, result.document_id, writer=CountingWriter())
        await store.unlock_document(conn, result.document_id)
    await summarize_document(services, result.document_id, writer=CountingWriter())


async def test_short_documents_have_nothing_to_summarize(services, new_user):
    user = await new_user("sum")
    result = await ingest_bytes(services, user.id, b"A short note about walruses.", "n.txt")
    row, _, _ = await _state(services, result.document_id)
    assert row.summary_status == "none"
    with pytest.raises(NothingToSummarize):
        await summarize_document(services, result.document_id, writer=CountingWriter())


async def test_worker_summarizes_pending_documents(services, new_user, monkeypatch):
    user = await new_user("sum")
    result = await _ingest_book(services, user)
    writer = CountingWriter("worker-model")

    async def fake_writer(settings, spec=None):
        return writer

    monkeypatch.setattr("agent.summaries.builder.summary_writer", fake_writer)
    worker = SummaryWorker(services, poll_seconds=0.05)
    worker.start()
    try:
        for _ in range(200):
            row, _, _ = await _state(services, result.document_id)
            if row.summary_status == "done":
                break
            await asyncio.sleep(0.05)
    finally:
        await worker.stop()
    assert row.summary_status == "done" and row.summary_model == "worker-model"


async def test_table_of_contents_and_delete_cascade(services, new_user):
    user = await new_user("sum")
    result = await _ingest_book(services, user, chapters=4)
    await summarize_document(services, result.document_id, writer=CountingWriter())
    summary = await document_summaries(services, user.id, result.document_id)
    toc = summary["table_of_contents"]
    titles = [c["title"] for c in toc["chapters"]]
    assert titles[-4:] == ["CHAPTER 1.", "CHAPTER 2.", "CHAPTER 3.", "CHAPTER 4."]
    assert toc["topics"][0] == "oysters"  # the most frequent label comes first
    assert summary["global_summary"] and len(summary["chapters"]) == len(titles)
    other = await new_user("sum")
    assert await document_summaries(services, other.id, result.document_id) is None
    async with services.engine.connect() as conn:
        capped = await store.table_of_contents(
            conn, result.document_id, max_chapters=2, max_topics=1
        )
    assert len(capped.chapters) == 2 and len(capped.topics) == 1
    assert await delete_user_document(services, user.id, result.document_id)
    async with services.engine.connect() as conn:
        left = (
            await conn.execute(
                text("SELECT count(*) FROM chapter_summaries WHERE document_id = :d"),
                {"d": result.document_id},
            )
        ).scalar()
    assert left == 0


async def test_llm_writer_reads_the_model_reply(services):
    reply = "SUMMARY: Alice follows a rabbit. She falls a long way.\nTOPICS: Rabbit hole, falling; Alice"
    model = GenericFakeChatModel(messages=iter([AIMessage(reply)]))
    summary = await LLMSummaryWriter(model, "fake").section("Alice", "Chapter I", "text")
    assert summary.text == "Alice follows a rabbit. She falls a long way."
    assert summary.topics == ["rabbit hole", "falling", "alice"]


def test_parse_summary_tolerates_missing_markers():
    assert parse_summary("Just prose here.") == Summary("Just prose here.", [])
    assert parse_summary("summary: x y\ntopics: A,, a, B") == Summary("x y", ["a", "b"])
    assert clean_labels("one, two, three, four, five") == ["one", "two", "three", "four"]


def test_chapters_group_runs_and_budget_fits():
    from agent.db.summaries import ParentForSummary

    def parent(i, chapter):
        return ParentForSummary(uuid.uuid4(), i, chapter, None, "t", None, [], None)

    chapters = group_chapters([parent(0, None), parent(1, "A"), parent(2, "A"), parent(3, "B")], 8)
    assert [(c.heading, len(c.parents)) for c in chapters] == [("Opening", 1), ("A", 2), ("B", 1)]
    parts = group_chapters([parent(i, None) for i in range(5)], 2)
    assert [c.heading for c in parts] == ["Part 1", "Part 2", "Part 3"]
    fitted = fit_to_budget(["word " * 100, "short"], 300)
    assert sum(len(t) for t in fitted) <= 300 + 10 and fitted[1] == "short"


SLOW_SUMMARIZER = textwrap.dedent(
    """
    import asyncio, sys, uuid
    from agent.services import get_services
    from agent.summaries.builder import summarize_document
    from tests.support.fakes import CountingWriter

    class Slow(CountingWriter):
        async def section(self, *args):
            await asyncio.sleep(0.4)
            return await super().section(*args)

    async def main():
        services = await get_services()
        await summarize_document(services, uuid.UUID(sys.argv[1]), writer=Slow("killed-model"))

    asyncio.run(main())
    """
)


async def test_summaries_resume_after_the_process_is_killed(services, new_user):
    user = await new_user("sum")
    result = await _ingest_book(services, user, chapters=4)
    child = subprocess.Popen(
        [sys.executable, "-c", SLOW_SUMMARIZER, str(result.document_id)],
        cwd=ROOT,
        env=program_env(),
    )
    try:
        for _ in range(600):
            row, _, _ = await _state(services, result.document_id)
            if row.summary_done >= 2:
                break
            await asyncio.sleep(0.1)
    finally:
        child.kill()
        child.wait()
    row, parents, _ = await _state(services, result.document_id)
    written = sum(p.summary_model == "killed-model" for p in parents)
    assert row.summary_status == "running" and 2 <= written < len(parents)
    resumed = CountingWriter("killed-model")
    await summarize_document(services, result.document_id, writer=resumed)
    assert resumed.sections == len(parents) - written
    row, _, _ = await _state(services, result.document_id)
    assert row.summary_status == "done"
