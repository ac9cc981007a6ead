"""`TavilySearch`: the `WebSearch` port on Tavily's Search API, through `AsyncTavilyClient`."""

from __future__ import annotations

import httpx
import msgspec
from tavily import AsyncTavilyClient
from tavily.errors import TimeoutError as TavilyTimeout

from adapters.loopback import is_loopback_host
from application.ports import SearchHit, SearchQuery, WebSearchError

DEFAULT_BASE_URL = "https://api.tavily.com"

# The switch against real search calls (like `ALLOW_MODEL_REQUESTS`): a test suite sets it
# to False, and then only a server on this machine (a fake) is called.
ALLOW_SEARCH_REQUESTS = True

TIMED_OUT = "the search timed out; try a narrower query"

# What each refusal means for the model: whether searching again can help, and when.
_REFUSALS = {
    401: "the search key was refused (TAVILY_API_KEY); searching again will not help, "
    "go on without web search",
    429: "rate limited: wait and search less often",
    432: "the search plan's usage limit is exceeded (TAVILY_API_KEY's plan); searching again "
    "will not help until the plan is upgraded, go on without web search",
    433: "the pay-as-you-go usage limit is exceeded (TAVILY_API_KEY's account); searching "
    "again will not help until the limit is raised, go on without web search",
}


class SearchRequestsForbidden(RuntimeError):
    """A real search was attempted while `ALLOW_SEARCH_REQUESTS` is False.

    Not a `WebSearchError`: it is a bug in a test, not a failure a run should keep.
    """


class _Refused(Exception):
    """Tavily answered something other than 200, with its status and its own words."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"{status}: {detail}")
        self.status = status
        self.detail = detail


class _Result(msgspec.Struct):
    """One entry of Tavily's `results` (fields we do not use are ignored)."""

    url: str
    title: str | None = None
    content: str | None = None
    score: float | None = None
    published_date: str | None = None


class _Answer(msgspec.Struct):
    results: list[_Result] = msgspec.field(default_factory=list)


class TavilySearch:
    """Web search through Tavily; an API key is required (the keyless mode is never used).

    The client is given an httpx client of ours whose response hook reads every error
    status first: the client folds 403, 432 and 433 into one `ForbiddenError`, and the
    status is what tells the model whether searching again can help.
    """

    def __init__(self, api_key: str, *, base_url: str | None = None, timeout: float = 20) -> None:
        if not api_key.strip():
            raise ValueError("TavilySearch needs an API key (TAVILY_API_KEY); none was given")
        self._base_url = base_url or DEFAULT_BASE_URL
        self._timeout = timeout
        self._http = httpx.AsyncClient(
            base_url=self._base_url, event_hooks={"response": [_refuse_error_status]}
        )
        self._client = AsyncTavilyClient(
            api_key=api_key.strip(), api_base_url=self._base_url, client=self._http
        )

    @property
    def base_url(self) -> str:
        return self._base_url

    async def aclose(self) -> None:
        """Close the connections (the Tavily client leaves a client it was given open)."""
        await self._http.aclose()

    async def search(self, query: SearchQuery) -> list[SearchHit]:
        check_search_request_allowed(self._base_url)
        try:
            answer: object = await self._client.search(
                query.query,
                search_depth="basic",
                topic=query.topic,
                time_range=query.time_range,
                max_results=query.num_results,
                include_domains=list(query.include_domains) or None,
                exclude_domains=list(query.exclude_domains) or None,
                timeout=self._timeout,
            )
        except _Refused as e:
            raise WebSearchError(refusal_message(e.status, e.detail)) from None
        except (TavilyTimeout, httpx.TimeoutException):
            raise WebSearchError(TIMED_OUT) from None
        except httpx.HTTPError as e:
            raise WebSearchError(
                f"the search service could not be reached ({type(e).__name__}); try again later"
            ) from e
        return _hits(answer)


def refusal_message(status: int, detail: str) -> str:
    """What the model is told when Tavily answers `status` with `detail`."""
    if status in _REFUSALS:
        return _REFUSALS[status]
    said = f"{status}: {detail}" if detail else str(status)
    if status == 400:
        return f"the search service refused the query ({said}); change the query or its filters"
    if status >= 500:
        return f"the search service failed ({said}); try again later"
    return f"the search service refused the request ({said})"


def check_search_request_allowed(base_url: str) -> None:
    """Refuse a search on anything but a loopback server while searches are switched off."""
    if ALLOW_SEARCH_REQUESTS or is_loopback_host(httpx.URL(base_url).host):
        return
    raise SearchRequestsForbidden(
        f"real search requests are switched off (ALLOW_SEARCH_REQUESTS is False); "
        f"refused a search on {base_url}"
    )


async def _refuse_error_status(response: httpx.Response) -> None:
    # The client counts only 200 as success too.
    if response.status_code == 200:
        return
    await response.aread()
    raise _Refused(response.status_code, _detail(response))


def _detail(response: httpx.Response) -> str:
    """Tavily's own words: `{"detail": {"error": ...}}`, or the body's start."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:300]
    match body:
        case {"detail": {"error": str(error)}}:
            return error
        case {"detail": str(error)}:
            return error
    return ""


def _hits(answer: object) -> list[SearchHit]:
    try:
        parsed = msgspec.convert(answer, _Answer)
    except msgspec.ValidationError as e:
        raise WebSearchError(f"the search service answered in an unexpected shape ({e})") from e
    return [
        SearchHit(
            url=r.url,
            title=r.title or r.url,
            content=r.content or "",
            score=r.score or 0.0,
            published_date=r.published_date or None,
        )
        for r in parsed.results
    ]
