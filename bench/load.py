"""HTTP load benchmark (``quire bench load``): many concurrent clients against the real API.

The driver is bounded in requests and in time and talks to loopback addresses only. It
either starts the API itself (``uvicorn api.app:app`` on a free 127.0.0.1 port, on the
database the given :class:`~agent.services.Services` use: ``quire_bench_load`` from the
CLI, the test database from tests/test_load.py) or targets ``url`` (a server that must use
the same database, since users, tokens and the final row counts go through it directly).

Setup: ``users`` fresh users (unique names: every run starts from zero counters), each with
an API token and one small ingested document. Then ``clients`` concurrent clients (client
``n`` acts as user ``n % users``) send requests for ``seconds`` seconds (or until
``max_requests`` have been started), each picking, by the weights of ``mix``:

* ``search``: ``POST /api/search`` for a phrase of the user's document;
* ``ask``: ``POST /api/ask`` with a question about it (a new chat per ask);
* ``upload``: ``POST /api/documents`` with a small text file (ingested inline).

Afterwards every user's ``GET /api/usage`` is summed and ``chat_messages`` rows of the bench
users are counted with SQL: both must equal the asks answered (200) exactly (one user and
one assistant row per ask). Errors are non-2xx answers and transport failures (target 0).

Here: the loopback check, the run and its figures. The clients are
:mod:`bench.load_clients`, the API started for the run :mod:`bench.load_server`.
"""

from __future__ import annotations

import asyncio
import ipaddress
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import httpx
import numpy as np
from sqlalchemy import text

from agent.services import Services
from bench.load_clients import (
    DEFAULT_MIX,
    ROUTES,
    LoadConfig,
    Tally,
    run_client,
    setup_people,
)
from bench.load_server import ApiServer
from bench.progress import Log, quiet

__all__ = [
    "BENCH_DATABASE",
    "DEFAULT_MIX",
    "ROUTES",
    "ApiServer",
    "LoadConfig",
    "LoadFigures",
    "NotLoopback",
    "RouteFigures",
    "check_loopback",
    "drive",
    "run_load",
    "run_load_bench",
]

BENCH_DATABASE = "quire_bench_load"


class NotLoopback(ValueError):
    """The target URL is not a loopback address: the load driver refuses it."""


def check_loopback(url: str) -> str:
    """``url`` without a trailing slash if it is http(s) on a loopback host; else
    :class:`NotLoopback`."""
    parsed = urlparse(url)
    host = parsed.hostname or ""
    if parsed.scheme not in ("http", "https") or not host:
        raise NotLoopback(f"not an http(s) URL: {url!r}")
    if host != "localhost":
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise NotLoopback(f"refusing a non-loopback target: {host} (use 127.0.0.1)")
    return url.rstrip("/")


@dataclass
class RouteFigures:
    """Requests, errors and latency of one route."""

    route: str
    requests: int
    errors: int
    p50_ms: float | None
    p95_ms: float | None
    max_ms: float | None


@dataclass
class LoadFigures:
    """The outcome of one load run."""

    url: str
    model: str
    clients: int
    users: int
    seconds: float
    """Wall time of the load phase (last request finished)."""
    requests: int
    errors: int
    requests_per_s: float
    routes: list[RouteFigures]
    asks_ok: int
    usage_chat_messages: int
    """``GET /api/usage`` ``chat_messages`` summed over the bench users."""
    assistant_rows: int
    user_rows: int
    counters_match: bool
    error_samples: list[str] = field(default_factory=list)
    setup_s: float = 0.0

    def as_dict(self) -> dict:
        """The figures as JSON-ready dicts."""
        return asdict(self)


def _pct(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 1) if values else None


def _route_figures(tally: Tally) -> list[RouteFigures]:
    """Each route's requests, errors and latency percentiles."""
    return [
        RouteFigures(
            route=r,
            requests=len(tally.latencies[r]) + tally.errors[r],
            errors=tally.errors[r],
            p50_ms=_pct(tally.latencies[r], 50),
            p95_ms=_pct(tally.latencies[r], 95),
            max_ms=round(max(tally.latencies[r]), 1) if tally.latencies[r] else None,
        )
        for r in ROUTES
    ]


