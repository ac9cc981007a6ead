"""The API page's SSE table marks optional exactly the fields a payload may leave out.

Payloads are encoded with `omit_defaults` (schemas/sse.py): a field at its default
(None, 0, "", 1 for `artifact_version`) is not sent at all, so a client that reads the
table must see it marked `field?`. Every field is listed (but `version` and `timestamp`,
which the table's introduction covers, and `notice`'s fields by kind).
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from schemas.sse import PAYLOAD_CLASSES

README = Path(__file__).parents[2] / "docs" / "api.md"
COMMON = {"type", "version", "timestamp"}
BY_KIND = {"notice"}  # its fields are described by kind, in words


def _table() -> dict[str, str]:
    """The SSE section's rows: type -> its fields cell."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Server-Sent Events", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| (.+?) \| .+ \|$", section, flags=re.MULTILINE)
    return dict(rows)


def _listed(cell: str) -> dict[str, bool]:
    """The field names of a cell (not the values in parentheses), each with its `?`."""
    depth, top = 0, []
    for char in cell:
        depth += char == "("
        if depth == 0:
            top.append(char)
        depth -= char == ")" and depth > 0
    return {name: mark == "?" for name, mark in re.findall(r"`(\w+)(\??)`", "".join(top))}


def _tag(cls: type[msgspec.Struct]) -> str:
    tag = cls.__struct_config__.tag
    assert isinstance(tag, str)
    return tag


def test_every_payload_type_has_a_row() -> None:
    assert set(_table()) == {_tag(cls) for cls in PAYLOAD_CLASSES}


def test_optional_fields_are_marked_optional_and_only_they() -> None:
    table = _table()
    wrong = []
    for cls in PAYLOAD_CLASSES:
        tag = _tag(cls)
        fields = {f.name: not f.required for f in msgspec.structs.fields(cls)}
        listed = _listed(table[tag])
        for name, marked in listed.items():
            if name not in fields:
                wrong.append(f"{tag}: `{name}` is no field")
            elif marked != fields[name]:
                should = f"`{name}?` (it has a default)" if fields[name] else f"`{name}`"
                wrong.append(f"{tag}: `{name}` should read {should}")
        if tag not in BY_KIND:
            missing = set(fields) - COMMON - set(listed)
            wrong += [f"{tag}: `{name}` is not listed" for name in sorted(missing)]
    assert not wrong, "\n".join(wrong)
