"""Every kind of source one ingestion can take: a file path, uploaded bytes, a URL, pasted
text, or a transcript. The ingest graph, the API and the CLI all go through
:func:`ingest_source`.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import text as sql
from sqlalchemy.ext.asyncio import AsyncConnection

from agent.ingest.document import ParsedDocument, UnreadableDocument
from agent.ingest.parse import SUPPORTED_TYPES, parse_bytes
from agent.ingest.pipeline import IngestResult, Progress, ingest_bytes, ingest_file, ingest_parsed
from agent.ingest.pipeline import content_hash as bytes_hash
from agent.ingest.sanitize import sanitize_text
from agent.services import Services
from agent.summaries.writers import clean_labels, topic_tags


class InvalidSource(ValueError):
    """The request names no source, several, or a malformed one."""


@dataclass(frozen=True)
class IngestRequest:
    """One source to ingest: exactly one of ``path``, ``content_base64``, ``url``, ``text``
    or ``raw_text`` (a transcript, with optional ``refined_text``, ``tags``, ``echotag``)."""

    path: str | None = None
    content_base64: str | None = None
    filename: str | None = None
    url: str | None = None
    text: str | None = None
    raw_text: str | None = None
    refined_text: str | None = None
    tags: list[str] = field(default_factory=list)
    echotag: str | None = None
    title: str | None = None
    corpus: str = "default"

    @property
    def kind(self) -> str:
        """``file``, ``upload``, ``url``, ``text`` or ``transcript``."""
        given = {
            "file": self.path,
            "upload": self.content_base64,
            "url": self.url,
            "text": self.text,
            "transcript": self.raw_text,
        }
        named = [k for k, v in given.items() if v is not None]
        if len(named) != 1:
            raise InvalidSource(
                "give exactly one source: path, content_base64 (with filename), url, text "
                f"(with title) or raw_text (a transcript); got {', '.join(named) or 'none'}"
            )
        return named[0]


async def ingest_source(
    services: Services,
    user_id: uuid.UUID,
    request: IngestRequest,
    *,
    progress: Progress | None = None,
) -> IngestResult:
    """Ingest ``request`` for ``user_id``; errors are :class:`InvalidSource`,
    ``UnsupportedDocument``/``UnreadableDocument``, or the URL fetcher's errors."""
    kind = request.kind
    common = {"corpus": request.corpus, "progress": progress}
    if kind == "file":
        path = Path(request.path or "")
        if not path.is_file():
            raise InvalidSource(f"{path}: no such file")
        return await ingest_file(services, user_id, path, title=request.title, **common)
    if kind == "upload":
        if not request.filename:
            raise InvalidSource("content_base64 needs a filename (its extension gives the type)")
        try:
            data = base64.b64decode(request.content_base64 or "", validate=True)
        except (binascii.Error, ValueError):
            raise InvalidSource("content_base64 is not valid base64") from None
        return await ingest_bytes(
            services, user_id, data, Path(request.filename).name, title=request.title, **common
        )
    if kind == "url":
        return await ingest_url(services, user_id, request.url or "", title=request.title, **common)
    if kind == "text":
        return await ingest_text(
            services, user_id, request.text or "", request.title, tags=request.tags, **common
        )
    return await ingest_transcript(
        services,
        user_id,
        request.raw_text or "",
        request.refined_text,
        tags=request.tags,
        echotag=request.echotag,
        title=request.title,
        **common,
    )


async def ingest_url(
    services: Services,
    user_id: uuid.UUID,
    url: str,
    *,
    title: str | None = None,
    corpus: str = "default",
    tags: list[str] | None = None,
    progress: Progress | None = None,
) -> IngestResult:
    """Fetch a web page or file (SSRF-guarded, size- and time-limited) and ingest it.

    The URL is the document's source: fetching it again after it changed replaces it.
    """
    from agent.ingest.fetch import fetch_url

    if progress:
        progress("fetch", 0, 1)
    page = await fetch_url(url, services.settings)
    return await ingest_bytes(
        services,
        user_id,
        page.data,
        page.filename,
        title=title,
        corpus=corpus,
        source_uri=url,
        tags=tags,
        progress=progress,
    )


async def ingest_text(
    services: Services,
    user_id: uuid.UUID,
    text: str,
    title: str | None,
    *,
    corpus: str = "default",
    tags: list[str] | None = None,
    progress: Progress | None = None,
) -> IngestResult:
    """Ingest pasted text under ``title`` (Markdown headings become sections)."""
    if not title or not title.strip():
        raise InvalidSource("pasted text needs a title")
    if not text.strip():
        raise UnreadableDocument(f"{title}: the text is empty")
    return await ingest_bytes(
        services,
        user_id,
        text.encode("utf-8"),
        f"{_safe_stem(title)}.md",
        title=title.strip(),
        corpus=corpus,
        tags=clean_labels(", ".join(tags or []), limit=12),
        progress=progress,
    )


async def ingest_transcript(
    services: Services,
    user_id: uuid.UUID,
    raw_text: str,
    refined_text: str | None = None,
    *,
    tags: list[str] | None = None,
    echotag: str | None = None,
    title: str | None = None,
    corpus: str = "default",
    progress: Progress | None = None,
) -> IngestResult:
    """Store a transcript (seed 002): raw and refined text indexed as one document.

    Without ``tags`` the labeling model proposes 3-6 from the raw text; ``echotag``
    defaults to those tags. Raw and refined text are stored redacted, like every chunk.
    """
    if not raw_text.strip():
        raise UnreadableDocument("the transcript's raw_text is empty")
    raw = sanitize_text(raw_text).text
    refined = sanitize_text(refined_text).text if refined_text and refined_text.strip() else None
    labels = clean_labels(", ".join(tags), limit=12) if tags else []
    if not labels:
        labels = await topic_tags(services.settings, raw)
    echotag = (echotag or "").strip() or ", ".join(labels) or None
    echodate = datetime.now(UTC)
    title = (title or "").strip() or f"Transcript {echodate:%Y-%m-%d %H:%M} UTC"
    body = raw if refined is None else f"{raw}\n\n{refined}"
    parsed: ParsedDocument = parse_bytes(body.encode("utf-8"), "transcript.txt", title)
    parsed = ParsedDocument(
        title=title,
        file_type="transcript",
        paragraphs=parsed.paragraphs,
        metadata={"type": "transcript", "echotag": echotag, "echodate": echodate.isoformat()},
    )

    async def store_parts(conn: AsyncConnection, document_id: uuid.UUID) -> None:
        await conn.execute(
            sql(
                "INSERT INTO transcripts (document_id, raw_text, refined_text, echotag, echodate) "
                "VALUES (:d, :raw, :refined, :tag, :date)"
            ),
            {"d": document_id, "raw": raw, "refined": refined, "tag": echotag, "date": echodate},
        )

    # identity = the content (raw + refined), so the same transcript stored twice is one
    return await ingest_parsed(
        services,
        user_id,
        parsed,
        bytes_hash(body.encode("utf-8")),
        corpus=corpus,
        tags=labels,
        also_store=store_parts,
        progress=progress,
    )


def _safe_stem(title: str) -> str:
    stem = "".join(c if c.isalnum() or c in "-_ " else "_" for c in title.strip())[:80]
    return stem.strip() or "pasted"


def expand_paths(paths: list[Path]) -> list[Path]:
    """Files named directly, plus every supported file below named folders (sorted)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(
                sorted(
                    p
                    for p in path.rglob("*")
                    if p.is_file() and p.suffix.lower() in SUPPORTED_TYPES
                )
            )
        else:
            found.append(path)
    return found
