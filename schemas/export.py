"""Write the exported JSON Schemas: `python -m schemas.export` (`--check` only compares)."""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec

from schemas import sse, ws

SSE_SCHEMA = Path(__file__).parent / "sse.schema.json"
WS_SCHEMA = Path(__file__).parent / "ws.schema.json"


def sse_schema_text() -> str:
    """The SSE contract's JSON Schema, as the file holds it."""
    return _text(sse.json_schema())


def ws_schema_text() -> str:
    """The WebSocket messages' JSON Schema (both directions), as the file holds it."""
    return _text(ws.json_schema())


def _text(schema: object) -> str:
    return msgspec.json.format(msgspec.json.encode(schema), indent=2).decode() + "\n"


def main(argv: list[str]) -> int:
    files = {SSE_SCHEMA: sse_schema_text(), WS_SCHEMA: ws_schema_text()}
    if "--check" in argv:
        stale = [p for p, text in files.items() if (p.read_text() if p.exists() else "") != text]
        for path in stale:
            print(f"{path} is out of date: run `python -m schemas.export`")
        return 1 if stale else 0
    for path, text in files.items():
        path.write_text(text)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
