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
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import httpx
import numpy as np
from sqlalchemy import text

from agent.services import Services

ROOT = Path(__file__).resolve().parent.parent
BENCH_DATABASE = "quire_bench_load"
ROUTES = ("search", "ask", "upload")
DEFAULT_MIX = {"search": 0.5, "ask": 0.35, "upload": 0.15}

DOCUMENT = (
    "Harbour log of the {marker} ferry\n\n"
    "The {marker} ferry crosses the estuary at dawn and returns before noon. Its captain, "
    "Ottoline Marsh, keeps a tally of passengers in a green ledger and charges a penny a "
    "head. In winter the ferry carries coal, flour and letters to the island of Skerrow.\n\n"
    "The lighthouse keeper on Skerrow feeds the herring gulls every morning and paints the "
    "lamp room blue each spring. Storms close the crossing about ten days a year."
)
QUESTIONS = (
    "Who is the captain of the {marker} ferry?",
    "What does the {marker} ferry carry in winter?",
    "How much does the {marker} ferry charge a passenger?",
)
SEARCHES = ("{marker} ferry captain ledger", "lighthouse keeper herring gulls", "Skerrow coal")
UPLOAD = "Note {n} about the {marker} ferry: the crossing took {n} minutes in fog today.\n"


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


@dataclass(frozen=True)
class LoadConfig:
    """How hard and how long to push."""

    clients: int = 50
    seconds: float = 60.0
    max_requests: int = 100_000
    """No request is started after this many (a second bound besides ``seconds``)."""
    users: int = 10
    mix: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_MIX))
    request_timeout: float = 120.0
    seed: int = 7


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


@dataclass
class _Person:
    user_id: uuid.UUID
    headers: dict[str, str]
    marker: str


@dataclass
class _Tally:
    latencies: dict[str, list[float]] = field(default_factory=lambda: {r: [] for r in ROUTES})
    errors: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ROUTES, 0))
    asks_ok: int = 0
    started: int = 0
    samples: list[str] = field(default_factory=list)

    def error(self, route: str, detail: str) -> None:
        self.errors[route] += 1
        if len(self.samples) < 20:
            self.samples.append(f"{route}: {detail[:300]}")


def _pct(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 1) if values else None


async def _setup_people(services: Services, count: int) -> list[_Person]:
    from agent.ingest.pipeline import ingest_bytes
    from agent.library.accounts import add_user

    run = uuid.uuid4().hex[:6]
    people = []
    for n in range(count):
        user, token = await add_user(services, f"load-{run}-{n}")
        marker = f"skiff{run}{n}"
        await ingest_bytes(
            services, user.id, DOCUMENT.format(marker=marker).encode(), f"{marker}.txt"
        )
        people.append(_Person(user.id, {"Authorization": f"Bearer {token}"}, marker))
    return people


async def _one(client: httpx.AsyncClient, route: str, person: _Person, rng: random.Random, n: int):
    marker = person.marker
    if route == "search":
        query = rng.choice(SEARCHES).format(marker=marker)
        return await client.post("/api/search", headers=person.headers, json={"query": query})
    if route == "ask":
        question = rng.choice(QUESTIONS).format(marker=marker)
        return await client.post("/api/ask", headers=person.headers, json={"question": question})
    body = UPLOAD.format(n=n, marker=marker).encode()
    return await client.post(
        "/api/documents",
        headers=person.headers,
        files={"file": (f"note-{n}.txt", body, "text/plain")},
        data={"tags": "load"},
    )


