"""Web search adapters: Tavily when a key is set, otherwise one that says how to set it."""

from __future__ import annotations

from adapters.web_search.tavily import TavilySearch
from adapters.web_search.unconfigured import UnconfiguredSearch
from application.ports import WebSearch

__all__ = ["TavilySearch", "UnconfiguredSearch", "build_web_search"]


def build_web_search(api_key: str | None, base_url: str | None) -> WebSearch:
    """Tavily on `base_url` (its own API if None) with `api_key`; without a key, a search
    that fails every call with "set TAVILY_API_KEY" (never Tavily's keyless mode)."""
    if api_key is None or not api_key.strip():
        return UnconfiguredSearch()
    return TavilySearch(api_key, base_url=base_url or None)
