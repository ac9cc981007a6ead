"""A stored file as a download: its bytes with its media type and its name."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote

from litestar import Response


def content_disposition(name: str) -> str:
    """`attachment` with an ASCII `filename` and, for other names, RFC 5987 `filename*`."""
    fallback = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "_" for c in name)
    header = f'attachment; filename="{fallback}"'
    return header if fallback == name else f"{header}; filename*=UTF-8''{quote(name, safe='')}"


def download(
    data: bytes, media_type: str, disposition: str, extra: Mapping[str, str] | None = None
) -> Response[bytes]:
    """The bytes as an attachment, never sniffed into another type; a text type keeps its
    charset (Litestar would add `; charset=` to it itself)."""
    headers = {
        "Content-Disposition": disposition,
        "X-Content-Type-Options": "nosniff",
        **(extra or {}),
    }
    kind, _, params = media_type.partition(";")
    if kind.strip().startswith("text/"):
        charset = params.partition("charset=")[2].split(";")[0].strip() or "utf-8"
        return Response(data, media_type=kind.strip(), headers=headers, encoding=charset)
    return Response(data, media_type=media_type, headers=headers)
