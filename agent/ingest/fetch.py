"""Fetch a web page for ingestion, refusing anything that could reach internal services.

The SSRF guard allows only ``http``/``https`` URLs without credentials whose host resolves
exclusively to public addresses (see :func:`ip_is_public`); ``settings.allow_private_urls``
turns the address check off. Redirects are followed by hand and every hop is checked again.

Against DNS rebinding (a name that resolves to a public address when checked and to a
private one when connected to) each request goes to the vetted IP itself: the URL's host
is replaced by the address, the ``Host`` header and the TLS server name (SNI, which is also
the name the certificate is verified against) keep the original host name. Keep-alive is
off so a TLS connection made for one host name is never reused for another on the same IP.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import unquote

import httpx

from agent.config import Settings
from agent.ingest.parse import SUPPORTED_TYPES

Resolver = Callable[[str], Awaitable[list[str]]]
"""``await resolver(host)``: the IP addresses (as strings) a host name resolves to."""

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

MAX_REDIRECTS = 5
USER_AGENT = "Quire/0.1 (+document ingestion)"
_REDIRECT_STATUSES = {301, 302, 303, 307, 308}
_SHARED_ADDRESS_SPACE = ipaddress.ip_network("100.64.0.0/10")

_EXTENSION_FOR_TYPE = {
    "text/html": ".html",
    "application/xhtml+xml": ".html",
    "application/pdf": ".pdf",
    "text/plain": ".txt",
    "text/markdown": ".md",
    "text/x-markdown": ".md",
    "text/vtt": ".vtt",
    "application/x-subrip": ".srt",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
}


class UnsafeURL(ValueError):
    """The URL is refused: bad scheme, credentials, or a non-public address."""


class FetchError(ValueError):
    """The page could not be fetched: network error, timeout, HTTP error, size or type."""


@dataclass(frozen=True)
class FetchedPage:
    """A downloaded page, named so that :func:`agent.ingest.parse.parse_bytes` can read it."""

    data: bytes
    filename: str
    url: str
    final_url: str
    content_type: str


def ip_is_public(ip: str | IPAddress) -> bool:
    """True if ``ip`` is a globally routable unicast address (the only kind we connect to)."""
    addr = ipaddress.ip_address(ip) if isinstance(ip, str) else ip
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.ipv4_mapped is not None:  # ::ffff:a.b.c.d is a.b.c.d on a dual-stack socket
            return ip_is_public(addr.ipv4_mapped)
        if addr.is_site_local or (addr.sixtofour is not None and not ip_is_public(addr.sixtofour)):
            return False
    if isinstance(addr, ipaddress.IPv4Address) and addr in _SHARED_ADDRESS_SPACE:
        return False
    # is_global alone lets multicast (and, before 3.12, site-local) through: be explicit.
    return addr.is_global and not (
        addr.is_private
        or addr.is_loopback
        or addr.is_link_local
        or addr.is_multicast
        or addr.is_reserved
        or addr.is_unspecified
    )


async def system_resolver(host: str) -> list[str]:
    """Resolve ``host`` with the system resolver (also canonicalises ``0x7f000001`` etc.)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def _display(url: httpx.URL | str) -> str:
    """The URL for messages, without any password in it."""
    try:
        return str(httpx.URL(url).copy_with(username=None, password=None))
    except (httpx.InvalidURL, TypeError):
        return str(url)


async def check_url(
    url: str | httpx.URL,
    settings: Settings,
    *,
    resolver: Resolver | None = None,
    allow: Iterable[IPNetwork] = (),
) -> str:
    """Vet ``url`` and return the IP address to connect to, or raise :class:`UnsafeURL`.

    Every address the host resolves to must pass :func:`ip_is_public` (unless
    ``settings.allow_private_urls``); literal IPs are checked the same way. ``allow`` lists
    extra networks to accept; it exists for tests that serve pages on 127.0.0.1 while
    still checking that other private targets are refused. Raises :class:`FetchError` if
    the host does not resolve.
    """
    return (await _vet(url, settings, resolver, allow))[1]


async def _vet(
    url: str | httpx.URL, settings: Settings, resolver: Resolver | None, allow: Iterable[IPNetwork]
) -> tuple[httpx.URL, str]:
    """:func:`check_url`, also returning the parsed URL."""
    shown = _display(url)
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise UnsafeURL(f"refused {shown}: not a valid URL ({exc})") from exc
    if parsed.scheme not in ("http", "https"):
        raise UnsafeURL(f"refused {shown}: only http and https URLs can be fetched")
    if parsed.userinfo:
        raise UnsafeURL(f"refused {shown}: URLs with credentials (user:password@) are not allowed")
    host = parsed.raw_host.decode("ascii")
    if not host:
        raise UnsafeURL(f"refused {shown}: the URL has no host")
    try:
        addresses = [ipaddress.ip_address(host)]
    except ValueError:
        try:
            found = await (resolver or system_resolver)(host)
        except OSError as exc:
            raise FetchError(f"could not fetch {shown}: cannot resolve {host} ({exc})") from exc
        # Drop IPv6 zone ids ("fe80::1%eth0"): the address decides, not the interface.
        addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in found]
    if not addresses:
        raise FetchError(f"could not fetch {shown}: {host} has no addresses")
    if not settings.allow_private_urls:
        allowed = list(allow)
        for addr in addresses:
            if not ip_is_public(addr) and not any(addr in net for net in allowed):
                raise UnsafeURL(
                    f"refused {shown}: {host} is or resolves to a private or reserved address ({addr})"
                )
    return parsed, str(addresses[0])


