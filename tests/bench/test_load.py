"""A short run of the HTTP load benchmark (``quire bench load``) against the test database:
an API worker started on a loopback port, ~10 concurrent clients for ~5 s mixing search,
ask and upload; no errors, and usage counters and chat_messages rows equal the asks made."""

from __future__ import annotations

import pytest

from bench.load import LoadConfig, NotLoopback, check_loopback, run_load

pytestmark = pytest.mark.server


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com",
        "http://10.0.0.5:8000",
        "http://192.168.1.2",
        "ftp://127.0.0.1",
        "http://0.0.0.0:8000",
        "127.0.0.1:8000",
    ],
)
def test_non_loopback_targets_are_refused(url):
    with pytest.raises(NotLoopback):
        check_loopback(url)


def test_loopback_targets_are_accepted():
    assert check_loopback("http://127.0.0.1:8123/") == "http://127.0.0.1:8123"
    assert check_loopback("http://localhost:8123") == "http://localhost:8123"
    assert check_loopback("http://[::1]:8123") == "http://[::1]:8123"


async def test_short_load_run_has_no_errors_and_exact_counters(services):
    config = LoadConfig(clients=10, seconds=5.0, max_requests=2000, users=4)
    figures = await run_load(services, config)
    assert figures.errors == 0, figures.error_samples
    assert figures.requests > 0
    by_route = {r.route: r for r in figures.routes}
    assert all(by_route[r].requests > 0 for r in ("search", "ask", "upload")), by_route
    assert figures.asks_ok == by_route["ask"].requests
    assert figures.usage_chat_messages == figures.asks_ok
    assert figures.assistant_rows == figures.user_rows == figures.asks_ok
    assert figures.counters_match
