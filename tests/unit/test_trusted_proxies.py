"""`TOKENDANCE_TRUSTED_PROXIES`: checked at start, and uvicorn reads proxy headers from
those peers only (from none by default, where uvicorn itself would trust 127.0.0.1)."""

from __future__ import annotations

import pytest

from adapters.config.settings import Settings
from adapters.http.server import proxy_options

PROXIES = "TOKENDANCE_TRUSTED_PROXIES"


def test_by_default_no_peer_is_trusted_and_uvicorn_reads_no_proxy_header() -> None:
    settings = Settings.from_env({})
    assert settings.trusted_proxies == ()
    assert proxy_options(settings.trusted_proxies) == {"proxy_headers": False}


def test_addresses_and_networks_are_kept_and_handed_to_uvicorn() -> None:
    settings = Settings.from_env({PROXIES: " 10.0.0.0/8, 192.0.2.7,,::1 ,2001:db8::/32"})
    assert settings.trusted_proxies == ("10.0.0.0/8", "192.0.2.7", "::1", "2001:db8::/32")
    assert proxy_options(settings.trusted_proxies) == {
        "proxy_headers": True,
        "forwarded_allow_ips": "10.0.0.0/8,192.0.2.7,::1,2001:db8::/32",
    }


@pytest.mark.parametrize("value", ["*", "proxy.internal", "10.0.0.1/8", "10.0.0.0/33", "1.2.3"])
def test_a_value_that_is_not_an_address_or_a_network_stops_the_start(value: str) -> None:
    with pytest.raises(SystemExit, match=PROXIES) as stopped:
        Settings.from_env({PROXIES: f"127.0.0.1,{value}"})
    assert repr(value) in str(stopped.value)
