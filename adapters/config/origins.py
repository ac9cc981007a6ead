"""Web origins as `TOKENDANCE_CORS_ORIGINS` takes them: `scheme://host[:port]`, checked.

A browser sends its page's origin exactly so (lower case, no path, no default port), and
CORS compares it as a string: an origin written any other way would never match, so it
is normalized where that is safe (case, a default port) and refused where it is not.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

# The seed's web client in development (Vite's dev server): allowed when `serve` runs on
# the embedded defaults, so the client works out of the box.
DEV_ORIGIN = "http://localhost:5173"
DEFAULT_PORTS = {"http": 80, "https": 443}
_HOST = re.compile(r"^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$")
_IPV6 = re.compile(r"^[0-9a-f:.]+$")


def valid_origin(origin: str) -> str:
    """`origin` as a browser writes it (`https://app.example.com:8443`); ValueError if it
    is not an http(s) scheme and a host with at most a port."""
    text = origin.strip()
    if text == "*":
        raise ValueError("'*' is not taken: list each origin a browser client is served from")
    problem = (
        f"{origin!r} is not an origin: write scheme://host[:port], e.g. https://app.example.com"
    )
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise ValueError(problem) from None
    scheme, host = parts.scheme.lower(), (parts.hostname or "")
    if scheme not in DEFAULT_PORTS or "@" in parts.netloc or port == 0:
        raise ValueError(problem)
    if parts.path or parts.query or parts.fragment or text.endswith(("?", "#")):
        raise ValueError(f"{problem} (no path, not even a trailing /)")
    if _IPV6.match(host) and ":" in host:
        host = f"[{host}]"
    elif not _HOST.match(host):
        raise ValueError(problem)
    shown_port = "" if port is None or port == DEFAULT_PORTS[scheme] else f":{port}"
    return f"{scheme}://{host}{shown_port}"


def parse_origins(value: str) -> tuple[str, ...]:
    """The comma-separated origins of `value`, each checked (ValueError on the first bad one)."""
    origins = (valid_origin(o) for o in value.split(",") if o.strip())
    return tuple(dict.fromkeys(origins))
