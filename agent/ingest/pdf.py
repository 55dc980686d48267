"""PDF: text per page with 1-based page numbers (pypdf)."""

from __future__ import annotations

import io

from agent.ingest.document import Paragraph, ParsedDocument, UnreadableDocument, blocks, unwrap


def parse_pdf(data: bytes, default_title: str) -> ParsedDocument:
    """PDF: text per page with its 1-based page number; encrypted files need an empty password."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise UnreadableDocument("the PDF is encrypted with a password")
        pages = list(reader.pages)
    except UnreadableDocument:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise UnreadableDocument(f"the PDF could not be read: {exc}") from exc
    paragraphs: list[Paragraph] = []
    for number, page in enumerate(pages, start=1):
        try:
            text = page.extract_text() or ""
        except Exception as exc:  # pypdf raises many types on damaged content streams
            raise UnreadableDocument(f"page {number} of the PDF could not be read: {exc}") from exc
        for block in blocks(text):
            body = unwrap(block)
            if body:
                paragraphs.append(Paragraph(body, page=number))
    meta = reader.metadata or {}
    title = (meta.get("/Title") or "").strip() or default_title
    author = (meta.get("/Author") or "").strip() or None
    return ParsedDocument(
        title=title, file_type="pdf", paragraphs=paragraphs, author=author, page_count=len(pages)
    )
