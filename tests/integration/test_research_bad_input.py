"""Bad research input through a run: each case a kept failure that says what went wrong,
which the model reads in its next request, and the run completes.

Issue #10's list: malformed URLs, non-HTTP schemes (`file:`, `ftp:`), a binary file
served as HTML, a PDF that does not parse, bad queries. Pages come from a real HTTP
server on 127.0.0.1 (allowed, as `TOKENDANCE_FETCH_ALLOW=127.0.0.1` would), searches
go to the local fake of Tavily's API. What is already checked through a run elsewhere
is not repeated: empty, blank and 2,000-character queries (test_web_search), loopback
without the allow setting and the metadata address (test_research_tools).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from adapters.web.page_reader import HttpPageReader
from adapters.web.url_guard import AllowList
from adapters.web_search import TavilySearch
from application.tools.base import AnyTool
from application.tools.read_url import ReadUrl
from application.tools.web_search import WebSearchTool
from domain.conversation import ToolResultBlock
from domain.session import AgentSession as S
from tests.fakes.engine import make_engine, scripted
from tests.fakes.tavily_server import serve_fake_tavily
from tests.integration.test_page_reader import Reply, Site, html, make_pdf

pytestmark = pytest.mark.integration

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10" + bytes(range(256)) * 4
ZIP = b"PK\x03\x04\x14\x00\x08\x00" + bytes(range(1, 256)) * 8  # no NUL after the header


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with Site() as site:
        yield site


async def kept_failure(tmp_path: Path, tool: AnyTool, args: dict[str, object]) -> str:
    """Run one call of `tool` with `args`; the recorded error, after checking that it is
    a kept failure the model reads next and that the run completed."""
    llm = scripted(
        {"tool_calls": [{"name": tool.name, "input": args, "id": "t1"}]},
        {"text": "That did not work; I will say so."},
    )
    engine = make_engine(llm, tmp_path, extra_tools=[tool])
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "research")
    assert await engine.scheduler.wait(sid) == "completed"
    (result,) = [
        e for e in engine.sessions.session_events(sid) if isinstance(e, S.ToolResultRecorded)
    ]
    assert result.status == "error" and result.error is not None, result
    # The model's next request carries the failure as an error result of its call.
    (shown,) = [
        block
        for message in llm.requests[1].messages
        for block in message.content
        if isinstance(block, ToolResultBlock) and block.tool_use_id == "t1"
    ]
    assert (shown.is_error, shown.content) == (True, f"Error: {result.error}")
    return result.error


def read_url() -> ReadUrl:
    return ReadUrl(HttpPageReader(AllowList.parse("127.0.0.1"), timeout=5))


# (the URL, given the site; what the kept failure says)
UrlCase = tuple[Callable[[Site], str], str]

MALFORMED: dict[str, UrlCase] = {
    "empty": (lambda s: "", "invalid arguments for read_url: Expected `str` of length >= 1"),
    "too long": (
        lambda s: f"{s.base}/{'a' * 3000}",
        "invalid arguments for read_url: Expected `str` of length <= 2048",
    ),
    "no scheme": (
        lambda s: "example.com/page",
        "URL_NOT_ALLOWED: not a valid URL (no http:// or https:// in front): 'example.com/page'",
    ),
    "space in host": (
        lambda s: "http://exa mple.com/",
        "URL_NOT_ALLOWED: not a valid URL (no valid host name): 'http://exa mple.com/'",
    ),
    "unclosed bracket": (lambda s: "http://[::1/", "URL_NOT_ALLOWED: not a valid URL ("),
    "port out of range": (
        lambda s: "http://127.0.0.1:65536/",
        "URL_NOT_ALLOWED: not a valid URL (port 65536): 'http://127.0.0.1:65536/'",
    ),
    "control character": (
        lambda s: f"{s.base}/page\x00",
        "URL_NOT_ALLOWED: not a valid URL (spaces or control characters)",
    ),
}

NOT_HTTP: dict[str, UrlCase] = {
    "file": (
        lambda s: "file:///etc/passwd",
        "URL_NOT_ALLOWED: only http and https URLs are fetched, not file: 'file:///etc/passwd'",
    ),
    "ftp": (
        lambda s: "ftp://files.example/report.pdf",
        "URL_NOT_ALLOWED: only http and https URLs are fetched, not ftp: "
        "'ftp://files.example/report.pdf'",
    ),
    "redirect to ftp": (
        lambda s: s.route(
            "/to-ftp", Reply(status=302, headers={"Location": "ftp://files.example/r.pdf"})
        ),
        "URL_NOT_ALLOWED: the page redirects to ftp://files.example/r.pdf, and only http and "
        "https URLs are fetched, not ftp",
    ),
}


@pytest.mark.parametrize(
    ("make_url", "expected"),
    [*MALFORMED.values(), *NOT_HTTP.values()],
    ids=[*MALFORMED, *NOT_HTTP],
)
async def test_a_url_that_is_not_a_web_address_is_a_kept_failure_naming_why(
    site: Site, tmp_path: Path, make_url: Callable[[Site], str], expected: str
) -> None:
    error = await kept_failure(tmp_path, read_url(), {"url": make_url(site)})
    assert error.startswith(expected), error


UNREADABLE: dict[str, tuple[str, Reply, str]] = {
    "png served as html": (
        "/logo.html", html(PNG), "the page says it is text/html but its body is binary, not text"
    ),
    "zip served as html": (
        "/archive.html", html(ZIP), "the page says it is text/html but its body is binary"
    ),
    "pdf that does not parse": (
        "/report.pdf",
        Reply(b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog", headers={"Content-Type": "application/pdf"}),
        "the PDF does not parse (",
    ),
    "pdf cut short, unlabelled": (
        "/download/survey",
        Reply(make_pdf("Survey", ["Anemones counted in May"])[:300]),
        "the PDF does not parse (",
    ),
    "html served as pdf": (
        "/brochure.pdf",
        Reply(b"<html><body>A brochure</body></html>", headers={"Content-Type": "application/pdf"}),
        "the PDF does not parse (",
    ),
    "redirect with no location": (
        "/moved", Reply(status=302), "HTTP 302 Found from {url} with no Location header"
    ),
}  # fmt: skip


@pytest.mark.parametrize(("path", "reply", "expected"), UNREADABLE.values(), ids=list(UNREADABLE))
async def test_a_body_that_is_not_what_it_claims_is_a_kept_failure_naming_why(
    site: Site, tmp_path: Path, path: str, reply: Reply, expected: str
) -> None:
    url = site.route(path, reply)
    error = await kept_failure(tmp_path, read_url(), {"url": url})
    assert error.startswith(expected.format(url=url)), error


async def test_a_redirect_to_a_malformed_url_is_a_kept_failure_naming_it(
    site: Site, tmp_path: Path
) -> None:
    url = site.route("/to-nowhere", Reply(status=301, headers={"Location": "http://[::1/"}))
    error = await kept_failure(tmp_path, read_url(), {"url": url})
    assert error.startswith(f"fetching {url} failed ("), error
    assert "Invalid URL in location header" in error


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (
            {"include_domains": ["https://www.iea.org/reports"]},
            "invalid arguments for web_search: include_domains: 'https://www.iea.org/reports' "
            "is a URL, not a domain: give the site's domain, such as 'www.iea.org'",
        ),
        (
            {"exclude_domains": ["iea.org", "  "]},
            "invalid arguments for web_search: exclude_domains: a domain is blank",
        ),
        (
            {"include_domains": ["energy gov"]},
            "invalid arguments for web_search: include_domains: 'energy gov' is not a domain "
            "name: give a site's domain, such as 'iea.org'",
        ),
    ],
    ids=["url as domain", "blank domain", "space in domain"],
)
async def test_a_domain_filter_that_is_not_a_domain_is_a_kept_failure_and_never_sent(
    tmp_path: Path, filters: dict[str, object], expected: str
) -> None:
    with serve_fake_tavily() as fake:
        search = TavilySearch(fake.api_key, base_url=fake.base_url)
        try:
            args = {"query": "heat pumps", **filters}
            assert await kept_failure(tmp_path, WebSearchTool(search), args) == expected
        finally:
            await search.aclose()
        assert fake.searches == []  # refused before it reached the search service
