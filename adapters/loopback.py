"""Whether a URL's host is this machine: what the guards that keep tests off real paid
APIs let through (`ALLOW_MODEL_REQUESTS`, `ALLOW_SEARCH_REQUESTS`)."""

from __future__ import annotations

import ipaddress


def is_loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
