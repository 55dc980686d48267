"""``quire docs`` (list, show, delete your documents) and ``quire summarize``."""

from __future__ import annotations

import json
import uuid
from typing import Annotated

import typer
from rich.table import Table

from api.cli.common import JsonOption, UserOption, fail, out, progress_bar, run_with_services

docs_app = typer.Typer(help="List, show and delete your documents.", no_args_is_help=True)


def _document_json(doc) -> dict:
    return {
        "id": str(doc.id),
        "title": doc.title,
        "file_type": doc.file_type,
        "doc_type": doc.doc_type,
        "status": doc.status,
        "summary_status": doc.summary_status,
        "summary_progress": f"{doc.summary_done}/{doc.summary_total}",
        "chunks": doc.chunk_count,
        "pages": doc.page_count,
        "source": doc.source_uri,
        "created_at": doc.created_at.isoformat(),
    }


def _document_id(raw: str) -> uuid.UUID:
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise fail(f"{raw!r} is not a document id", 2) from None


def _no_such_document(document_id: str) -> typer.Exit:
    return fail(f"no document {document_id} for this user")


@docs_app.command("list")
def docs_list(user: UserOption = None, as_json: JsonOption = False) -> None:
    """Your documents, newest first, with ingestion and summary status."""
    from agent.library.accounts import resolve_user
    from agent.library.documents import list_user_documents

    async def work(services):
        owner = await resolve_user(services, user)
        return [_document_json(d) for d in await list_user_documents(services, owner.id)]

    docs = run_with_services(work)
    if as_json:
        print(json.dumps(docs, indent=2))
        return
    table = Table("id", "title", "type", "chunks", "status", "summary")
    for d in docs:
        table.add_row(
            d["id"], d["title"], d["doc_type"], str(d["chunks"]), d["status"], d["summary_status"]
        )
    out.print(table)


@docs_app.command("show")
def docs_show(document_id: str, user: UserOption = None) -> None:
    """One document's details, summaries and table of contents as JSON."""
    from agent.library.accounts import resolve_user
    from agent.library.documents import document_summaries, get_user_document

    doc_id = _document_id(document_id)

    async def work(services):
        owner = await resolve_user(services, user)
        doc = await get_user_document(services, owner.id, doc_id)
        if doc is None:
            return None
        details = _document_json(doc)
        details["summaries"] = await document_summaries(services, owner.id, doc_id)
        return details

    details = run_with_services(work)
    if details is None:
        raise _no_such_document(document_id)
    print(json.dumps(details, indent=2))


@docs_app.command("delete")
def docs_delete(document_id: str, user: UserOption = None) -> None:
    """Delete a document with every chunk, vector, keyword entry and summary."""
    from agent.library.accounts import resolve_user
    from agent.library.documents import delete_user_document

    doc_id = _document_id(document_id)

    async def work(services):
        return await delete_user_document(services, (await resolve_user(services, user)).id, doc_id)

    if not run_with_services(work):
        raise _no_such_document(document_id)
    out.print(f"deleted {document_id}")


def summarize(
    document_id: str,
    user: UserOption = None,
    force: Annotated[
        bool, typer.Option("--force", help="Rewrite every summary, not only missing ones.")
    ] = False,
    model: Annotated[
        str | None,
        typer.Option(help="Model spec (default QUIRE_SUMMARY_MODEL or the chat model)."),
    ] = None,
) -> None:
    """(Re)write a document's summaries: per section, per chapter, and for the whole book.

    Resumable: an interrupted run continues where it stopped; summaries already written by
    the same model are kept unless --force.
    """
    from agent.library.accounts import resolve_user
    from agent.library.documents import get_user_document
    from agent.summaries.builder import NothingToSummarize, SummaryBusy, summarize_document
    from agent.summaries.writers import summary_writer

    doc_id = _document_id(document_id)

    async def work(services):
        owner = await resolve_user(services, user)
        doc = await get_user_document(services, owner.id, doc_id)
        if doc is None:
            raise _no_such_document(document_id)
        writer = await summary_writer(services.settings, model)
        with progress_bar() as bar:
            task = bar.add_task(f"{doc.title}: summaries", total=None)

            def progress(p) -> None:
                bar.update(
                    task, description=f"{doc.title}: {p.stage}", completed=p.done, total=p.total
                )

            try:
                return await summarize_document(
                    services, doc_id, writer=writer, force=force, progress=progress
                )
            except (SummaryBusy, NothingToSummarize) as exc:
                raise fail(exc) from None

    report = run_with_services(work)
    out.print(
        f"summaries by {report.model}: wrote {report.sections_written}/{report.sections} sections, "
        f"{report.chapters_written}/{report.chapters} chapters, "
        f"book {'written' if report.book_written else 'kept'} in {report.seconds:.1f} s"
    )
