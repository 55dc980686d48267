"""The load benchmark's simulated clients: the users they act as (each with an API token
and one small ingested document), what each request sends, and one client's loop of
requests until the deadline, tallied by route."""

from __future__ import annotations

import random
import time
import uuid
from dataclasses import dataclass, field

import httpx

from agent.services import Services

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
class Person:
    """One bench user: its id, its API headers and the marker its document names."""

    user_id: uuid.UUID
    headers: dict[str, str]
    marker: str


@dataclass
class Tally:
    """What the clients did, by route: latencies (ms) of the answered requests, errors."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: {r: [] for r in ROUTES})
    errors: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ROUTES, 0))
    asks_ok: int = 0
    started: int = 0
    samples: list[str] = field(default_factory=list)

    def error(self, route: str, detail: str) -> None:
        """Count a failed request, keeping the first 20 details."""
        self.errors[route] += 1
        if len(self.samples) < 20:
            self.samples.append(f"{route}: {detail[:300]}")


async def setup_people(services: Services, count: int) -> list[Person]:
    """``count`` fresh users (unique names), each with a token and one ingested document."""
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
        people.append(Person(user.id, {"Authorization": f"Bearer {token}"}, marker))
    return people


async def _one(client: httpx.AsyncClient, route: str, person: Person, rng: random.Random, n: int):
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


async def run_client(
    number: int,
    client: httpx.AsyncClient,
    people: list[Person],
    config: LoadConfig,
    deadline: float,
    tally: Tally,
) -> None:
    """Client ``number``: requests as one user, routes drawn by the mix, until the deadline
    or until ``config.max_requests`` have been started by all clients."""
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
