"""URL ingestion: the SSRF guard and fetching from a real local HTTP server (no network)."""

import contextlib
import ipaddress
import socket
import time
from http.server import BaseHTTPRequestHandler

import pytest

from agent.config import Settings
from agent.ingest.fetch import (
    FetchError,
    UnsafeURL,
    check_url,
    fetch_url,
    ip_is_public,
)
from tests.support.local_http import serving

HTML = b"<html><head><title>Hello</title></head><body><p>Served page.</p></body></html>"
PDF = b"%PDF-1.4 not really a pdf"
LOCALHOST = [ipaddress.ip_network("127.0.0.1/32")]  # the test-only allowlist

GUARDED = Settings(allow_private_urls=False, url_max_bytes=1000, url_timeout_seconds=0.5)


def resolver_for(table: dict[str, list[str]]):
    async def resolve(host: str) -> list[str]:
        if host not in table:
            raise OSError(f"unknown host {host}")
        return table[host]

    return resolve


class Handler(BaseHTTPRequestHandler):
    def _send(self, status: int, body: bytes = b"", content_type: str = "text/plain", **headers):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        if "no_length" not in headers:
            self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            if name != "no_length":
                self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802 (http.server's naming)
        routes = {
            "/page.html": lambda: self._send(200, HTML, "text/html; charset=utf-8"),
            "/doc": lambda: self._send(200, PDF, "application/pdf"),
            "/files/notes.md": lambda: self._send(200, b"# Notes", "application/octet-stream"),
            "/blob": lambda: self._send(200, b"\x00\x01", "application/octet-stream"),
            "/host": lambda: self._send(200, self.headers["Host"].encode()),
            "/agent": lambda: self._send(200, self.headers["User-Agent"].encode()),
            "/redirect": lambda: self._send(302, Location="/page.html"),
            "/to-private": lambda: self._send(302, Location="http://10.0.0.1/"),
            "/to-private-name": lambda: self._send(301, Location="http://intranet.test/"),
            "/to-file": lambda: self._send(302, Location="file:///etc/passwd"),
            "/loop": lambda: self._send(302, Location="/loop"),
            "/big": lambda: self._send(200, b"x" * 5000),
            # No Content-Length (HTTP/1.0, ends at close): only streaming can catch it.
            "/big-unsized": lambda: self._send(200, b"x" * 5000, no_length=True),
            "/slow": self._slow,
        }
        route = routes.get(self.path)
        if route is None:
            self._send(404, b"not found")
        else:
            route()

    def _slow(self):
        time.sleep(2)
        with contextlib.suppress(OSError):  # the client has given up by now
            self._send(200, b"too late")

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    with serving(Handler, daemon_threads=True) as url:
        yield url


# --- the guard ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://[::1]/",
        "http://10.0.0.5/",
        "http://169.254.169.254/latest/meta-data",
        "http://0.0.0.0/",
        "http://[::]/",
        "http://100.64.1.1/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:10.0.0.1]/",
        "http://[fe80::1]/",
        "http://[fc00::1]/",
        "http://224.0.0.1/",
        # Non-canonical IPv4 forms; the system resolver canonicalises them (no DNS query).
        "http://0x7f000001/",
        "http://2130706433/",
        "http://127.1/",
        "http://localhost/",
    ],
)
async def test_private_and_special_addresses_are_refused(url):
    with pytest.raises(UnsafeURL, match="private or reserved"):
        await check_url(url, GUARDED)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("file:///etc/passwd", "only http and https"),
        ("ftp://x/", "only http and https"),
        ("gopher://x/", "only http and https"),
        ("data:text/plain,hi", "only http and https"),
        ("http://user:pw@host.test/", "credentials"),
        ("http:///nohost", "no host"),
    ],
)
async def test_bad_schemes_credentials_and_hostless_urls_are_refused(url, reason):
    with pytest.raises(UnsafeURL, match=reason) as err:
        await check_url(url, GUARDED, resolver=resolver_for({"host.test": ["93.184.216.34"]}))
    assert "pw" not in str(err.value)  # the password is not echoed into logs


async def test_dns_names_are_checked_on_every_resolved_address():
    resolve = resolver_for(
        {
            "internal.test": ["192.168.1.10"],
            "public.test": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
            "mixed.test": ["93.184.216.34", "10.1.2.3"],
        }
    )
    with pytest.raises(
        UnsafeURL, match=r"internal\.test is or resolves to a private.*192\.168\.1\.10"
    ):
        await check_url("http://internal.test/", GUARDED, resolver=resolve)
    with pytest.raises(UnsafeURL, match="10.1.2.3"):
        await check_url("https://mixed.test/page", GUARDED, resolver=resolve)
    assert await check_url("https://public.test/a", GUARDED, resolver=resolve) == "93.184.216.34"


