"""`read_url` and the HTTP page reader against a real local web server on 127.0.0.1.

The allow list "127.0.0.1" lets the reader reach the server; every other private address
(and 127.0.0.1 without the setting) is refused, also after a redirect. Host names resolve
through a fake resolver: nothing here reaches the internet or a real DNS server.
"""

from __future__ import annotations

import gzip
import re
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from uuid import uuid4

import pytest
import trustme

from adapters.web.page_reader import HttpPageReader
from adapters.web.url_guard import AllowList
from application.ports import PageError, PageRefused
from application.tools.base import ToolContext, ToolOutput, source_marker
from application.tools.read_url import ReadUrl, ReadUrlArgs
from domain.values import Citation, PlanItem

pytestmark = pytest.mark.integration

ARTICLE = """<!doctype html><html><head><title>Tide  pools of
 Brittany</title></head><body>
<nav><a href="/">Home</a> | <a href="/about">About us</a> | <a href="/shop">Shop</a></nav>
<article><h1>Life in tide pools</h1>
<p>Tide pools are rocky hollows that keep sea water when the tide goes out. They shelter
anemones, crabs, small fish and snails through hours of sun and wind.</p>
<h2>Who lives there</h2><ul><li>Beadlet anemones</li><li>Shore crabs</li></ul>
<p>Read the <a href="https://example.org/survey">2023 survey</a> for counts by site and
season, gathered by volunteers along the whole northern coast.</p></article>
<footer>Copyright 2024 Coast Club. All rights reserved.</footer></body></html>"""


def make_pdf(title: str, pages: list[str]) -> bytes:
    """A small valid PDF with one line of Helvetica text on each page."""
    page_ids = [5 + 2 * i for i in range(len(pages))]
    kids = " ".join(f"{p} 0 R" for p in page_ids)
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode(),
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        4: f"<< /Title ({title}) >>".encode(),
    }
    for page_id, text in zip(page_ids, pages, strict=True):
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
        objects[page_id] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (page_id + 1)
        )
        objects[page_id + 1] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream)
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n%s\nendobj\n" % (number, objects[number])
    xref, size = len(out), max(objects) + 1
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    out += b"".join(b"%010d 00000 n \n" % offsets[n] for n in range(1, size))
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 4 0 R >>\n" % size
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


@dataclass
class Reply:
    """What the site answers for one path."""

    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    stall: float = 0.0  # seconds to wait after the first bytes of the body
    length: bool = True  # send Content-Length (else the body ends when the connection does)