async def _client(
    number: int,
    client: httpx.AsyncClient,
    people: list[_Person],
    config: LoadConfig,
    deadline: float,
    tally: _Tally,
) -> None:
    rng = random.Random(config.seed * 1000 + number)
    person = people[number % len(people)]
    routes, weights = list(config.mix), list(config.mix.values())
    while time.monotonic() < deadline and tally.started < config.max_requests:
        tally.started += 1
        route = rng.choices(routes, weights)[0]
        began = time.perf_counter()
        try:
            response = await _one(client, route, person, rng, tally.started)
        except httpx.HTTPError as exc:
            tally.error(route, f"{type(exc).__name__}: {exc}")
            continue
        elapsed = (time.perf_counter() - began) * 1000
        if response.status_code >= 300:
            tally.error(route, f"{response.status_code} {response.text}")
            continue
        tally.latencies[route].append(elapsed)
        if route == "ask":
            tally.asks_ok += 1


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
    log: Callable[[str], None] = lambda _m: None,
) -> LoadFigures:
    """Set up users on ``services``' database, load the API at ``url``, check counters."""
    url = check_loopback(url)
    began = time.monotonic()
    people = await _setup_people(services, max(1, config.users))
    setup_s = time.monotonic() - began
    log(
        f"{len(people)} users ready in {setup_s:.1f} s; {config.clients} clients for "
        f"{config.seconds:g} s against {url}"
    )
    tally = _Tally()
    limits = httpx.Limits(
        max_connections=config.clients + 5, max_keepalive_connections=config.clients
    )
    async with httpx.AsyncClient(
        base_url=url, timeout=config.request_timeout, limits=limits, trust_env=False
    ) as client:
        start = time.monotonic()
        deadline = start + config.seconds
        await asyncio.gather(
            *(_client(n, client, people, config, deadline, tally) for n in range(config.clients))
        )
        wall = time.monotonic() - start
        usage = 0
        for person in people:
            response = await client.get("/api/usage", headers=person.headers)
            response.raise_for_status()
            usage += response.json()["usage"]["chat_messages"]
    rows = await _rows(services, [p.user_id for p in people])
    routes = [
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


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ApiServer:
    """``uvicorn api.app:app`` on a free loopback port, on ``services``' database."""

    def __init__(self, services: Services, model: str, extra_env: dict[str, str] | None = None):
        self.services, self.model = services, model
        self.extra_env = extra_env or {}
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.log_path = Path(tempfile.mkstemp(prefix="quire-load-", suffix=".log")[1])

    def start(self, timeout: float = 120.0) -> str:
        """Start the server and wait for ``/health``; returns its URL."""
        env = dict(os.environ)
        env.pop("QUIRE_DATABASE_URL", None)  # it would win over DATABASE_URL
        env.update(
            DATABASE_URL=self.services.urls.libpq,  # the very database the driver uses
            QUIRE_DATABASE_NAME=self.services.settings.database_name,
            QUIRE_CHAT_MODEL=self.model,
            LANGSMITH_TRACING="false",
            **self.extra_env,
        )
        with self.log_path.open("wb") as out:  # a file: a full pipe would stall the server
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "uvicorn",
                    "api.app:app",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--no-access-log",
                ],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the API exited ({self.proc.returncode}):\n{self.tail()}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2, trust_env=False).status_code == 200:
                    return self.url
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the API did not answer /health:\n{self.tail()}")
            time.sleep(0.25)

    def tail(self, chars: int = 4000) -> str:
        """The end of the server's log."""
        return self.log_path.read_text(errors="replace")[-chars:]

    def stop(self) -> None:
        """Stop the server (terminate, then kill)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


async def run_load(
    services: Services,
    config: LoadConfig,
    *,
    url: str | None = None,
    model: str = "extractive",
    log: Callable[[str], None] = lambda _m: None,
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
    log: Callable[[str], None] = lambda _m: None,
) -> tuple[LoadFigures, Path]:
    """The CLI's entry: open services on ``database`` (its own, never the user's data) and
    run :func:`run_load`; returns the figures and the data folder."""
    from agent.config import get_settings
    from agent.services import open_services
    from bench.common import database_settings

    if url is None:
        settings = await asyncio.to_thread(database_settings, database)
    else:  # the running server's own settings name its database
        settings = get_settings().model_copy(update={"database_name": database})
    services = await open_services(settings)
    try:
        figures = await run_load(services, config, url=url, model=model, log=log)
    finally:
        await services.close()
    return figures, settings.data_dir
