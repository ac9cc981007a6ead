"""Which URLs the page reader may fetch: public http(s) addresses, and what the allow list names.

A URL is parsed and checked (http/https, a host, no user name or password), its host is
resolved once, and every address it resolves to must be public: one loopback, private,
link-local, multicast, reserved, shared (100.64/10) or cloud metadata address refuses the
URL, also when it hides in an IPv4-mapped or 6to4 IPv6 address. The reader then connects
to the addresses checked here and resolves nothing itself, so a name that answers a
public address to the check and a private one to the connection (DNS rebinding) cannot
reach the private one.

`TOKENDANCE_FETCH_ALLOW` (an `AllowList`) lifts the address check for the host names,
addresses and networks it lists, on any port.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx

from application.ports import PageError, PageRefused

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# (host, port) -> the addresses the name resolves to, as strings.
Resolver = Callable[[str, int], Awaitable[list[str]]]

METADATA = {
    ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack...
    ipaddress.ip_address("fd00:ec2::254"),  # AWS over IPv6
    ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
}
SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT
NAT64 = ipaddress.ip_network("64:ff9b::/96")
_HOST_NAME = re.compile(r"[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?\.?")


@dataclass(frozen=True)
class AllowList:
    """Hosts and networks fetched even though they are not public (`TOKENDANCE_FETCH_ALLOW`)."""

    hosts: frozenset[str] = frozenset()
    networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def parse(cls, text: str) -> AllowList:
        """Comma-separated host names, IP addresses and CIDR networks; blanks are skipped."""
        hosts: set[str] = set()
        networks: list[IPNetwork] = []
        for item in (part.strip() for part in text.split(",")):
            if not item:
                continue
            try:
                networks.append(ipaddress.ip_network(item.strip("[]"), strict=False))
            except ValueError:
                hosts.add(_normal_host(item))
        return cls(frozenset(hosts), tuple(networks))

    def allows_host(self, host: str) -> bool:
        return _normal_host(host) in self.hosts

    def allows_address(self, address: IPAddress) -> bool:
        return any(address in network for network in self.networks)


@dataclass(frozen=True)
class Target:
    """A URL that passed the guard and the addresses to connect to (in resolver order)."""

    url: httpx.URL
    addresses: tuple[IPAddress, ...]


class UrlGuard:
    """Checks a URL and resolves its host; raises `PageRefused` for what may not be fetched."""

    def __init__(self, allow: AllowList, *, resolve: Resolver | None = None) -> None:
        self.allow = allow
        self.resolve = resolve or system_resolve

    async def check(self, url: str | httpx.URL) -> Target:
        parsed = parse_url(url)
        host = parsed.host
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        literal = _ip_literal(host)
        addresses = (literal,) if literal else await self._resolve(host, port)
        if not self.allow.allows_host(host):
            for address in addresses:
                reason = why_not_public(address)
                if reason and not self.allow.allows_address(address):
                    shown = host if literal else f"{host} resolves to {address}, which"
                    raise PageRefused(
                        f"{shown} is {reason}: the reader fetches public addresses only "
                        "(TOKENDANCE_FETCH_ALLOW can list hosts and networks to allow)"
                    )
        return Target(parsed, addresses)

    async def _resolve(self, host: str, port: int) -> tuple[IPAddress, ...]:
        try:
            found = await self.resolve(host, port)
        except (OSError, UnicodeError) as e:  # socket.gaierror is an OSError
            raise PageError(f"the host name {host} does not resolve ({e})") from None
        addresses = tuple(dict.fromkeys(ipaddress.ip_address(a.split("%")[0]) for a in found))
        if not addresses:
            raise PageError(f"the host name {host} does not resolve")
        return addresses


def parse_url(url: str | httpx.URL) -> httpx.URL:
    """The URL if it is one the reader may try: http(s), a plain host, no user or password."""
    shown = str(url)[:200]
    if isinstance(url, str) and (url != url.strip() or any(c < " " for c in url)):
        raise PageRefused(f"not a valid URL (spaces or control characters): {shown!r}")
    try:
        parsed = url if isinstance(url, httpx.URL) else httpx.URL(url)
        port = parsed.port
    except (httpx.InvalidURL, ValueError, UnicodeError) as e:
        raise PageRefused(f"not a valid URL ({e}): {shown!r}") from None
    if not parsed.scheme:
        raise PageRefused(f"not a valid URL (no http:// or https:// in front): {shown!r}")
    if parsed.scheme not in ("http", "https"):
        raise PageRefused(f"only http and https URLs are fetched, not {parsed.scheme}: {shown!r}")
    if parsed.userinfo:
        raise PageRefused(f"URLs with a user name or password are not fetched: {shown!r}")
    host = parsed.host
    if not host or not (_ip_literal(host) or _HOST_NAME.fullmatch(parsed.raw_host.decode())):
        raise PageRefused(f"not a valid URL (no valid host name): {shown!r}")
    if port is not None and not 0 < port < 65536:
        raise PageRefused(f"not a valid URL (port {port}): {shown!r}")
    return parsed


def why_not_public(address: IPAddress) -> str | None:
    """What makes an address private or special ("a loopback address"), or None if public."""
    if address in METADATA:
        return "a cloud metadata address"
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address in NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            inner = why_not_public(embedded)
            return f"{inner} (inside the IPv6 address)" if inner else None
    checks = (
        (address.is_loopback, "a loopback address"),
        (address.is_unspecified, "an unspecified address"),
        (address.is_link_local, "a link-local address"),
        (address.is_multicast, "a multicast address"),
        (address in SHARED, "a shared (carrier-grade NAT) address"),
        (address.is_reserved, "a reserved address"),
        (address.is_private, "a private address"),
        (not address.is_global, "not a public address"),
    )
    return next((reason for found, reason in checks if found), None)


async def system_resolve(host: str, port: int) -> list[str]:
    """The addresses the system resolver gives for a host (`loop.getaddrinfo`)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def _ip_literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _normal_host(host: str) -> str:
    return host.strip().strip("[]").lower().rstrip(".")
