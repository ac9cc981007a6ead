"""Prometheus metrics: this process's at `/metrics`, the store's at `/metrics?scope=global`.

Each app has a registry of its own (several apps in one test process never clash).
Request counts and latencies are recorded as requests pass. What every replica would
read alike from Postgres (the log's head, lags, token and cost totals) is only in the
`global` scope, as gauges, computed when scraped on the event-store thread pool: a sum
over the replicas' `/metrics` counts each request once and no total twice; scrape one
replica's (or the load balancer's) `?scope=global` for the totals.

This process (`/metrics`):

- `tokendance_http_requests_total{method,route,status}` (counter): `route` is the
  route template (`/api/v1/sessions/{session_id}`), so ids make no new series.
- `tokendance_http_request_duration_seconds{method,route,status}` (histogram): until
  the response starts (for an SSE stream: until it is accepted, not until it ends).
- `tokendance_sse_streams_open` (gauge): SSE responses streaming in this process.
- `tokendance_rate_limited_total{limit}` (counter): requests refused with 429.
- `tokendance_read_model_waits_total` (counter): queries that waited on a read model.
- `tokendance_relay_active`, `tokendance_relay_lag_events` (gauges): present when this
  process runs the relay: whether it leads, and events stored but not yet on NATS.

The store (`/metrics?scope=global`):
- `tokendance_store_up` (gauge): 1 when the figures below could be read.
- `tokendance_events_stored` (gauge): notification id of the newest stored event. Ids
  may have holes, so this is an upper bound of the events stored.
- `tokendance_projection_lag_events{view}` (gauge): events the read model has yet to apply.
- `tokendance_memory_keeper_lag_events` (gauge): events the memory keeper has yet to read
  for what sessions taught (a pass every 2 s: a lag that only grows means it is stuck).
- `tokendance_model_tokens{kind}` (gauge): model tokens over all sessions, by kind
  (input, output, cache_read, cache_write), from the sessions read model.
- `tokendance_model_tokens_by_model{kind,model}` and `tokendance_model_cost_usd{model}`
  (gauges): tokens and cost by model, from the usage read model (no per-user or
  per-tenant labels: their number is unbounded).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Literal

from eventsourcing.persistence import PersistenceError
from litestar.enums import ScopeType
from litestar.exceptions import HTTPException
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Message, Receive, Scope, Send
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest

from adapters.http.errors import status_of
from adapters.http.middleware.limits import RateLimits
from adapters.http.reads.probes import Probes
from domain.errors import DomainError

log = logging.getLogger(__name__)

LABELS = ("method", "route", "status")
TOKEN_KINDS = ("input", "output", "cache_read", "cache_write")
TOKENS_SQL = (
    "SELECT coalesce(sum(input_tokens), 0)::bigint AS input, "
    "coalesce(sum(output_tokens), 0)::bigint AS output, "
    "coalesce(sum(cache_read_tokens), 0)::bigint AS cache_read, "
    "coalesce(sum(cache_write_tokens), 0)::bigint AS cache_write FROM sessions_view"
)


USAGE_BY_MODEL_SQL = (
    "SELECT model, sum(input_tokens)::bigint AS input, sum(output_tokens)::bigint AS output, "
    "sum(cache_read_tokens)::bigint AS cache_read, "
    "sum(cache_write_tokens)::bigint AS cache_write, sum(cost_usd) AS cost_usd "
    "FROM usage_daily GROUP BY model ORDER BY model"
)


MetricsScope = Literal["process", "global"]


class Metrics:
    """The registry of one app and its request instruments."""

    def __init__(self, probes: Probes, limits: RateLimits) -> None:
        self.probes = probes
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "tokendance_http_requests", "HTTP requests answered", LABELS, registry=self.registry
        )
        self.latency = Histogram(
            "tokendance_http_request_duration_seconds",
            "Seconds until the response started",
            LABELS,
            registry=self.registry,
        )
        self.registry.register(ProcessCollector(probes, limits))
        self.store = CollectorRegistry()
        self.store.register(StoreCollector(probes))

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(method, route, str(status)).observe(seconds)

    async def exposition(self, scope: MetricsScope = "process") -> bytes:
        """The text format; off the event loop, as collecting may query Postgres."""
        registry = self.registry if scope == "process" else self.store
        return await self.probes.bridge(generate_latest, registry)


class ProcessCollector:
    """This process's figures: streams, waits, refusals, and its relay if it runs one."""

    def __init__(self, probes: Probes, limits: RateLimits) -> None:
        self.probes, self.limits = probes, limits

    def collect(self) -> Iterator[Metric]:
        streams = GaugeMetricFamily("tokendance_sse_streams_open", "SSE responses streaming")
        streams.add_metric([], self.limits.streams.total)
        yield streams
        waits = CounterMetricFamily(
            "tokendance_read_model_waits",
            "Times a request waited on a read model (read-your-writes; queries only)",
            value=self.probes.waiter.waits,
        )
        yield waits
        refused = CounterMetricFamily(
            "tokendance_rate_limited", "Requests refused with 429", labels=["limit"]
        )
        for limit, count in self.limits.refused.copy().items():
            refused.add_metric([limit], count)
        yield refused
        relay = self.probes.services.relay
        if relay is None:
            return
        yield GaugeMetricFamily(
            "tokendance_relay_active",
            "1 when this process leads the relay",
            value=int(relay.is_leader),
        )
        try:
            head = self.probes.recorder.max_notification_id() or 0
        except PersistenceError as e:
            log.warning("metrics: cannot read the store: %s", e)
            return
        yield GaugeMetricFamily(
            "tokendance_relay_lag_events",
            "Events stored but not yet published to NATS",
            value=max(head - relay.position, 0),
        )


