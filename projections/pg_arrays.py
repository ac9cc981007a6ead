"""Lists that psycopg sends as binary arrays of a declared Postgres type.

psycopg finds a plain list's element type by looking at its items, and dumps them as
text, on every execute: for the lists of the statements run on each chat message (the
event inserts' columns, the budgets' scopes, the views' positions) that was about a
millisecond of the message's time with the GIL held (`bench.profile_serve --gil`). A
list of `array_of("uuid")` is dumped in binary with its type known: about a third of
the time for a short list.
"""

from __future__ import annotations

import functools
from typing import Any

import psycopg
from psycopg.types.array import ListBinaryDumper


@functools.cache  # one type, and one dumper registered, per Postgres type
def array_of(type_name: str) -> type[list[Any]]:
    """A list type whose values psycopg sends as a binary array of `type_name`."""
    info = psycopg.postgres.types[type_name]
    array: type[list[Any]] = type(f"{type_name.capitalize()}Array", (list,), {})
    attributes = {"oid": info.array_oid, "element_oid": info.oid}
    dumper = type(f"{array.__name__}Dumper", (ListBinaryDumper,), attributes)
    psycopg.adapters.register_dumper(array, dumper)
    return array
