"""The `web_search` tool: a web search through the `WebSearch` port, answered as Markdown."""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlsplit

import msgspec

from application.ports import SearchHit, SearchQuery, WebSearch
from application.tools.base import Tool, ToolContext, ToolOutput, source_marker
from domain.values import SourceSeen

MAX_QUERY = 400  # characters; Tavily's own limit
SNIPPET_LIMIT = 600  # characters of each hit's text shown to the model

Query = Annotated[
    str,
    msgspec.Meta(
        max_length=MAX_QUERY,
        description=f"What to search for: a few keywords (at most {MAX_QUERY} characters).",
    ),
]
Domain = Annotated[str, msgspec.Meta(min_length=1, max_length=253, examples=["iea.org"])]
Domains = Annotated[list[Domain], msgspec.Meta(max_length=20)]


class WebSearchArgs(msgspec.Struct, forbid_unknown_fields=True):
    query: Query
    num_results: Annotated[int, msgspec.Meta(ge=1, le=20)] = 5
    topic: Literal["general", "news", "finance"] = "general"
    time_range: Literal["day", "week", "month", "year"] | None = None
    include_domains: Domains = msgspec.field(default_factory=list)
    exclude_domains: Domains = msgspec.field(default_factory=list)

    def __post_init__(self) -> None:
        # Raised while the registry converts the model's arguments, this becomes a
        # validation error there, and so a kept failure saying what to change.
        if not self.query.strip():
            raise ValueError("query is empty: say what to search for, in a few keywords")
        for name, domains in (
            ("include_domains", self.include_domains),
            ("exclude_domains", self.exclude_domains),
        ):
            for domain in domains:
                problem = _not_a_domain(domain)
                if problem:
                    raise ValueError(f"{name}: {problem}")


class WebSearchTool(Tool[WebSearchArgs]):
    name = "web_search"
    description = (
        "Search the web. Returns up to num_results pages, best first, each with its title, "
        "URL, publication date when known, and a snippet of its text. Use a few keywords; "
        "topic 'news' for recent events (with time_range to limit how recent); "
        "include_domains / exclude_domains to keep to or avoid sites (e.g. 'iea.org')."
    )
    Args = WebSearchArgs

    def __init__(self, search: WebSearch) -> None:
        self._search = search

    async def run(self, args: WebSearchArgs, context: ToolContext) -> str | ToolOutput:
        query = args.query.strip()
        hits = await self._search.search(
            SearchQuery(
                query=query,
                num_results=args.num_results,
                topic=args.topic,
                time_range=args.time_range,
                include_domains=tuple(d.strip() for d in args.include_domains),
                exclude_domains=tuple(d.strip() for d in args.exclude_domains),
            )
        )
        if not hits:
            return f"no results for {query!r}: try fewer or broader keywords, or fewer filters"
        # Each hit becomes a numbered source of the session; cite it by that number.
        text = "\n\n".join(_hit(i, hit) for i, hit in enumerate(hits))
        pages = tuple(
            SourceSeen(hit.url, _one_line(hit.title) or hit.url, _snippet(hit), "search")
            for hit in hits
        )
        return ToolOutput(text, pages)


def _not_a_domain(domain: str) -> str | None:
    """What is wrong with a domain filter the model sent (a search would silently find
    nothing for it), or None."""
    bare = domain.strip()
    if not bare:
        return "a domain is blank"
    if "/" in bare:
        host = urlsplit(bare if "://" in bare else f"//{bare}").hostname or "iea.org"
        return f"{domain!r} is a URL, not a domain: give the site's domain, such as {host!r}"
    if any(c.isspace() for c in bare):
        return f"{domain!r} is not a domain name: give a site's domain, such as 'iea.org'"
    return None


def _snippet(hit: SearchHit) -> str:
    snippet = _one_line(hit.content)
    if len(snippet) > SNIPPET_LIMIT:
        snippet = snippet[: SNIPPET_LIMIT - 3].rstrip() + "..."
    return snippet


def _hit(index: int, hit: SearchHit) -> str:
    lines = [f"{source_marker(index)} **{_one_line(hit.title) or hit.url}**", f"   {hit.url}"]
    if hit.published_date:
        lines.append(f"   Published: {hit.published_date}")
    snippet = _snippet(hit)
    if snippet:
        lines.append(f"   {snippet}")
    return "\n".join(lines)


def _one_line(text: str) -> str:
    return " ".join(text.split())
