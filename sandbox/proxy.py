"""A host-side HTTP(S) proxy that lets sandboxed code reach only allowed domains.

The sandbox has no network of its own (only its loopback). This proxy listens on a
unix socket that is bind-mounted into the sandbox, where a bridge forwards
127.0.0.1:3128 to it and HTTP_PROXY/HTTPS_PROXY point there (as sandbox-runtime
does). HTTPS goes through CONNECT, plain HTTP as an absolute-URI request; anything
else, and every destination not allowed, gets a 403 and a log line.

A name is resolved here, on the host, and the connection goes to the address that
was checked; the default resolver refuses names that resolve to loopback, private,
link-local (the cloud metadata address) or other non-public addresses.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import re
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

Resolver = Callable[[str, int], Awaitable[list[str]]]

HEAD_LIMIT = 64 * 1024
TIMEOUT = 10.0
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
_HOP_BY_HOP = {b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive"}


def valid_pattern(pattern: str) -> str:
    """`pattern` normalized: a domain (`example.com`) or all its subdomains
    (`*.example.com`, not example.com itself); ValueError otherwise."""
    domain = pattern.strip().lower().rstrip(".")
    bare = domain.removeprefix("*.")
    labels = bare.split(".")
    if len(labels) < 2 or not all(_LABEL.match(label) for label in labels):
        raise ValueError(f"not a domain or *.domain: {pattern!r}")
    return domain


class Allowlist:
    """Domains a run may reach."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = tuple(valid_pattern(p) for p in patterns)

    def allows(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        return any(host.endswith(p[1:]) if p.startswith("*.") else host == p for p in self.patterns)


async def public_addresses(host: str, port: int) -> list[str]:
    """The public addresses `host` resolves to (none if it names only private ones)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found = [str(info[4][0]) for info in infos]
    return [a for a in dict.fromkeys(found) if ipaddress.ip_address(a).is_global]


class FilteringProxy:
    """Serves one run's sandbox on a unix socket; `refused` lists what it turned away."""

    def __init__(self, allow: Sequence[str], *, resolve: Resolver = public_addresses) -> None:
        self.allowlist = Allowlist(allow)
        self.resolve = resolve
        self.refused: list[str] = []

    @contextlib.asynccontextmanager
    async def listening(
        self, path: str, owner: tuple[int, int] | None = None
    ) -> AsyncIterator[None]:
        """Accept connections on the unix socket `path` for the duration; only its owner
        (`owner`, the run's uid and gid, else this process) may connect."""
        server = await asyncio.start_unix_server(self._serve, path=path)
        if owner is not None:
            os.chown(path, *owner)
        os.chmod(path, 0o600)
        try:
            yield
        finally:
            server.close()
            await server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), TIMEOUT)
            await self._handle(head, reader, writer)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ValueError):
            await _answer(writer, 400, "Bad Request", "not an HTTP proxy request\n")
        except OSError as e:
            log.info("sandbox proxy: connection ended: %s", e)
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _handle(
        self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        request_line, _, headers = head.partition(b"\r\n")
        method, target, version = _split_request_line(request_line)
        if method == "CONNECT":
            host, _, port_text = target.rpartition(":")
            host, port = host.strip("[]"), _port(port_text)
            upstream = await self._open(host, port, writer)
            if upstream is not None:
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                await _pipe(reader, writer, *upstream)
            return
        url = urlsplit(target)
        if url.scheme != "http" or not url.hostname:
            await _answer(writer, 400, "Bad Request", f"not a proxy request: {target}\n")
            return
        upstream = await self._open(url.hostname, url.port or 80, writer)
        if upstream is None:
            return
        path = url.path or "/"
        path += f"?{url.query}" if url.query else ""
        upstream[1].write(f"{method} {path} {version}\r\n".encode() + _forwarded(headers))
        await _pipe(reader, writer, *upstream)

    async def _open(
        self, host: str, port: int, writer: asyncio.StreamWriter
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """A connection to an allowed `host`, or None after answering the client."""
        if port <= 0 or not self.allowlist.allows(host):
            self.refused.append(f"{host}:{port}")
            log.warning("sandbox proxy: refused %s:%s (not in the allowlist)", host, port)
            await _answer(writer, 403, "Forbidden", f"{host} is not an allowed domain\n")
            return None
        try:
            addresses = await asyncio.wait_for(self.resolve(host, port), TIMEOUT)
        except (OSError, TimeoutError):
            addresses = []
        for address in addresses:
            with contextlib.suppress(OSError, TimeoutError):
                return await asyncio.wait_for(asyncio.open_connection(address, port), TIMEOUT)
        self.refused.append(f"{host}:{port}")
        log.warning("sandbox proxy: no public address reachable for %s:%s", host, port)
        await _answer(writer, 502, "Bad Gateway", f"{host} could not be reached\n")
        return None


def _split_request_line(line: bytes) -> tuple[str, str, str]:
    parts = line.decode("latin-1").split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise ValueError(f"not an HTTP request line: {line[:200]!r}")
    return parts[0].upper(), parts[1], parts[2]


def _port(text: str) -> int:
    return int(text) if text.isdigit() and 0 < int(text) < 65536 else 0


def _forwarded(headers: bytes) -> bytes:
    """The request's headers minus the proxy's hop-by-hop ones, one request only."""
    kept = [
        line
        for line in headers.split(b"\r\n")
        if line and line.split(b":", 1)[0].strip().lower() not in _HOP_BY_HOP
    ]
    return b"\r\n".join([*kept, b"Connection: close", b"", b""])


async def _answer(writer: asyncio.StreamWriter, status: int, reason: str, body: str) -> None:
    data = body.encode()
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
        + data
    )
    with contextlib.suppress(OSError):
        await writer.drain()


async def _pipe(
    client_r: asyncio.StreamReader,
    client_w: asyncio.StreamWriter,
    up_r: asyncio.StreamReader,
    up_w: asyncio.StreamWriter,
) -> None:
    """Copy both ways until both sides are done."""

    async def copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await src.read(64 * 1024):
                dst.write(data)
                await dst.drain()
            if dst.can_write_eof():
                dst.write_eof()

    try:
        await asyncio.gather(copy(client_r, up_w), copy(up_r, client_w))
    finally:
        up_w.close()
