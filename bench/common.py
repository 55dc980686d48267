"""Benchmarks that print figures (``quire bench ...`` and ``bench/*.py``), never assertions."""

from __future__ import annotations

import json
import platform
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

from sqlalchemy import text

from agent.config import Settings, get_settings
from agent.db.server import ensure_database, with_database
from agent.ingest.pipeline import ingest_bytes
from agent.library.accounts import resolve_user
from agent.services import Services

QUICK_SUFFIX = "_quick"
"""Appended to a benchmark database's name by ``quire bench --quick``."""
SHARED_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
INGEST_FILES = [
    SHARED_DATA / "books" / "pride-and-prejudice.txt",
    SHARED_DATA / "docs" / "pdf-samples" / "009-pdflatex-geotopo" / "GeoTopo-komprimiert.pdf",
]


@dataclass
class IngestFigures:
    """One document's ingestion figures."""

    file: str
    chunks: int
    parents: int
    total_s: float
    parse_s: float
    chunk_s: float
    embed_s: float
    store_s: float
    chunks_per_s: float
    raw_embed_s: float
    throughput_ratio: float
    """Pipeline throughput / raw embedder throughput on the same chunks (target >= 0.8)."""


async def bench_ingest(services: Services, files: list[Path] | None = None) -> list[IngestFigures]:
    """Ingest each file as a fresh user, then re-embed its chunks raw for the ratio."""
    figures: list[IngestFigures] = []
    embedder = services.embeddings.embedder
    # warm the runtime for every input length once, as a running server would be
    embedder.embed_documents(["word " * n for n in range(4, 300, 4)])
    for path in files or INGEST_FILES:
        user = await resolve_user(services, f"bench-{uuid.uuid4().hex[:8]}")
        data = path.read_bytes()
        result = await ingest_bytes(services, user.id, data, path.name, source_uri=str(path))
        async with services.engine.connect() as conn:
            texts = list(
                (
                    await conn.execute(
                        text(
                            "SELECT text FROM child_chunks WHERE document_id = :d ORDER BY chunk_index"
                        ),
                        {"d": result.document_id},
                    )
                ).scalars()
            )
        start = time.perf_counter()
        embedder.embed_documents(texts)
        raw = time.perf_counter() - start
        t = result.timings
        figures.append(
            IngestFigures(
                file=path.name,
                chunks=result.chunks,
                parents=result.parents,
                total_s=round(result.seconds, 2),
                parse_s=round(t.get("parse", 0.0), 2),
                chunk_s=round(t.get("chunk", 0.0), 2),
                embed_s=round(t.get("embed", 0.0), 2),
                store_s=round(t.get("store", 0.0), 2),
                chunks_per_s=round(result.chunks / result.seconds, 1),
                raw_embed_s=round(raw, 2),
                throughput_ratio=round(raw / result.seconds, 3),
            )
        )
        async with services.engine.begin() as conn:  # leave the store as it was
            await conn.execute(text("DELETE FROM users WHERE id = :u"), {"u": user.id})
    return figures


def database_settings(database: str, base: Settings | None = None) -> Settings:
    """The settings with a benchmark's own database (same server) instead of Quire's."""
    base = base or get_settings()
    update: dict = {"database_name": database}
    if base.database_url:  # external server: the database named in the URL is used as is
        ensure_database(base.database_url, database)
        update["database_url"] = with_database(base.database_url, database).libpq
    return base.model_copy(update=update)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _git_commit() -> str | None:
    import subprocess

    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def machine() -> dict:
    """What the figures were measured on (and which commit)."""
    import os

    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu": _cpu_model(),
        "cpus": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
        "commit": _git_commit(),
        "measured_at": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def write_results(name: str, payload: object, folder: Path) -> Path:
    """Store a benchmark's figures as JSON in ``folder`` and return the path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    rows = [asdict(p) for p in payload] if isinstance(payload, list) else payload
    path.write_text(json.dumps({"machine": machine(), "results": rows}, indent=2))
    return path
