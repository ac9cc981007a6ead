"""Databases of the tests' own on the shared Postgres: made (empty, or a copy of the
template `tests/conftest.py` makes once per run), and dropped even while connected."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo


def database_url(admin_url: str, name: str) -> str:
    """`admin_url` pointed at database `name`."""
    params = conninfo_to_dict(admin_url)
    params["dbname"] = name
    return make_conninfo("", **params)


def create_database(admin_url: str, name: str, template: str | None = None) -> None:
    copy = f' TEMPLATE "{template}"' if template else ""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"{copy}')


def drop_database(admin_url: str, name: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def own_database(admin_url: str, template: str | None = None) -> Iterator[str]:
    """The URL of a new database (a copy of `template`, or empty), dropped afterwards."""
    name = f"test_{uuid.uuid4().hex[:16]}"
    create_database(admin_url, name, template)
    try:
        yield database_url(admin_url, name)
    finally:
        drop_database(admin_url, name)
