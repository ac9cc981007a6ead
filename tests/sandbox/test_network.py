"""The network allowlist: allowed domains are reached through the host's filtering
proxy, every other destination is refused; without an allowlist, no network."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from sandbox.bubblewrap import BubblewrapSandbox
from sandbox.proxy import Allowlist, FilteringProxy, public_addresses, valid_pattern
from sandbox.python import python_argv
from schemas.sandbox import SandboxRun
from tests.sandbox.conftest import LIMITS, needs_bwrap

needs_socat = pytest.mark.skipif(
    shutil.which("socat") is None,
    reason="the in-sandbox bridge to the proxy needs socat (apt-get install socat)",
)
TEST_DOMAINS = {"allowed.test", "api.allowed.test", "other.test"}


async def loopback_resolver(host: str, port: int) -> list[str]:
    """The test domains live on this machine's loopback (where the fake upstream is)."""
    return ["127.0.0.1"] if host in TEST_DOMAINS else []


@pytest.fixture
async def upstream() -> AsyncIterator[tuple[int, list[str]]]:
    """A fake web server on 127.0.0.1; the list records each request's first line
    and Host header."""
    seen: list[str] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        lines = head.split("\r\n")
        host = next(line for line in lines if line.lower().startswith("host:"))
        seen.append(f"{lines[0]} | {host}")
        body = f"hello from upstream: {lines[0]}".encode()
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1], seen
    server.close()
    await server.wait_closed()


def test_allowlist_matches_domains_and_subdomains() -> None:
    allow = Allowlist(["Example.com", "*.api.test"])
    assert allow.allows("example.com") and allow.allows("EXAMPLE.COM.")
    assert not allow.allows("www.example.com") and not allow.allows("example.com.evil.org")
    assert allow.allows("v1.api.test") and allow.allows("a.b.api.test")
    assert not allow.allows("api.test") and not allow.allows("xapi.test")
    for bad in ["*", "*.com", "com", "exa mple.com", "http://example.com", "a..b"]:
        with pytest.raises(ValueError):
            valid_pattern(bad)


async def test_the_default_resolver_refuses_non_public_addresses() -> None:
    assert await public_addresses("localhost", 80) == []
    assert await public_addresses("169.254.169.254", 80) == []


async def request(path: str, raw: bytes) -> bytes:
    reader, writer = await asyncio.open_unix_connection(path)
    writer.write(raw)
    await writer.drain()
    data = await reader.read()
    writer.close()
    return data


async def test_the_proxy_passes_allowed_domains_and_refuses_the_rest(
    tmp_path: Path, upstream: tuple[int, list[str]]
) -> None:
    port, seen = upstream
    proxy = FilteringProxy(["allowed.test"], resolve=loopback_resolver)
    path = str(tmp_path / "proxy.sock")
    async with proxy.listening(path):
        get = f"GET http://allowed.test:{port}/a?b=1 HTTP/1.1\r\nHost: allowed.test\r\n"
        ok = await request(path, get.encode() + b"Proxy-Connection: keep-alive\r\n\r\n")
        other = f"GET http://other.test:{port}/ HTTP/1.1\r\nHost: other.test\r\n\r\n"
        refused = await request(path, other.encode())
        connect = f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n"
        by_address = await request(path, connect.encode())
        garbage = await request(path, b"hello\r\n\r\n")
    assert ok.startswith(b"HTTP/1.1 200 OK") and b"GET /a?b=1 HTTP/1.1" in ok
    assert refused.startswith(b"HTTP/1.1 403 Forbidden")
    assert by_address.startswith(b"HTTP/1.1 403 Forbidden")
    assert garbage.startswith(b"HTTP/1.1 400")
    assert seen == ["GET /a?b=1 HTTP/1.1 | Host: allowed.test"]
    assert proxy.refused == [f"other.test:{port}", f"127.0.0.1:{port}"]


FETCH = """
import http.client, os, urllib.request
def fetch(label, fn):
    try:
        print(label, "OK", fn())
    except Exception as e:
        print(label, "FAILED", type(e).__name__, e)
def tunnel(host):
    conn = http.client.HTTPConnection("127.0.0.1", 3128, timeout=5)
    conn.set_tunnel(host, PORT)
    conn.request("GET", "/tunnelled")
    return conn.getresponse().read().decode()
def get(host):
    return urllib.request.urlopen(f"http://{host}:{PORT}/plain", timeout=5).read().decode()
print("proxy variable:", os.environ.get("HTTPS_PROXY"))
fetch("plain", lambda: get("allowed.test"))
fetch("sub", lambda: get("api.allowed.test"))
fetch("connect", lambda: tunnel("allowed.test"))
fetch("other", lambda: get("other.test"))
fetch("other_connect", lambda: tunnel("other.test"))
fetch("address", lambda: get("127.0.0.1"))
import socket
fetch("direct", lambda: socket.create_connection(("127.0.0.1", PORT), timeout=2).recv(100))
"""


@needs_bwrap
@needs_socat
async def test_allowed_domains_are_reachable_from_the_sandbox_and_others_are_not(
    sandbox_root: Path, upstream: tuple[int, list[str]]
) -> None:
    port, seen = upstream
    sandbox = BubblewrapSandbox(sandbox_root, resolve=loopback_resolver)
    run = SandboxRun(
        argv=python_argv(FETCH.replace("PORT", str(port)), sandbox.python),
        limits=replace(LIMITS, wall_seconds=30),
        allow_domains=("allowed.test", "*.allowed.test"),
    )
    result = await sandbox.run(run)
    out = result.stdout
    assert result.exit_code == 0, result.stderr
    assert "proxy variable: http://127.0.0.1:3128" in out
    assert "plain OK hello from upstream: GET /plain HTTP/1.1" in out
    assert "sub OK hello from upstream" in out
    assert "connect OK hello from upstream: GET /tunnelled HTTP/1.1" in out
    assert "other FAILED HTTPError HTTP Error 403" in out
    assert "other_connect FAILED OSError Tunnel connection failed: 403" in out
    assert "address FAILED HTTPError HTTP Error 403" in out
    assert "direct FAILED ConnectionRefusedError" in out  # its own loopback: nothing there
    assert sorted(line.split(" | ")[1] for line in seen) == [
        f"Host: allowed.test:{port}",
        f"Host: allowed.test:{port}",
        f"Host: api.allowed.test:{port}",
    ]
    assert list(sandbox_root.iterdir()) == []


@needs_bwrap
async def test_without_allowed_domains_there_is_no_proxy_either(
    sandbox_root: Path, upstream: tuple[int, list[str]]
) -> None:
    port, seen = upstream
    sandbox = BubblewrapSandbox(sandbox_root, resolve=loopback_resolver)
    code = FETCH.replace("PORT", str(port))
    result = await sandbox.run(SandboxRun(argv=python_argv(code, sandbox.python), limits=LIMITS))
    assert "proxy variable: None" in result.stdout
    for label in ("plain", "connect", "other", "direct"):
        assert f"{label} FAILED" in result.stdout
    assert " OK " not in result.stdout
    assert seen == []
