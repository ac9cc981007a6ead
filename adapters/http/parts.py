"""What the HTTP API is made of besides its routes, built by the composition root
(`adapters.bootstrap.http.build_http`), and what it starts and stops with the app.

`create_app` registers the routes and the middleware on these and runs `serving` as
the app's lifespan; it builds nothing itself.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass

from litestar.handlers import ASGIRouteHandler

from adapters.bootstrap.roles import recover_runs
from adapters.container import Container
from adapters.http.deps import Api
from adapters.http.middleware.idempotency_keys import IdempotencyStore
from adapters.http.middleware.limits import RateLimits
from adapters.http.middleware.login_limits import LoginLimits
from adapters.http.middleware.metrics import Metrics
from adapters.http.reads.tenant_reads import TenantReads
from adapters.nats.signing_peers import keep_answering
from adapters.postgres.api_key_uses import FLUSH_EVERY
from adapters.postgres.schema_lock import schema_lock
from adapters.postgres.store_tail import StoreTail
from adapters.services import Services
from adapters.system import Engine

log = logging.getLogger(__name__)


@dataclass
class HttpParts:
    """The one dependency the handlers get (`api`), the middleware's own parts, and
    what runs beside the requests (the read-your-writes waiter, the store's tail, the
    MCP endpoint's task group)."""

    api: Api
    limits: RateLimits  # requests, streams and uploads per user
    idempotency: IdempotencyStore  # Idempotency-Key's records
    reads: TenantReads  # the API role's pool, under the handlers' read models
    tail: StoreTail  # streams hear of commits that NATS does not bring them
    mcp_route: ASGIRouteHandler  # `/mcp`, on `api`
    mcp_sessions: Callable[[], AbstractAsyncContextManager[None]]
    container: Container
    services: Services
    engine: Engine

    def limited(self, limits: RateLimits | None, login_limits: LoginLimits | None) -> HttpParts:
        """These parts counting with `limits` and `login_limits` where given (tests')."""
        if limits is None and login_limits is None:
            return self
        limits = limits or self.limits
        api = dataclasses.replace(
            self.api,
            login_limits=login_limits or self.api.login_limits,
            metrics=Metrics(self.api.probes, limits),  # which counts the limits' refusals
        )
        return dataclasses.replace(self, api=api, limits=limits)

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """Create the API's tables and start what runs beside the requests; on the way
        out, end the open streams and stop it all (runs stay active in the log)."""
        c, api = self.container, self.api
        await c.bridge(self._create_tables)
        counting = asyncio.create_task(self._flush_key_uses(), name="key uses")
        api.waiter.start()
        self.tail.start()
        await self.services.start(wait_for_nats=False)
        # An API replica beside workers drives no run: the workers' sweep recovers them.
        recovery = (
            asyncio.create_task(recover_runs(c, self.engine), name="recover runs")
            if self.engine.scheduler.dispatch is None
            else None
        )
        signing = asyncio.create_task(
            keep_answering(self.services.link, c.settings.nats_stream, c.settings.signing_secret())
        )  # peers starting later check that they sign with the same secret
        try:
            async with self.mcp_sessions():
                yield
        finally:
            api.feed.close()  # open streams end; their clients resume from their last id
            signing.cancel()
            counting.cancel()
            await c.bridge(api.key_uses.flush)
            if recovery is not None:
                recovery.cancel()
            await self.engine.scheduler.close()
            await api.waiter.stop()
            await self.tail.stop()
            await self.services.stop()
            self.reads.close()

    def _create_tables(self) -> None:
        with schema_lock(self.container.database_url):  # other replicas may be starting
            self.idempotency.create_table()
            self.api.key_uses.create_table()
        self.reads.prepare(self.container)  # row-level security for the read models

    async def _flush_key_uses(self) -> None:
        """Write the API keys' use counts every few seconds (Postgres away: next time)."""
        while True:
            await asyncio.sleep(FLUSH_EVERY)
            try:
                await self.container.bridge(self.api.key_uses.flush)
            except Exception as e:  # kept in memory for the next flush
                log.warning("could not write API key uses: %s", e)
