"""Write the exported JSON Schemas: `python -m schemas.export` (`--check` only compares)."""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec

from schemas.sse import json_schema

SSE_SCHEMA = Path(__file__).parent / "sse.schema.json"


def sse_schema_text() -> str:
    """The SSE contract's JSON Schema, as the file holds it."""
    return msgspec.json.format(msgspec.json.encode(json_schema()), indent=2).decode() + "\n"


def main(argv: list[str]) -> int:
    text = sse_schema_text()
    if "--check" in argv:
        current = SSE_SCHEMA.read_text() if SSE_SCHEMA.exists() else ""
        if current != text:
            print(f"{SSE_SCHEMA} is out of date: run `python -m schemas.export`")
            return 1
        return 0
    SSE_SCHEMA.write_text(text)
    print(f"wrote {SSE_SCHEMA}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
