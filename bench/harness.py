"""Shared set-up for benchmarks: embedded servers in a throwaway directory."""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from adapters.bootstrap import Container, build
from adapters.embedded import EmbeddedServers
from adapters.settings import Settings


@contextmanager
def bench_container(**settings: object) -> Iterator[Container]:
    """A container over fresh embedded servers (or TOKENDANCE_DATABASE_URL / _NATS_URL)."""
    root = Path(tempfile.mkdtemp(prefix="tokendance-bench-"))
    root.chmod(0o755)
    try:
        with EmbeddedServers(
            root,
            postgres="TOKENDANCE_DATABASE_URL" not in os.environ,
            nats="TOKENDANCE_NATS_URL" not in os.environ,
        ) as servers:
            admin = os.environ.get("TOKENDANCE_DATABASE_URL") or servers.database_url or ""
            name = f"bench_{uuid.uuid4().hex[:12]}"
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{name}"')
            params = conninfo_to_dict(admin)
            params["dbname"] = name
            container = build(
                Settings(nats_stream=f"B{uuid.uuid4().hex[:10].upper()}").override(**settings),
                database_url=make_conninfo("", **params),
                nats_url=os.environ.get("TOKENDANCE_NATS_URL") or servers.nats_url or "",
            )
            try:
                yield container
            finally:
                container.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def median(values: list[float]) -> float:
    return statistics.median(values)


def cores() -> int:
    return os.cpu_count() or 1
