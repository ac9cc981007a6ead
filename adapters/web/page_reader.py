"""`PageReader` over httpx: fetch within limits, every hop checked by the URL guard.

Redirects are followed here, not by httpx, so each hop's URL is checked and resolved by
the guard before anything connects to it. Each request is pinned to an address the guard
checked: the URL sent to httpx carries that IP, while the `Host` header and the TLS server
name (httpx's `sni_hostname` extension, which certificate checks also use) stay the
original host name. httpx therefore never resolves a name itself, and no connection is
kept between hops, so a connection opened for one name is never reused for another.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx

from adapters.web.markdown import Fetched, to_page
from adapters.web.url_guard import AllowList, IPAddress, Resolver, Target, UrlGuard
from application.ports import Page, PageError, PageRefused

USER_AGENT = "TokenDance/0.1 (research agent; reads pages for its user)"
ACCEPT = "text/html,application/xhtml+xml,application/pdf;q=0.9,text/plain;q=0.8,*/*;q=0.5"


class HttpPageReader:
    """Reads public web pages (HTML, plain text, PDF) as Markdown, within size and time limits."""

    def __init__(
        self,
        allow: AllowList,
        *,
        max_bytes: int = 5_000_000,
        timeout: float = 20.0,
        max_redirects: int = 5,
        user_agent: str = USER_AGENT,
        resolve: Resolver | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        """`resolve` and `ssl_context` are for tests: a fake DNS, a test CA's trust."""
        self.guard = UrlGuard(allow, resolve=resolve)
        self.ssl_context = ssl_context
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.max_redirects = max_redirects
        self.user_agent = user_agent

    async def read(self, url: str) -> Page:
        """The page at `url` as Markdown; `PageRefused` or `PageError` when it cannot be."""
        try:
            async with asyncio.timeout(self.timeout):
                fetched = await self._fetch(url)
                # Parsing is CPU work: in a thread, and within the same deadline.
                return await asyncio.to_thread(to_page, fetched)
        except (TimeoutError, httpx.TimeoutException):
            raise PageError(f"timed out after {self.timeout:g} s reading {url}") from None
        except httpx.HTTPError as e:
            raise PageError(f"fetching {url} failed ({type(e).__name__}: {e})") from None

    async def _fetch(self, url: str) -> Fetched:
        async with httpx.AsyncClient(
            follow_redirects=False,
            verify=self.ssl_context or True,
            trust_env=False,  # a proxy from the environment would resolve names itself
            timeout=self.timeout,
            limits=httpx.Limits(max_keepalive_connections=0),
            headers={"User-Agent": self.user_agent, "Accept": ACCEPT},
        ) as client:
            current: str | httpx.URL = url
            for hop in range(self.max_redirects + 1):
                target = await self._check(current, redirected=hop > 0)
                async with _open(client, target) as response:
                    # A 3xx without a Location goes nowhere: an error like any other status.
                    if not response.has_redirect_location:
                        return await self._body(target.url, response)
                    current = _next_hop(target.url, response)
        raise PageError(f"more than {self.max_redirects} redirects from {url}")

    async def _check(self, url: str | httpx.URL, *, redirected: bool) -> Target:
        try:
            return await self.guard.check(url)
        except PageRefused as e:
            if not redirected:
                raise
            raise PageRefused(f"the page redirects to {str(url)[:200]}, and {e}") from None

    async def _body(self, url: httpx.URL, response: httpx.Response) -> Fetched:
        if response.status_code >= 300:
            phrase = f" {response.reason_phrase}" if response.reason_phrase else ""
            nowhere = " with no Location header (a redirect to nowhere)"
            nowhere = nowhere if response.is_redirect else ""
            raise PageError(f"HTTP {response.status_code}{phrase} from {url}{nowhere}")
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            raise PageError(f"page larger than {self.max_bytes} bytes ({declared} declared)")
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():  # decompressed: a small gzip bomb counts big
            size += len(chunk)
            if size > self.max_bytes:
                raise PageError(f"page larger than {self.max_bytes} bytes")
            chunks.append(chunk)
        media_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        return Fetched(str(url), media_type, response.charset_encoding, b"".join(chunks))


@asynccontextmanager
async def _open(client: httpx.AsyncClient, target: Target) -> AsyncIterator[httpx.Response]:
    """A streamed GET of the target, over the first of its checked addresses that answers."""
    failure: httpx.ConnectError | None = None
    for address in target.addresses:
        try:
            response = await client.send(pinned(client, target.url, address), stream=True)
        except httpx.ConnectError as e:
            failure = e
            continue
        try:
            yield response
        finally:
            await response.aclose()
        return
    raise PageError(f"could not connect to {target.url.host} ({failure})")


def pinned(client: httpx.AsyncClient, url: httpx.URL, address: IPAddress) -> httpx.Request:
    """A GET of `url` that connects to `address` and still names the host to the server."""
    host = url.raw_host.decode("ascii")
    return client.build_request(
        "GET",
        url.copy_with(host=str(address)),
        headers={"Host": url.netloc.decode("ascii")},
        extensions={"sni_hostname": host},
    )


def _next_hop(url: httpx.URL, response: httpx.Response) -> httpx.URL:
    location = response.headers["location"]
    try:
        return url.join(location)
    except (httpx.InvalidURL, ValueError, UnicodeError):
        raise PageRefused(
            f"the redirect from {url} goes to an invalid URL: {location[:200]!r}"
        ) from None