class Site:
    """A threaded HTTP server on 127.0.0.1 answering from a table; it keeps the Host headers."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.routes: dict[str, Reply] = {}
        self.hosts: list[str] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                site.hosts.append(self.headers.get("Host", ""))
                reply = site.routes.get(self.path, Reply(b"not found", 404))
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    if reply.length:
                        self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body[:10])
                    self.wfile.flush()
                    time.sleep(reply.stall)
                    self.wfile.write(reply.body[10:])
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the reader gave up on a slow or oversize page, as it should

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        if tls:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.base = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"

    def __enter__(self) -> Site:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def route(self, path: str, reply: Reply) -> str:
        self.routes[path] = reply
        return self.base + path


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with Site() as site:
        yield site


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def tls_site(ca: trustme.CA) -> Iterator[Site]:
    """The site over HTTPS with a certificate for site.test only (from a test CA)."""
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("site.test").configure_cert(tls)
    with Site(tls) as site:
        yield site


async def fake_dns(host: str, port: int) -> list[str]:
    table = {"site.test": ["127.0.0.1"], "evil.example": ["10.0.0.5"]}
    if host not in table:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    return table[host]


def reader(
    allow: str = "127.0.0.1",
    *,
    max_bytes: int = 100_000,
    timeout: float = 5.0,
    max_redirects: int = 5,
) -> HttpPageReader:
    return HttpPageReader(
        AllowList.parse(allow),
        max_bytes=max_bytes,
        timeout=timeout,
        max_redirects=max_redirects,
        resolve=fake_dns,
    )


def html(body: str | bytes, **headers: str) -> Reply:
    raw = body.encode() if isinstance(body, str) else body
    return Reply(raw, headers={"Content-Type": "text/html; charset=utf-8", **headers})


async def test_an_html_page_becomes_its_main_content_as_markdown(site: Site) -> None:
    page = await reader().read(site.route("/article.html", html(ARTICLE)))
    assert page.title == "Tide pools of Brittany"
    assert page.url == f"{site.base}/article.html"
    assert page.media_type == "text/html"
    assert page.fetched_bytes == len(ARTICLE.encode())
    assert "# Life in tide pools" in page.markdown
    assert "## Who lives there" in page.markdown
    assert "- Shore crabs" in page.markdown
    assert "[2023 survey](https://example.org/survey)" in page.markdown
    assert "About us" not in page.markdown and "Copyright" not in page.markdown


async def test_plain_text_is_kept_as_it_is_in_its_charset(site: Site) -> None:
    text = "Crêpes, galettes et cidre.\n\n* not a list, just a star"
    reply = Reply(text.encode("latin-1"), headers={"Content-Type": "text/plain; charset=latin-1"})
    page = await reader().read(site.route("/notes.txt", reply))
    assert page.markdown == text
    assert page.media_type == "text/plain"


async def test_a_pdf_becomes_markdown_page_by_page_with_its_title(site: Site) -> None:
    pdf = make_pdf("Survey of tide pools", ["Anemones counted in May", "Crabs counted in June"])
    for path, media_type in (("/survey.pdf", "application/pdf"), ("/download", "")):
        headers = {"Content-Type": media_type} if media_type else {}
        page = await reader().read(site.route(path, Reply(pdf, headers=headers)))
        assert page.title == "Survey of tide pools"
        assert page.markdown == (
            "## Page 1\n\nAnemones counted in May\n\n## Page 2\n\nCrabs counted in June"
        )


async def test_a_compressed_page_is_read_decompressed(site: Site) -> None:
    reply = html(gzip.compress(ARTICLE.encode()), **{"Content-Encoding": "gzip"})
    page = await reader().read(site.route("/gzipped.html", reply))
    assert "# Life in tide pools" in page.markdown


async def test_a_redirect_chain_is_followed_to_the_final_url(site: Site) -> None:
    final = site.route("/chain/3", html(ARTICLE))
    site.route("/chain/2", Reply(status=308, headers={"Location": final}))
    site.route("/chain/1", Reply(status=302, headers={"Location": "/chain/2"}))
    page = await reader().read(site.route("/chain/0", Reply(status=301, headers={"Location": "1"})))
    assert page.url == final
    assert page.title == "Tide pools of Brittany"


async def test_too_many_redirects_end_with_a_page_error(site: Site) -> None:
    loop = site.route("/loop", Reply(status=302, headers={"Location": "/loop"}))
    with pytest.raises(PageError, match="more than 2 redirects"):
        await reader(max_redirects=2).read(loop)


async def test_the_reader_connects_to_the_checked_address_and_names_the_host(site: Site) -> None:
    # site.test exists only in the fake resolver: the request succeeds only if the
    # reader connects to the address the guard checked instead of resolving again.
    site.route("/named.html", html(ARTICLE))
    page = await reader().read(f"http://site.test:{site.port}/named.html")
    assert page.url == f"http://site.test:{site.port}/named.html"
    assert site.hosts[-1] == f"site.test:{site.port}"


async def test_https_is_pinned_to_the_checked_address_and_verified_for_the_host(
    tls_site: Site, ca: trustme.CA
) -> None:
    trusting = ssl.create_default_context()
    ca.configure_trust(trusting)
    tls_site.route("/secure.html", html(ARTICLE))
    tls_reader = HttpPageReader(
        AllowList.parse("127.0.0.1"), resolve=fake_dns, ssl_context=trusting
    )
    page = await tls_reader.read(f"https://site.test:{tls_site.port}/secure.html")
    assert page.title == "Tide pools of Brittany"
    assert tls_site.hosts[-1] == f"site.test:{tls_site.port}"
    # The certificate names site.test, not the address connected to: checked by name.
    with pytest.raises(PageError, match="could not connect"):
        await tls_reader.read(f"https://127.0.0.1:{tls_site.port}/secure.html")
    with pytest.raises(PageError, match="could not connect"):  # a certificate not trusted
        await reader().read(f"https://site.test:{tls_site.port}/secure.html")


async def test_loopback_is_refused_without_the_allow_setting(site: Site) -> None:
    url = site.route("/private.html", html(ARTICLE))
    with pytest.raises(PageRefused, match="loopback") as caught:
        await reader(allow="").read(url)
    assert caught.value.code == "URL_NOT_ALLOWED"


@pytest.mark.parametrize(
    ("location", "reason"),
    [
        ("http://169.254.169.254/latest/meta-data/iam/", "cloud metadata"),
        ("http://10.0.0.1/admin", "private"),
        ("http://[::1]:{port}/article.html", "loopback"),
        ("http://evil.example/", "evil.example resolves to 10.0.0.5"),
        ("file:///etc/passwd", "only http and https"),
    ],
)
async def test_a_redirect_to_a_refused_url_is_refused(
    site: Site, location: str, reason: str
) -> None:
    url = site.route(
        "/away", Reply(status=302, headers={"Location": location.format(port=site.port)})
    )
    with pytest.raises(PageRefused, match=re.escape(reason)) as caught:
        await reader().read(url)
    assert str(caught.value).startswith("the page redirects to ")


@pytest.mark.parametrize("url", ["http://10.0.0.1/", "http://169.254.169.254/", "http://[::1]/"])
async def test_a_private_address_is_refused_even_with_loopback_allowed(url: str) -> None:
    with pytest.raises(PageRefused):
        await reader().read(url)


async def test_a_slow_page_ends_with_a_timeout(site: Site) -> None:
    url = site.route("/slow.html", Reply(b"<html><body>" + b"x" * 100, stall=3.0))
    with pytest.raises(PageError, match=r"timed out after 0.3 s"):
        await reader(timeout=0.3).read(url)


@pytest.mark.parametrize("declared", [True, False])
async def test_an_oversize_page_ends_with_a_page_error(site: Site, declared: bool) -> None:
    reply = Reply(b"<p>" + b"a" * 5_000 + b"</p>", length=declared)
    url = site.route(f"/big-{declared}.html", reply)
    with pytest.raises(PageError, match="page larger than 1000 bytes"):
        await reader(max_bytes=1_000).read(url)


@pytest.mark.parametrize(
    ("reply", "complaint"),
    [
        (html(bytes(range(256)) * 8), "says it is text/html but its body is binary"),
        (Reply(b"%PDF-1.7\n1 0 obj\n<< garbage", headers={"Content-Type": "application/pdf"}),
         "the PDF does not parse"),
        (Reply(b"\x89PNG\r\n\x1a\n", headers={"Content-Type": "image/png"}),
         "cannot read image/png"),
        (Reply(b"gone", 404), "HTTP 404 Not Found"),
        (Reply(b"oops", 500), "HTTP 500"),
    ],
)  # fmt: skip
async def test_a_page_that_cannot_be_read_is_a_page_error(
    site: Site, reply: Reply, complaint: str
) -> None:
    url = site.route("/bad", reply)
    with pytest.raises(PageError, match=re.escape(complaint)):
        await reader().read(url)


async def test_nothing_listens_is_a_page_error() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    with pytest.raises(PageError, match="could not connect"):
        await reader().read(f"http://127.0.0.1:{port}/")


class NoNotes:
    """Session notes that `read_url` must never write."""

    async def update_plan(self, items: list[PlanItem]) -> None:
        raise AssertionError("read_url wrote the plan")

    async def record_finding(self, text: str, citations: list[Citation]) -> None:
        raise AssertionError("read_url recorded a finding")

    async def note_progress(self, text: str) -> None:
        raise AssertionError("read_url noted progress")


CONTEXT = ToolContext(uuid4(), "toolu_1", NoNotes())


async def test_read_url_returns_the_page_under_its_title_and_final_url(site: Site) -> None:
    url = site.route("/tool.html", html(ARTICLE))
    output = await ReadUrl(reader()).run(ReadUrlArgs(url=url), CONTEXT)
    assert isinstance(output, ToolOutput)
    header, body = output.text.split("\n\n", 1)
    assert header == (
        f"# Tide pools of Brittany\nSource {source_marker(0)}: {url} "
        f"(text/html, {len(ARTICLE)} bytes)"
    )
    assert "[2023 survey](https://example.org/survey)" in body
    (page,) = output.sources
    assert (page.url, page.title, page.via) == (url, "Tide pools of Brittany", "read")
    text = await ReadUrl(reader()).run(ReadUrlArgs(url=url, mode="text"), CONTEXT)
    assert isinstance(text, ToolOutput)
    assert "Read the 2023 survey for counts" in text.text and "example.org" not in text.text


async def test_read_url_fails_with_url_not_allowed_for_a_private_address() -> None:
    with pytest.raises(PageRefused, match="cloud metadata") as caught:
        await ReadUrl(reader()).run(ReadUrlArgs(url="http://169.254.169.254/"), CONTEXT)
    assert caught.value.code == "URL_NOT_ALLOWED"
