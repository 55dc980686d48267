"""What the benchmarks share: their own databases, services opened and closed, progress
the machine they ran on and the JSON files of their figures.

The ingestion benchmark lives in :mod:`bench.ingest`; its names are importable from here too.
"""

from __future__ import annotations

import contextlib
import json
import platform
import time
from collections.abc import AsyncIterator
from dataclasses import asdict
from pathlib import Path

from agent.config import Settings, get_settings
from agent.db.server import ensure_database, with_database
from agent.services import Services, open_services
from bench.ingest import INGEST_FILES, IngestFigures, bench_ingest
from bench.paths import SHARED_DATA

__all__ = [
    "INGEST_FILES",
    "QUICK_SUFFIX",
    "SHARED_DATA",
    "IngestFigures",
    "bench_ingest",
    "database_settings",
    "forget_earlier_turns",
    "machine",
    "opened_services",
    "write_results",
]

QUICK_SUFFIX = "_quick"
"""Appended to a benchmark database's name by ``quire bench --quick``."""


@contextlib.asynccontextmanager
async def opened_services(settings: Settings) -> AsyncIterator[Services]:
    """Services on ``settings``, closed when the block ends (whatever happens in it)."""
    services = await open_services(settings)
    try:
        yield services
    finally:
        await services.close()


async def forget_earlier_turns(services: Services, user: str) -> int:
    """Delete the remembered turns of the benchmark's ``user`` (how many went), so the next
    question is asked as a first one: without it, a question asked in an earlier run (or
    before it in this one) brings that run's answer into the prompt as "previous
    discussion", which costs prompt tokens and is an answer the model may copy."""
    from agent.db.turns import forget_turns
    from agent.library.accounts import resolve_user

    owner = await resolve_user(services, user)
    async with services.engine.begin() as conn:
        return await forget_turns(conn, owner.id)


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