async def _rows(services: Services, ids: list[uuid.UUID]) -> dict[str, int]:
    async with services.engine.connect() as conn:
        rows = (
            await conn.execute(
                text(
                    "SELECT role, count(*) AS n FROM chat_messages "
                    "WHERE user_id = ANY(:ids) GROUP BY role"
                ),
                {"ids": ids},
            )
        ).all()
    return {r.role: int(r.n) for r in rows}


async def drive(
    services: Services,
    url: str,
    config: LoadConfig,
    *,
    model: str = "extractive",
    log: Log = quiet,
) -> LoadFigures:
    """Set up users on ``services``' database, load the API at ``url``, check counters."""
    url = check_loopback(url)
    began = time.monotonic()
    people = await setup_people(services, max(1, config.users))
    setup_s = time.monotonic() - began
    log(
        f"{len(people)} users ready in {setup_s:.1f} s; {config.clients} clients for "
        f"{config.seconds:g} s against {url}"
    )
    tally = Tally()
    limits = httpx.Limits(
        max_connections=config.clients + 5, max_keepalive_connections=config.clients
    )
    async with httpx.AsyncClient(
        base_url=url, timeout=config.request_timeout, limits=limits, trust_env=False
    ) as client:
        start = time.monotonic()
        deadline = start + config.seconds
        await asyncio.gather(
            *(run_client(n, client, people, config, deadline, tally) for n in range(config.clients))
        )
        wall = time.monotonic() - start
        usage = 0
        for person in people:
            response = await client.get("/api/usage", headers=person.headers)
            response.raise_for_status()
            usage += response.json()["usage"]["chat_messages"]
    rows = await _rows(services, [p.user_id for p in people])
    routes = _route_figures(tally)
    requests = sum(r.requests for r in routes)
    errors = sum(r.errors for r in routes)
    assistant, user_rows = rows.get("assistant", 0), rows.get("user", 0)
    return LoadFigures(
        url=url,
        model=model,
        clients=config.clients,
        users=len(people),
        seconds=round(wall, 2),
        requests=requests,
        errors=errors,
        requests_per_s=round(requests / wall, 1) if wall else 0.0,
        routes=routes,
        asks_ok=tally.asks_ok,
        usage_chat_messages=usage,
        assistant_rows=assistant,
        user_rows=user_rows,
        counters_match=usage == assistant == user_rows == tally.asks_ok,
        error_samples=tally.samples,
        setup_s=round(setup_s, 2),
    )


async def run_load(
    services: Services,
    config: LoadConfig,
    *,
    url: str | None = None,
    model: str = "extractive",
    log: Log = quiet,
) -> LoadFigures:
    """Load ``url`` (loopback only), or an API started here on ``services``' database."""
    if url is not None:
        return await drive(services, check_loopback(url), config, model=model, log=log)
    server = ApiServer(services, model)
    await asyncio.to_thread(server.start)
    log(f"API started at {server.url} (model {model}, log {server.log_path})")
    try:
        return await drive(services, server.url, config, model=model, log=log)
    finally:
        await asyncio.to_thread(server.stop)


async def run_load_bench(
    config: LoadConfig,
    *,
    url: str | None = None,
    model: str = "extractive",
    database: str = BENCH_DATABASE,
    log: Log = quiet,
) -> tuple[LoadFigures, Path]:
    """The CLI's entry: open services on ``database`` (its own, never the user's data) and
    run :func:`run_load`; returns the figures and the data folder."""
    from agent.config import get_settings
    from bench.common import database_settings, opened_services

    if url is None:
        settings = await asyncio.to_thread(database_settings, database)
    else:  # the running server's own settings name its database
        settings = get_settings().model_copy(update={"database_name": database})
    async with opened_services(settings) as services:
        figures = await run_load(services, config, url=url, model=model, log=log)
    return figures, settings.data_dir
