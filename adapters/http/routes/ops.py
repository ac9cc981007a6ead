"""Operations: liveness, readiness (Postgres, NATS, lags)."""

from __future__ import annotations

import asyncio
from typing import Annotated

from litestar import Controller, Response, get
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import Parameter
from prometheus_client import CONTENT_TYPE_LATEST

from adapters.http.deps import ApiDep
from adapters.http.middleware.metrics import MetricsScope
from adapters.http.reads.probes import Probes
from schemas.health import Health, KeeperHealth, ProjectionHealth, RelayHealth

READY_LAG = 10_000  # events a projection may trail the log by and still be "ready"


class OpsController(Controller):
    tags = ["operations"]

    @get("/health")
    async def health(self, api: ApiDep) -> Health:
        """The process is up; relay and projection positions and lags."""
        return await health_report(api.probes)

    @get(
        "/readiness",
        responses={
            503: ResponseSpec(
                dict[str, object], description="Not ready: what is not", generate_examples=False
            )
        },
    )
    async def readiness(self, api: ApiDep) -> Response[dict[str, object]]:
        """200 when Postgres and NATS answer and the read models keep up; 503 otherwise."""
        probes = api.probes
        checks: dict[str, object] = {}
        try:
            await asyncio.wait_for(probes.bridge(probes.recorder.max_notification_id), 2.0)
            checks["postgres"] = "ok"
        except Exception as e:  # noqa: BLE001 - any failure means not ready
            checks["postgres"] = f"unavailable: {type(e).__name__}"
        nc = probes.services.nats
        checks["nats"] = "ok" if nc is not None and nc.is_connected else "unavailable"
        report = await health_report(probes) if checks["postgres"] == "ok" else None
        if report is not None:
            checks["relay_lag"] = report.relay.lag if report.relay else None
            checks["projections"] = {
                p.name: {"lag": p.lag, "error": p.error} for p in report.projections
            }
        ready = (
            checks["postgres"] == "ok"
            and checks["nats"] == "ok"
            and report is not None
            and all(p.error is None and p.lag <= READY_LAG for p in report.projections)
        )
        return Response({"ready": ready, "checks": checks}, status_code=200 if ready else 503)


async def health_report(probes: Probes) -> Health:
    services = probes.services
    head = await probes.bridge(probes.recorder.max_notification_id) or 0
    relay = services.relay
    relay_health = (
        RelayHealth(
            active=relay.is_leader, position=relay.position, lag=max(head - relay.position, 0)
        )
        if relay is not None
        else None
    )
    projections = []
    for name, (position, lag) in (await probes.bridge(probes.view_lags)).items():
        runner = services.runners.get(name)
        error = str(runner.error) if runner is not None and runner.error else None
        projections.append(ProjectionHealth(name, position, lag, error))
    failed = any(p.error for p in projections)
    kept = await probes.bridge(probes.kept)
    keeper = services.memory_keeper
    keeper_health = KeeperHealth(kept, max(head - kept, 0), keeper.error if keeper else None)
    return Health("degraded" if failed else "ok", head, relay_health, projections, keeper_health)


@get("/metrics", tags=["operations"])
async def metrics_endpoint(
    api: ApiDep,
    of: Annotated[MetricsScope, Parameter(query="scope")] = "process",  # `scope` is litestar's
) -> Response[bytes]:
    """Prometheus metrics (text exposition format): this process's (counters that sum
    across replicas), or with `scope=global` the store's totals and lags (gauges, alike
    from every replica: scrape one)."""
    body = await api.metrics.exposition(of)
    return Response(body, media_type=CONTENT_TYPE_LATEST)