def _filename(url: httpx.URL, content_type: str) -> str:
    """A file name whose extension tells the parser what the bytes are."""
    path = PurePosixPath(unquote(url.path))
    stem = re.sub(r"[^\w.-]+", "_", path.stem).strip("._")[:100]
    stem = stem or re.sub(r"[^\w.-]+", "_", url.host) or "page"
    ext = _EXTENSION_FOR_TYPE.get(content_type)
    if ext is None and path.suffix.lower() in SUPPORTED_TYPES:
        ext = path.suffix.lower()  # e.g. a PDF served as application/octet-stream
    if ext is None:
        raise FetchError(
            f"could not fetch {_display(url)}: unsupported content type {content_type or '(none)'!r}"
        )
    return stem + ext


async def fetch_url(
    url: str,
    settings: Settings,
    *,
    resolver: Resolver | None = None,
    allow: Iterable[IPNetwork] = (),
) -> FetchedPage:
    """Download ``url`` within ``settings.url_max_bytes`` and ``settings.url_timeout_seconds``.

    Follows up to :data:`MAX_REDIRECTS` redirects, vetting each hop with :func:`check_url`
    (``resolver`` and the test-only ``allow`` are passed on). Raises :class:`UnsafeURL`
    for refused targets and :class:`FetchError` for everything else that goes wrong.
    """
    timeout = settings.url_timeout_seconds
    allow = list(allow)
    try:
        async with (
            asyncio.timeout(timeout),
            httpx.AsyncClient(
                follow_redirects=False,
                timeout=timeout,
                trust_env=False,  # a proxy from the environment would connect on our behalf
                limits=httpx.Limits(max_keepalive_connections=0),
                headers={"User-Agent": USER_AGENT},
            ) as client,
        ):
            current: str | httpx.URL = url
            for _ in range(MAX_REDIRECTS + 1):
                target, ip = await _vet(current, settings, resolver, allow)
                page_or_next = await _get(client, target, ip, url, settings)
                if isinstance(page_or_next, FetchedPage):
                    return page_or_next
                current = page_or_next
            raise FetchError(
                f"could not fetch {_display(url)}: more than {MAX_REDIRECTS} redirects"
            )
    except TimeoutError as exc:  # asyncio.timeout: the total budget
        raise FetchError(f"could not fetch {_display(url)}: timed out after {timeout:g}s") from exc
    except httpx.TimeoutException as exc:
        raise FetchError(f"could not fetch {_display(url)}: timed out after {timeout:g}s") from exc
    except httpx.HTTPError as exc:
        reason = str(exc) or type(exc).__name__
        raise FetchError(f"could not fetch {_display(url)}: {reason}") from exc


async def _get(
    client: httpx.AsyncClient, target: httpx.URL, ip: str, requested: str, settings: Settings
) -> FetchedPage | httpx.URL:
    """One GET to the vetted ``ip``: the page, or the URL a redirect points to."""
    shown = _display(target)
    extensions = (
        {"sni_hostname": target.raw_host.decode("ascii")} if target.scheme == "https" else {}
    )
    request = client.build_request(
        "GET",
        target.copy_with(host=ip),
        headers={"Host": target.netloc.decode("ascii")},
        extensions=extensions,
    )
    response = await client.send(request, stream=True)
    try:
        if response.status_code in _REDIRECT_STATUSES and "location" in response.headers:
            try:
                return target.join(response.headers["location"])
            except httpx.InvalidURL as exc:
                raise FetchError(f"could not fetch {shown}: bad redirect ({exc})") from exc
        if response.status_code >= 300:
            raise FetchError(
                f"could not fetch {shown}: HTTP {response.status_code} {response.reason_phrase}"
            )
        content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        filename = _filename(target, content_type)
        limit = settings.url_max_bytes
        too_large = f"could not fetch {shown}: larger than the {limit:,}-byte limit"
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise FetchError(too_large)
        data = bytearray()
        async for chunk in response.aiter_bytes():  # decoded bytes, so gzip cannot sneak past
            data += chunk
            if len(data) > limit:
                raise FetchError(too_large)
        return FetchedPage(bytes(data), filename, requested, str(target), content_type)
    finally:
        await response.aclose()
