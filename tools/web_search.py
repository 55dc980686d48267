"""``web_search``: :mod:`agent.web_search` (Google results through SerpAPI) as a LangChain tool.

Results carry ``#web_N`` citation ids. The tool exists only when a SerpAPI key is configured.
"""

from __future__ import annotations

from langchain_core.tools import BaseTool, tool

from agent.config import Settings
from agent.web_search import (
    WEB_TOOL_DESCRIPTION,
    ClientFactory,
    WebSearchError,
    format_web_results,
    search_web,
    web_search_available,
)


def web_search_tool(
    settings: Settings, *, client_factory: ClientFactory | None = None
) -> BaseTool | None:
    """The ``web_search`` tool, or ``None`` when no SerpAPI key is configured.

    Failures come back as a short ``Web search failed: ...`` string, so a ReAct loop goes on.
    """
    if not web_search_available(settings):
        return None

    @tool("web_search", description=WEB_TOOL_DESCRIPTION)
    async def web_search(query: str) -> str:
        """Search the web; returns results with #web_N ids to cite."""
        try:
            results = await search_web(query, settings, client_factory=client_factory)
        except WebSearchError as exc:
            return f"Web search failed: {exc}"
        return format_web_results(results)

    return web_search