async def test_unresolvable_host_is_a_fetch_error():
    with pytest.raises(FetchError, match="cannot resolve nowhere.test"):
        await check_url("http://nowhere.test/", GUARDED, resolver=resolver_for({}))


async def test_allow_private_urls_and_the_test_allowlist():
    permissive = Settings(allow_private_urls=True)
    assert await check_url("http://10.0.0.5/", permissive) == "10.0.0.5"
    assert await check_url("http://127.0.0.1:8080/", GUARDED, allow=LOCALHOST) == "127.0.0.1"
    with pytest.raises(UnsafeURL):
        await check_url("http://127.0.0.2/", GUARDED, allow=LOCALHOST)


@pytest.mark.parametrize(
    ("ip", "public"),
    [
        ("8.8.8.8", True),
        ("93.184.216.34", True),
        ("2606:4700:4700::1111", True),
        ("::ffff:8.8.8.8", True),
        ("127.0.0.1", False),
        ("10.255.0.1", False),
        ("172.16.0.1", False),
        ("192.168.0.1", False),
        ("169.254.169.254", False),
        ("100.64.0.1", False),
        ("0.0.0.0", False),
        ("240.0.0.1", False),
        ("255.255.255.255", False),
        ("224.0.0.251", False),
        ("::1", False),
        ("::", False),
        ("fe80::1", False),
        ("fec0::1", False),
        ("fd12:3456::1", False),
        ("ff02::1", False),
        ("::ffff:169.254.169.254", False),
        ("2002:7f00:1::", False),  # 6to4 wrapping 127.0.0.1
    ],
)
def test_ip_is_public(ip, public):
    assert ip_is_public(ip) is public


# --- fetching from a local server ----------------------------------------------------------


async def test_fetches_html_after_a_same_host_redirect(server):
    page = await fetch_url(f"{server}/redirect", GUARDED, allow=LOCALHOST)
    assert page.data == HTML
    assert page.filename == "page.html"
    assert page.url == f"{server}/redirect"
    assert page.final_url == f"{server}/page.html"
    assert page.content_type == "text/html"


async def test_allow_private_urls_reaches_loopback(server):
    page = await fetch_url(f"{server}/page.html", Settings(allow_private_urls=True))
    assert page.data == HTML


async def test_names_follow_the_content_type_or_the_path(server):
    pdf = await fetch_url(f"{server}/doc", GUARDED, allow=LOCALHOST)
    assert (pdf.filename, pdf.data) == ("doc.pdf", PDF)
    md = await fetch_url(f"{server}/files/notes.md", GUARDED, allow=LOCALHOST)
    assert md.filename == "notes.md"
    with pytest.raises(FetchError, match="unsupported content type 'application/octet-stream'"):
        await fetch_url(f"{server}/blob", GUARDED, allow=LOCALHOST)


async def test_connects_to_the_vetted_ip_with_the_original_host_header(server):
    port = server.rsplit(":", 1)[1]
    resolve = resolver_for({"docs.test": ["127.0.0.1"]})
    page = await fetch_url(
        f"http://docs.test:{port}/host", GUARDED, resolver=resolve, allow=LOCALHOST
    )
    assert page.data == f"docs.test:{port}".encode()
    agent = await fetch_url(f"{server}/agent", GUARDED, allow=LOCALHOST)
    assert agent.data.startswith(b"Quire/0.1")


@pytest.mark.parametrize(
    ("path", "error", "reason"),
    [
        ("/to-private", UnsafeURL, r"http://10\.0\.0\.1/.*private or reserved"),
        ("/to-private-name", UnsafeURL, r"intranet\.test is or resolves to a private"),
        ("/to-file", UnsafeURL, "only http and https"),
        ("/loop", FetchError, "more than 5 redirects"),
        ("/missing", FetchError, "HTTP 404 Not Found"),
        ("/big", FetchError, "larger than the 1,000-byte limit"),
        ("/big-unsized", FetchError, "larger than the 1,000-byte limit"),
        ("/slow", FetchError, r"timed out after 0\.5s"),
    ],
)
async def test_fetch_failures(server, path, error, reason):
    resolve = resolver_for({"intranet.test": ["10.0.0.7"]})
    with pytest.raises(error, match=reason):
        await fetch_url(f"{server}{path}", GUARDED, resolver=resolve, allow=LOCALHOST)


async def test_network_errors_are_fetch_errors():
    # A port nothing listens on: bind one, note it, close it.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(FetchError, match=f"could not fetch http://127.0.0.1:{port}/"):
        await fetch_url(f"http://127.0.0.1:{port}/", GUARDED, allow=LOCALHOST)