class StoreCollector:
    """The store's figures, alike from every replica: gauges read at scrape time."""

    def __init__(self, probes: Probes) -> None:
        self.probes = probes

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("tokendance_store_up", "1 when the store's figures were read")
        try:
            figures = list(self._store_figures())
        except PersistenceError as e:  # say it was down rather than fail the scrape
            log.warning("metrics: cannot read the store: %s", e)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from figures

    def _store_figures(self) -> Iterator[Metric]:
        probes = self.probes
        head = probes.recorder.max_notification_id() or 0
        yield GaugeMetricFamily(
            "tokendance_events_stored",
            "Notification id of the newest stored event (an upper bound of events stored)",
            value=head,
        )
        lag = GaugeMetricFamily(
            "tokendance_projection_lag_events",
            "Events a read model has yet to apply",
            labels=["view"],
        )
        for name, (_, behind) in probes.view_lags().items():
            lag.add_metric([name], behind)
        yield lag
        yield GaugeMetricFamily(
            "tokendance_memory_keeper_lag_events",
            "Events the memory keeper has yet to read for what sessions taught",
            value=max(head - probes.kept(), 0),
        )
        tokens = GaugeMetricFamily(
            "tokendance_model_tokens", "Model tokens over all sessions", labels=["kind"]
        )
        with probes.views.sessions.datastore.get_connection() as conn:
            row = conn.execute(TOKENS_SQL).fetchone() or {}
        for kind in TOKEN_KINDS:
            tokens.add_metric([kind], int(row.get(kind, 0)))
        yield tokens
        yield from _by_model(probes)


def _by_model(probes: Probes) -> Iterator[Metric]:
    """Tokens by kind and cost, per model, from the usage read model's daily rollup."""
    tokens = GaugeMetricFamily(
        "tokendance_model_tokens_by_model", "Model tokens by model", labels=["kind", "model"]
    )
    cost = GaugeMetricFamily(
        "tokendance_model_cost_usd", "What model calls cost, by model", labels=["model"]
    )
    with probes.views.usage.datastore.get_connection() as conn:
        rows = conn.execute(USAGE_BY_MODEL_SQL).fetchall()
    for row in rows:
        for kind in TOKEN_KINDS:
            tokens.add_metric([kind, row["model"]], int(row[kind]))
        cost.add_metric([row["model"]], float(row["cost_usd"]))
    yield tokens
    yield cost


class MetricsMiddleware(ASGIMiddleware):
    """Counts and times every routed request by method, route template and status.

    Outermost, so it also sees the 401s and 429s that the inner middleware raise.
    """

    scopes = (ScopeType.HTTP,)

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        started = time.perf_counter()
        answered = False

        async def timed(message: Message) -> None:
            nonlocal answered
            if message["type"] == "http.response.start":
                answered = True
                self._observe(scope, message["status"], time.perf_counter() - started)
            await send(message)

        try:
            await next_app(scope, receive, timed)
        except Exception as e:  # raised by an inner middleware: answered further out
            if not answered:
                self._observe(scope, _status_of(e), time.perf_counter() - started)
            raise

    def _observe(self, scope: Scope, status: int, seconds: float) -> None:
        route = scope.get("path_template") or scope["path"]
        self.metrics.observe(str(scope.get("method", "")), route, status, seconds)


def _status_of(error: Exception) -> int:
    if isinstance(error, HTTPException):
        return error.status_code
    if isinstance(error, DomainError):
        return status_of(error)
    return 500
