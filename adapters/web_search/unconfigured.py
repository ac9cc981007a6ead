"""The search used when no Tavily key is configured: every search fails with a clear reason."""

from __future__ import annotations

from application.ports import SearchHit, SearchQuery, WebSearchError

HOW_TO_CONFIGURE = "web search is not configured: set TAVILY_API_KEY"


class UnconfiguredSearch:
    """Fails every search with `WebSearchError`, so the call is a kept failure; calls no one."""

    def __init__(self, reason: str = HOW_TO_CONFIGURE) -> None:
        self.reason = reason

    async def search(self, query: SearchQuery) -> list[SearchHit]:
        raise WebSearchError(self.reason)
