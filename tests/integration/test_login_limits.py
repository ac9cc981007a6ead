"""Login abuse on real Postgres: failed logins counted per account and per client address
across replicas (`PostgresLoginFailures`, its clock moved by the test: never a 15-minute
sleep), and through the app on a real server, where each client has its own address
(127.0.0.x: loopback answers them all); the answers tell nothing about which emails exist."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack
from datetime import datetime

import httpx
import pytest
from eventsourcing.postgres import PostgresDatastore, PostgresFactory

from adapters.http.app import create_app
from adapters.http.middleware.limit_counters import Locked
from adapters.http.middleware.login_limits import LoginLimits
from adapters.postgres.login_failures import PostgresLoginFailures
from adapters.system import System
from tests.integration.test_limit_counters import Clock
from tests.integration.test_limits_across_replicas import serving

pytestmark = [pytest.mark.integration]

WINDOW = 15 * 60
PASSWORD = "correct horse battery"
Address = Callable[[str], httpx.AsyncClient]  # a client of the server from 127.0.0.x


@pytest.fixture
def datastore(system: System) -> PostgresDatastore:
    factory = system.container.sessions.factory
    assert isinstance(factory, PostgresFactory)
    return factory.datastore


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_two_replicas_share_the_failures_and_say_when_a_slot_frees(
    datastore: PostgresDatastore, clock: Clock
) -> None:
    one, two = (
        PostgresLoginFailures(datastore, clock=clock),
        PostgresLoginFailures(datastore, clock=clock),
    )
    taken = []
    for n in range(10):
        attempt = (one if n % 2 else two).reserve(["account:ada", f"address:10.0.0.{n}"], 10)
        assert isinstance(attempt, str)
        taken.append(attempt)
        clock.now += 10
    assert one.reserve(["account:ada", "address:192.0.2.1"], 10) == Locked(WINDOW - 100.0)
    assert isinstance(two.reserve(["account:grace", "address:192.0.2.1"], 10), str)
    two.release(taken[-1], ["account:ada", "address:10.0.0.9"])  # that one logged in
    assert isinstance(one.reserve(["account:ada", "address:192.0.2.1"], 10), str)
    assert two.reserve(["account:ada", "address:192.0.2.2"], 10) == Locked(WINDOW - 100.0)
    clock.now += WINDOW - 100.0  # the oldest leaves the window
    assert isinstance(two.reserve(["account:ada", "address:192.0.2.2"], 10), str)


def test_attempts_racing_on_many_replicas_never_pass_the_limit(
    datastore: PostgresDatastore, clock: Clock
) -> None:
    replicas = [PostgresLoginFailures(datastore, clock=clock) for _ in range(6)]
    replicas[0].create_tables()
    barrier = threading.Barrier(30)

    def guess(n: int) -> bool:
        barrier.wait()
        taken = replicas[n % 6].reserve(["account:ada", f"address:10.0.{n}.1"], 10)
        return isinstance(taken, str)

    with ThreadPoolExecutor(30) as pool:
        admitted = list(pool.map(guess, range(30)))
    assert admitted.count(True) == 10


# -- through the app ------------------------------------------------------------------


@pytest.fixture
async def address(system: System, clock: Clock) -> AsyncIterator[Address]:
    """The app on a real server, its failed logins in Postgres on the test's clock."""
    factory = system.container.sessions.factory
    assert isinstance(factory, PostgresFactory)
    failures = PostgresLoginFailures(factory.datastore, clock=clock)
    limits = LoginLimits(attempts=10, failures=failures, bridge=system.container.bridge)
    app = create_app(system, login_limits=limits)
    async with serving(app) as http, AsyncExitStack() as clients:

        def client(host: str) -> httpx.AsyncClient:
            transport = httpx.AsyncHTTPTransport(local_address=host)
            made = httpx.AsyncClient(base_url=http.base_url, transport=transport, timeout=30)
            clients.push_async_callback(made.aclose)
            return made

        yield client


