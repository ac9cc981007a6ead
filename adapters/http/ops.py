"""Operations: liveness, readiness (Postgres, NATS, lags)."""

from __future__ import annotations

import asyncio

from litestar import Controller, Response, get

from adapters.http.api import Api
from schemas.health import Health, ProjectionHealth, RelayHealth

READY_LAG = 10_000  # events a projection may trail the log by and still be "ready"


class OpsController(Controller):
    tags = ["operations"]

    @get("/health")
    async def health(self, api: Api) -> Health:
        """The process is up; relay and projection positions and lags."""
        return await health_report(api)

    @get("/readiness")
    async def readiness(self, api: Api) -> Response[dict[str, object]]:
        """200 when Postgres and NATS answer and the read models keep up; 503 otherwise."""
        checks: dict[str, object] = {}
        try:
            await asyncio.wait_for(api.call(api.container.recorder.max_notification_id), 2.0)
            checks["postgres"] = "ok"
        except Exception as e:  # noqa: BLE001 - any failure means not ready
            checks["postgres"] = f"unavailable: {type(e).__name__}"
        nc = api.services.nats
        checks["nats"] = "ok" if nc is not None and nc.is_connected else "unavailable"
        report = await health_report(api) if checks["postgres"] == "ok" else None
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


async def health_report(api: Api) -> Health:
    container, services = api.container, api.services
    head = await container.bridge(container.recorder.max_notification_id) or 0
    relay = services.relay
    relay_health = (
        RelayHealth(
            active=relay.is_leader, position=relay.position, lag=max(head - relay.position, 0)
        )
        if relay is not None
        else None
    )
    projections = []
    # A view's lag is against the log it reads (the accounts view: the accounts' log).
    heads = {container.sessions.name: head}
    for name, view in container.views.items():
        log = container.log_of(name)
        if log.name not in heads:
            heads[log.name] = await container.bridge(log.recorder.max_notification_id) or 0
        runner = services.runners.get(name)
        position = await container.bridge(view.position)
        error = str(runner.error) if runner is not None and runner.error else None
        lag = max(heads[log.name] - position, 0)
        projections.append(ProjectionHealth(name, position, lag, error))
    failed = any(p.error for p in projections)
    return Health("degraded" if failed else "ok", head, relay_health, projections)
