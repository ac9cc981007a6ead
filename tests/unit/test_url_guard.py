"""The URL guard: only public http(s) addresses pass, unless the allow list names them.

Host names resolve through a fake resolver (no real DNS); IP literals need none.
"""

from __future__ import annotations

import ipaddress
import socket

import pytest

from adapters.web.url_guard import AllowList, UrlGuard, why_not_public
from application.ports import PageError, PageRefused


class FakeDns:
    """A resolver answering from a table; an unknown name does not resolve."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table

    async def __call__(self, host: str, port: int) -> list[str]:
        if host not in self.table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.table[host]


DNS = FakeDns(
    {
        "public.example": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
        "evil.example": ["10.0.0.5"],
        "half-evil.example": ["93.184.216.34", "10.0.0.5"],
        "metadata.example": ["169.254.169.254"],
        "mapped.example": ["::ffff:127.0.0.1"],
        "example.internal": ["10.9.9.9"],
        "office.example": ["10.1.5.5"],
        "other-office.example": ["10.2.0.1"],
    }
)


def guard(allow: str = "") -> UrlGuard:
    return UrlGuard(AllowList.parse(allow), resolve=DNS)


async def refusal(url: str, allow: str = "") -> str:
    with pytest.raises(PageRefused) as caught:
        await guard(allow).check(url)
    assert caught.value.code == "URL_NOT_ALLOWED"
    return str(caught.value)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1:8080/", "loopback"),
        ("http://10.0.0.1/", "private"),
        ("http://169.254.169.254/latest/meta-data/", "cloud metadata"),
        ("http://[::1]/", "loopback"),
        ("http://[fd00:ec2::254]/", "cloud metadata"),
        ("http://[::ffff:10.0.0.1]/", "private"),
        ("http://[64:ff9b::a00:1]/", "private"),
        ("http://[fe80::1]/", "link-local"),
        ("http://169.254.1.1/", "link-local"),
        ("http://100.64.0.1/", "shared"),
        ("http://0.0.0.0/", "unspecified"),
        ("http://224.0.0.1/", "multicast"),
        ("http://192.168.1.1/", "private"),
        ("http://240.0.0.1/", "reserved"),
    ],
)
async def test_a_special_address_is_refused_with_the_reason(url: str, reason: str) -> None:
    assert reason in await refusal(url)


async def test_loopback_is_refused_without_the_allow_setting_and_read_with_it() -> None:
    assert "loopback" in await refusal("http://127.0.0.1:9/")
    target = await guard("127.0.0.1").check("http://127.0.0.1:9/")
    assert target.addresses == (ipaddress.ip_address("127.0.0.1"),)


async def test_a_public_name_that_resolves_to_a_private_address_is_refused() -> None:
    message = await refusal("https://evil.example/page")
    assert "evil.example resolves to 10.0.0.5" in message
    assert "private" in message


async def test_one_private_address_among_public_ones_refuses_the_name() -> None:
    assert "10.0.0.5" in await refusal("https://half-evil.example/")
    assert "cloud metadata" in await refusal("http://metadata.example/")
    assert "loopback" in await refusal("http://mapped.example/")


async def test_a_public_name_passes_with_every_address_it_resolves_to() -> None:
    target = await guard().check("https://public.example/a?b=c")
    assert str(target.url) == "https://public.example/a?b=c"
    assert [str(a) for a in target.addresses] == DNS.table["public.example"]


async def test_the_allow_list_names_hosts_addresses_and_networks_on_any_port() -> None:
    allow = "example.internal, 10.1.0.0/16 ,[::1]"
    assert (await guard(allow).check("http://EXAMPLE.internal:8443/")).addresses
    assert (await guard(allow).check("http://office.example:1/")).addresses
    assert (await guard(allow).check("http://[::1]:5/")).addresses
    assert "private" in await refusal("http://other-office.example/", allow)
    assert "private" in await refusal("http://10.0.0.1/", allow)


@pytest.mark.parametrize(
    ("url", "complaint"),
    [
        ("file:///etc/passwd", "not file:"),
        ("ftp://x/", "not ftp:"),
        ("javascript:alert(1)", "not javascript:"),
        ("example.com/page", "no http:// or https://"),
        ("http://", "no valid host"),
        ("http:///etc/passwd", "no valid host"),
        ("http://exa mple.com/", "not a valid URL"),
        ("http://example.com:99999/", "not a valid URL"),
        ("http://example.com:port/", "not a valid URL"),
        (" http://example.com/", "not a valid URL"),
        ("http://example.com/\r\nHost: evil", "not a valid URL"),
        ("http://[::1/", "not a valid URL"),
        ("http://public.example@10.0.0.1/", "user name or password"),
        ("https://user:secret@public.example/", "user name or password"),
    ],
)
async def test_a_malformed_or_non_http_url_is_refused_with_a_clear_message(
    url: str, complaint: str
) -> None:
    assert complaint in await refusal(url)


async def test_a_numeric_host_that_the_system_resolves_to_loopback_is_refused() -> None:
    # "2130706433" is 127.0.0.1 to the system resolver (no DNS query for a number).
    with pytest.raises(PageRefused, match=r"resolves to 127\.0\.0\.1"):
        await UrlGuard(AllowList()).check("http://2130706433/")


async def test_a_name_that_does_not_resolve_is_a_page_error() -> None:
    with pytest.raises(PageError, match="does not resolve"):
        await guard().check("https://nowhere.example/")


def test_addresses_of_the_public_internet_are_public() -> None:
    for address in ("93.184.216.34", "8.8.8.8", "2606:4700:4700::1111"):
        assert why_not_public(ipaddress.ip_address(address)) is None
