"""Rate limits hold for a user across API replicas: two apps built by `create_app`, each
over its own system on one Postgres, served by uvicorn, share the requests and uploads
per minute and the open streams of each user (DESIGN.md guarantee 15)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import replace

import httpx
import pytest
import uvicorn
from eventsourcing.postgres import PostgresFactory
from litestar import Litestar

from adapters.bootstrap import bootstrap
from adapters.config.settings import Settings
from adapters.http.app import create_app, end_streams
from adapters.http.middleware.limits import RateLimits
from adapters.llm.unconfigured import UnconfiguredLLM
from adapters.postgres.limit_counters import PostgresCounters
from adapters.system import System
from tests.e2e.client import free_port
from tests.waiting import eventually_async

pytestmark = [pytest.mark.integration, pytest.mark.slow]

Limits = Callable[[System], RateLimits | None]  # a replica's limits (None: the settings')
Replicas = Callable[..., Awaitable[tuple[httpx.AsyncClient, httpx.AsyncClient]]]


@contextlib.asynccontextmanager
async def serving(app: Litestar) -> AsyncIterator[httpx.AsyncClient]:
    """`app` on a real uvicorn server in this loop (SSE streams as they stream)."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_level="warning"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        assert not task.done(), "the server did not start"
        await asyncio.sleep(0.02)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            yield http
    finally:
        end_streams(app)
        server.should_exit = True
        await task


@pytest.fixture
def systems(settings: Settings, database_url: str, nats_url: str) -> Iterator[list[System]]:
    """Two systems (replicas) on the test's database; a test makes them with its limits."""
    made: list[System] = []
    yield made
    for system in made:
        system.close()


@pytest.fixture
async def replicas(
    systems: list[System], settings: Settings, database_url: str, nats_url: str
) -> AsyncIterator[Replicas]:
    """`await replicas(limits, requests=, streams=, uploads=)`: clients of two API
    replicas on one Postgres (their limits: `limits`, else these settings)."""
    async with contextlib.AsyncExitStack() as stack:

        async def start(
            limits: Limits = lambda _: None, *, requests: int = 100, streams: int = 10,
            uploads: int = 10,
        ) -> tuple[httpx.AsyncClient, httpx.AsyncClient]:  # fmt: skip
            s = replace(
                settings,
                rate_limit_per_minute=requests,
                max_streams_per_user=streams,
                uploads_per_minute=uploads,
            )
            clients = []
            for _ in range(2):
                system = bootstrap(
                    s, database_url=database_url, nats_url=nats_url, llm=UnconfiguredLLM()
                )
                systems.append(system)
                app = create_app(system, limits=limits(system))
                clients.append(await stack.enter_async_context(serving(app)))
            return clients[0], clients[1]

        yield start


async def sign_up(http: httpx.AsyncClient, email: str) -> tuple[dict[str, str], str]:
    """Auth headers of a new user, and their workspace."""
    password = "correct horse battery"
    made = await http.post(
        "/api/v1/auth/register", json={"email": email, "password": password, "name": "n"}
    )
    assert made.status_code == 201, made.text
    login = await http.post("/api/v1/auth/login", json={"email": email, "password": password})
    assert login.status_code == 200, login.text
    return {"Authorization": f"Bearer {login.json()['access_token']}"}, made.json()["workspace_id"]


def assert_rate_limited(response: httpx.Response) -> None:
    assert response.status_code == 429, response.text
    assert response.json()["error_code"] == "RATE_LIMITED"
    assert 1 <= int(response.headers["retry-after"]) <= 60


def short_lease(lease: float) -> Limits:
    """Two streams per user, counted in Postgres with a lease of `lease` seconds."""

    def limits(system: System) -> RateLimits:
        factory = system.container.sessions.factory
        assert isinstance(factory, PostgresFactory)
        counters = PostgresCounters(factory.datastore, lease=lease)
        return RateLimits(streams_per_user=2, counters=counters, bridge=system.container.bridge)

    return limits