async def login(http: httpx.AsyncClient, email: str, password: str) -> httpx.Response:
    return await http.post("/api/v1/auth/login", json={"email": email, "password": password})


async def register(http: httpx.AsyncClient, email: str, password: str) -> httpx.Response:
    body = {"email": email, "password": password, "name": "Ada"}
    return await http.post("/api/v1/auth/register", json=body)


def assert_locked(response: httpx.Response) -> int:
    assert response.status_code == 429, response.text
    body = response.json()
    assert body.keys() == {"detail", "error_code", "timestamp"}
    assert body["error_code"] == "RATE_LIMITED"
    return int(response.headers["retry-after"])


async def test_the_eleventh_wrong_password_locks_the_account_from_any_address(
    address: Address, clock: Clock
) -> None:
    assert (await register(address("127.0.0.2"), "ada@example.com", PASSWORD)).status_code == 201
    for n in range(10):  # each from an address of its own: only the account fills up
        wrong = await login(address(f"127.0.1.{n + 1}"), "ada@example.com", "wrong password")
        assert wrong.status_code == 401, wrong.text
        clock.now += 10
    right = await login(address("127.0.2.1"), "ada@example.com", PASSWORD)
    assert assert_locked(right) == WINDOW - 100  # even the right password, not checked
    assert assert_locked(await login(address("127.0.0.2"), "ADA@example.com", PASSWORD))
    assert (await register(address("127.0.2.1"), "grace@example.com", PASSWORD)).status_code == 201
    assert (await login(address("127.0.2.1"), "grace@example.com", PASSWORD)).status_code == 200
    clock.now += WINDOW - 100  # the first failure is 15 minutes old: a slot frees
    assert (await login(address("127.0.2.1"), "ada@example.com", PASSWORD)).status_code == 200


async def test_an_address_with_ten_failures_is_locked_for_every_account(
    address: Address,
) -> None:
    guesser, elsewhere = address("127.0.3.1"), address("127.0.3.2")
    assert (await register(elsewhere, "ada@example.com", PASSWORD)).status_code == 201
    for n in range(10):
        wrong = await login(guesser, f"guess{n}@example.com", "wrong password")
        assert wrong.status_code == 401, wrong.text
    assert assert_locked(await login(guesser, "ada@example.com", PASSWORD)) == WINDOW
    assert (await login(elsewhere, "ada@example.com", PASSWORD)).status_code == 200


async def test_an_unknown_email_and_a_wrong_password_answer_alike_but_for_the_time(
    address: Address,
) -> None:
    http = address("127.0.4.1")
    assert (await register(http, "ada@example.com", PASSWORD)).status_code == 201
    wrong = await login(http, "ada@example.com", "wrong password")
    unknown = await login(http, "nobody@example.com", "wrong password")
    assert wrong.status_code == unknown.status_code == 401
    assert set(wrong.headers) == set(unknown.headers)
    a, b = wrong.json(), unknown.json()
    assert a.keys() == b.keys() == {"detail", "error_code", "timestamp"}
    for body in (a, b):  # the one thing that differs
        datetime.fromisoformat(body.pop("timestamp"))
    assert a == b == {"detail": "invalid email or password", "error_code": "INVALID_CREDENTIALS"}


async def test_registering_a_taken_email_answers_as_for_a_new_one_and_changes_nothing(
    address: Address, system: System
) -> None:
    http = address("127.0.5.1")
    first = await register(http, "ada@example.com", PASSWORD)
    assert first.status_code == 201, first.text
    written = system.container.accounts.recorder.max_notification_id()
    again = await register(http, "ADA@Example.com", "another password entirely")
    assert again.status_code == 201, again.text
    assert again.json().keys() == first.json().keys()
    assert again.json()["user_id"] == first.json()["user_id"]  # derived from the email
    assert again.json()["workspace_id"] != first.json()["workspace_id"]
    assert system.container.accounts.recorder.max_notification_id() == written
    assert (await login(http, "ada@example.com", "another password entirely")).status_code == 401
    assert (await login(http, "ada@example.com", PASSWORD)).status_code == 200
