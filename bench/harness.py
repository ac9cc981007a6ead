"""Shared set-up for benchmarks: embedded servers in a throwaway directory."""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from adapters.bootstrap import bootstrap
from adapters.bootstrap.background import Background
from adapters.config.settings import Settings
from adapters.processes.embedded import EmbeddedServers
from adapters.system import System


@dataclass(frozen=True)
class FreshServers:
    """A database and a stream of the benchmark's own, and a directory for its files."""

    root: Path
    database_url: str
    nats_url: str
    stream: str


@contextmanager
def fresh_servers(prefix: str) -> Iterator[FreshServers]:
    """Embedded Postgres and NATS in a throwaway directory (or those named by
    TOKENDANCE_DATABASE_URL / _NATS_URL), with a new database and stream name."""
    root = Path(tempfile.mkdtemp(prefix=f"tokendance-{prefix}-"))
    root.chmod(0o755)
    try:
        with EmbeddedServers(
            root,
            postgres="TOKENDANCE_DATABASE_URL" not in os.environ,
            nats="TOKENDANCE_NATS_URL" not in os.environ,
        ) as servers:
            admin = os.environ.get("TOKENDANCE_DATABASE_URL") or servers.database_url or ""
            name = f"{prefix}_{uuid.uuid4().hex[:12]}"
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{name}"')
            yield FreshServers(
                root,
                make_conninfo("", **{**conninfo_to_dict(admin), "dbname": name}),
                os.environ.get("TOKENDANCE_NATS_URL") or servers.nats_url or "",
                f"B{uuid.uuid4().hex[:10].upper()}",
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def bench_system(*, projections: bool = True, **settings: object) -> Iterator[System]:
    """The system, as bootstrap wires it, over fresh embedded servers (services not started)."""
    with fresh_servers("bench") as fresh:
        system = bootstrap(
            Settings(nats_stream=fresh.stream, data_dir=fresh.root).override(**settings),
            database_url=fresh.database_url,
            nats_url=fresh.nats_url,
            background=Background(projections=projections),
        )
        try:
            yield system
        finally:
            system.close()


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def median(values: list[float]) -> float:
    return statistics.median(values)


def cores() -> int:
    return os.cpu_count() or 1