async def test_twenty_requests_across_two_replicas_admit_exactly_ten(replicas: Replicas) -> None:
    first, second = await replicas(requests=10)
    alice, _ = await sign_up(first, "alice@example.com")
    answers = [
        await (first if n % 2 else second).get("/api/v1/workspaces", headers=alice)
        for n in range(20)
    ]
    assert sum(a.status_code == 200 for a in answers) == 10
    for refused in (a for a in answers if a.status_code != 200):
        assert_rate_limited(refused)
    bob, _ = await sign_up(second, "bob@example.com")
    assert (await first.get("/api/v1/workspaces", headers=bob)).status_code == 200


async def test_uploads_across_two_replicas_share_one_limit(replicas: Replicas) -> None:
    first, second = await replicas(uploads=3)
    alice, workspace = await sign_up(first, "alice@example.com")
    answers = [
        await (first if n % 2 else second).post(
            f"/api/v1/workspaces/{workspace}/files",
            files={"file": (f"f{n}.txt", b"%d" % n, "text/plain")},
            headers=alice,
        )
        for n in range(6)
    ]
    assert [a.status_code for a in answers].count(201) == 3, [a.text for a in answers]
    for refused in (a for a in answers if a.status_code != 201):
        assert_rate_limited(refused)
    assert (await second.get("/api/v1/workspaces", headers=alice)).status_code == 200


async def open_stream(http: httpx.AsyncClient, url: str, headers: dict[str, str]) -> httpx.Response:
    """A streaming GET, left open (closed by the test or when the client closes)."""
    return await http.send(http.build_request("GET", url, headers=headers), stream=True)


async def assert_stream_refused(http: httpx.AsyncClient, url: str, headers: dict[str, str]) -> None:
    response = await open_stream(http, url, headers)
    try:
        assert response.status_code == 429, "a stream over the limit was admitted"
        await response.aread()
        assert_rate_limited(response)
    finally:
        await response.aclose()


async def stream_url(http: httpx.AsyncClient, headers: dict[str, str], workspace: str) -> str:
    made = await http.post("/api/v1/sessions", json={"workspace_id": workspace}, headers=headers)
    assert made.status_code == 201, made.text
    return f"/api/v1/sessions/{made.json()['id']}/stream"


async def until_admitted(http: httpx.AsyncClient, url: str, headers: dict[str, str]) -> None:
    """Wait (without asserting how long) until a stream of the user is admitted again."""

    async def admitted() -> httpx.Response | None:
        response = await open_stream(http, url, headers)
        if response.status_code != 429:
            return response
        await response.aclose()
        return None

    response = await eventually_async(
        admitted, timeout=60, what="the stream slot to come back", interval=0.2
    )
    assert response.status_code == 200
    await response.aclose()


async def test_a_stream_on_each_replica_fills_a_limit_of_two_until_one_ends(
    replicas: Replicas,
) -> None:
    first, second = await replicas(streams=2)
    alice, workspace = await sign_up(first, "alice@example.com")
    url = await stream_url(first, alice, workspace)
    one, two = await open_stream(first, url, alice), await open_stream(second, url, alice)
    assert one.status_code == two.status_code == 200
    for http in (first, second):
        await assert_stream_refused(http, url, alice)
    bob, bobs_workspace = await sign_up(second, "bob@example.com")
    theirs = await open_stream(first, await stream_url(second, bob, bobs_workspace), bob)
    assert theirs.status_code == 200  # another user's streams are his own
    await theirs.aclose()

    await one.aclose()  # the stream on the first replica ends: its slot is free everywhere
    await until_admitted(second, url, alice)
    await two.aclose()


async def test_an_open_stream_keeps_its_slot_past_its_lease(replicas: Replicas) -> None:
    lease = 1.5
    first, second = await replicas(short_lease(lease))
    alice, workspace = await sign_up(first, "alice@example.com")
    url = await stream_url(first, alice, workspace)
    held = [await open_stream(first, url, alice) for _ in range(2)]
    assert [r.status_code for r in held] == [200, 200]
    for _ in range(4):  # several leases long: the first replica refreshes its leases
        await asyncio.sleep(lease)
        await assert_stream_refused(second, url, alice)
    for response in held:
        await response.aclose()
    await until_admitted(second, url, alice)
