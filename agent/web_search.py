"""Web search: Google results through SerpAPI, parsed into citable :class:`WebResult` items.

Results carry ``#web_N`` citation ids (numbered in result order), kept apart from the
``#chk_xxxxxxxx`` ids of the user's own document chunks. Web search is only offered when a
SerpAPI key is configured (``SERPAPI_API_KEY`` or ``QUIRE_SERPAPI_API_KEY``).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from serpapi import GoogleSearch

from agent.config import Settings

WEB_ID_PREFIX = "#web_"
WEB_TOOL_DESCRIPTION = (
    "Search the web for current events or facts not in the user's documents; "
    "returns results with #web_N ids to cite."
)
NO_RESULTS = "No web results found."

# SerpAPI reports "no results" as an error; it is an empty answer, not a failure.
_NO_RESULTS_ERROR = re.compile(r"hasn't returned any results", re.I)
_SPACES = re.compile(r"\s+")

ClientFactory = Callable[[dict[str, Any]], Any]
"""Builds a SerpAPI client from its parameters; the client has ``get_dict() -> dict``."""


class WebSearchError(RuntimeError):
    """A web search could not be done: not configured, network failure, or SerpAPI error."""


@dataclass(frozen=True)
class WebResult:
    """One web result, ready to cite as ``citation_id`` (``#web_1``, ``#web_2``, ...)."""

    citation_id: str
    title: str
    url: str
    snippet: str
    source: str
    date: str | None = None


def web_search_available(settings: Settings) -> bool:
    """True when a (non-blank) SerpAPI key is configured."""
    key = settings.serpapi_api_key
    return key is not None and bool(key.get_secret_value().strip())


def _clean(value: Any) -> str:
    """One line of text from a SerpAPI field (strings, lists of strings, numbers)."""
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        value = "; ".join(_clean(v) for v in value if _clean(v))
    return _SPACES.sub(" ", str(value)).strip()


def _domain(url: str, fallback: Any = None) -> str:
    """The host of ``url`` without ``www.``; else the fallback (SerpAPI source/displayed_link)."""
    host = (urlparse(url).hostname or "") if url else ""
    if host.startswith("www."):
        host = host[4:]
    if host:
        return host
    text = _clean(fallback)
    # displayed_link looks like "https://en.wikipedia.org › wiki › ..."
    text = text.split(" › ")[0]
    return (urlparse(text).hostname or text).removeprefix("www.")


def _answer_text(box: dict[str, Any]) -> str:
    """The direct answer of an answer box, with its supporting snippet when both exist."""
    answer = _clean(box.get("answer") or box.get("result"))
    snippet = _clean(box.get("snippet"))
    if not snippet and box.get("snippet_highlighted_words"):
        snippet = _clean(box["snippet_highlighted_words"])
    if not snippet and box.get("list"):
        snippet = _clean(box["list"])
    if not (answer and snippet):
        return answer or snippet
    if re.search(rf"(?<!\w){re.escape(answer)}(?!\w)", snippet, re.I):
        return snippet  # the snippet already states the answer
    return f"{answer}. {snippet}"


def parse_serpapi(payload: dict[str, Any], limit: int) -> list[WebResult]:
    """``WebResult``s from a SerpAPI Google response: the answer box first, then organic results.

    Raises ``WebSearchError`` for SerpAPI's ``{"error": ...}`` payloads (bad key, quota),
    except its "no results" error, which gives an empty list.
    """
    if not isinstance(payload, dict):
        raise WebSearchError(f"SerpAPI returned an unexpected response ({type(payload).__name__}).")
    error = payload.get("error")
    if error:
        if _NO_RESULTS_ERROR.search(str(error)):
            return []
        raise WebSearchError(f"SerpAPI returned an error: {error}")

    raw: list[tuple[str, str, str, str, str | None]] = []  # title, url, snippet, source, date
    box = payload.get("answer_box") or payload.get("answer_box_list")
    if isinstance(box, list):
        box = box[0] if box else None
    if isinstance(box, dict):
        text = _answer_text(box)
        if text:
            url = _clean(box.get("link"))
            title = _clean(box.get("title")) or "Answer box"
            source = _domain(url, box.get("source") or box.get("displayed_link")) or "google.com"
            raw.append((title, url, text, source, _clean(box.get("date")) or None))

    seen = {r[1] for r in raw if r[1]}
    for item in payload.get("organic_results") or []:
        if not isinstance(item, dict):
            continue
        url = _clean(item.get("link"))
        if not url or url in seen:
            continue
        seen.add(url)
        title = _clean(item.get("title")) or url
        source = _domain(url, item.get("source") or item.get("displayed_link"))
        raw.append(
            (title, url, _clean(item.get("snippet")), source, _clean(item.get("date")) or None)
        )

    return [
        WebResult(f"{WEB_ID_PREFIX}{n}", title, url, snippet, source, date)
        for n, (title, url, snippet, source, date) in enumerate(raw[: max(limit, 0)], start=1)
    ]


def _redact(message: str, secret: str) -> str:
    """Drop the API key from error text (request URLs carry it as a query parameter)."""
    return message.replace(secret, "***") if secret else message


async def search_web(
    query: str, settings: Settings, *, client_factory: ClientFactory | None = None
) -> list[WebResult]:
    """Search Google through SerpAPI; returns up to ``settings.web_search_results`` results.

    The blocking SerpAPI call runs in a worker thread under
    ``settings.web_search_timeout_seconds``. Every failure raises ``WebSearchError``.
    ``client_factory`` (default ``serpapi.GoogleSearch``) lets tests supply canned payloads.
    """
    query = query.strip()
    if not query:
        raise WebSearchError("Web search needs a non-empty query.")
    if not web_search_available(settings):
        raise WebSearchError("Web search is not configured: set SERPAPI_API_KEY.")
    key = settings.serpapi_api_key.get_secret_value().strip()  # type: ignore[union-attr]
    timeout = settings.web_search_timeout_seconds
    params = {"engine": "google", "q": query, "api_key": key, "num": settings.web_search_results}
    factory = client_factory or GoogleSearch

    def fetch() -> Any:
        client = factory(dict(params))
        if hasattr(client, "timeout"):
            client.timeout = timeout  # SerpApiClient passes it to requests.get
        return client.get_dict()

    try:
        payload = await asyncio.wait_for(asyncio.to_thread(fetch), timeout=timeout)
    except TimeoutError as exc:
        raise WebSearchError(f"SerpAPI did not answer within {timeout:g} seconds.") from exc
    except WebSearchError:
        raise
    except Exception as exc:  # network errors, non-JSON bodies, client bugs
        detail = _redact(str(exc), key) or type(exc).__name__
        raise WebSearchError(f"SerpAPI request failed ({type(exc).__name__}): {detail}") from None
    return parse_serpapi(payload, settings.web_search_results)


def format_web_results(results: Iterable[WebResult]) -> str:
    """Results as a prompt block: ``#web_1 [Title — domain](url)`` then the snippet."""
    blocks = []
    for r in results:
        title = r.title.replace("[", "(").replace("]", ")")
        if r.url:
            head = f"{r.citation_id} [{title} — {r.source}]({r.url})"
        else:  # an answer box without a link
            head = f"{r.citation_id} {title} — {r.source}"
        if r.date:
            head += f" ({r.date})"
        blocks.append(f"{head}\n{r.snippet}" if r.snippet else head)
    return "\n\n".join(blocks) if blocks else NO_RESULTS


def web_citations(results: Iterable[WebResult]) -> list[dict[str, Any]]:
    """Citations for the UI, marked ``kind="web"`` to tell them from document chunk citations."""
    return [
        {
            "id": r.citation_id,
            "title": r.title,
            "url": r.url,
            "snippet": r.snippet,
            "source": r.source,
            "date": r.date,
            "kind": "web",
        }
        for r in results
    ]
